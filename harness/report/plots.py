"""Timeline plots of a recorded scenario run: GPUs held by each ClusterQueue (team) over time,
the borrowed part hatched, admissions and preemptions marked. Drawn only from the Recording
(watch events of the real run): the quota the Workloads hold (Recording.held), the events."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from harness.report.recorder import Recording  # noqa: E402

GPU = "nvidia.com/gpu"
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]


def gpu_series(rec: Recording, cluster_queues: list[str]) -> tuple[list[float], dict[str, list[tuple[float, float]]]]:
    """A common time grid and, per ClusterQueue, (GPUs held, GPUs borrowed) at each grid time
    (the last sample at or before it; 0 before the first)."""
    times = sorted({0.0, rec.end, *(s.t for s in rec.held)})
    current = {cq: (0.0, 0.0) for cq in cluster_queues}
    series = {cq: [] for cq in cluster_queues}
    samples = sorted(rec.held, key=lambda s: s.t)
    i = 0
    for t in times:
        while i < len(samples) and samples[i].t <= t:
            s = samples[i]
            if s.cluster_queue in current:
                total = sum((v[0] for (f, r), v in s.usage.items() if r == GPU), Decimal(0))
                borrowed = sum((v[1] for (f, r), v in s.usage.items() if r == GPU), Decimal(0))
                current[s.cluster_queue] = (float(total), float(borrowed))
            i += 1
        for cq in cluster_queues:
            series[cq].append(current[cq])
    return times, series


def timeline(rec: Recording, cluster_queues: list[str], title: str, path: Path, nominal: dict[str, float] | None = None,
             ymax: float | None = None, xmax: float | None = None) -> Path:
    times, series = gpu_series(rec, cluster_queues)
    if rec.occupancy:  # the nodes' GPUs below the queues' quota, on the same time axis
        fig, (ax, nodes_ax) = plt.subplots(2, 1, figsize=(8, 5.6), dpi=100, sharex=True, gridspec_kw={"height_ratios": [3, 1.7]})
    else:
        fig, ax = plt.subplots(figsize=(8, 3.6), dpi=100)
    bottom = [0.0] * len(times)
    handles = []
    for k, cq in enumerate(cluster_queues):
        color = COLORS[k % len(COLORS)]
        own = [b + (tot - bor) for b, (tot, bor) in zip(bottom, series[cq])]
        top = [b + tot for b, (tot, _) in zip(bottom, series[cq])]
        ax.fill_between(times, bottom, own, step="post", color=color, alpha=0.85, linewidth=0)
        ax.fill_between(times, own, top, step="post", facecolor="white", edgecolor=color, hatch="///", linewidth=0.8)
        handles += [Patch(color=color, alpha=0.85, label=f"{cq}"), Patch(facecolor="white", edgecolor=color, hatch="///", label=f"{cq} borrowed")]
        bottom = top
    if nominal:  # where each queue's guaranteed share ends, stacked like the areas
        acc = 0.0
        for k, cq in enumerate(cluster_queues):
            acc += nominal.get(cq, 0.0)
            ax.axhline(acc, color="#555555", linestyle="--", linewidth=0.8)
            ax.annotate(f"{'+ ' if k else ''}{cq} nominal {nominal.get(cq, 0.0):g}", (0, acc), xytext=(2, 2),
                        textcoords="offset points", fontsize=7, color="#555555")
    top_y = ymax or max([1.0, *bottom, *(sum((nominal or {}).values()),)]) + 1
    for t, step in rec.steps:
        ax.axvline(t, color="#999999", linestyle=":", linewidth=0.8)
    for n, (t, step) in enumerate(rec.steps, 1):
        ax.annotate(f"step {n}", (t, top_y), xytext=(2, -10), textcoords="offset points", fontsize=7, color="#666666")
    marks = {"admitted": ("^", "#2ca02c", "admitted", 0.84), "preempted": ("X", "#d62728", "preempted", 0.72),
             "evicted": ("X", "#d62728", "preempted", 0.72), "finished": ("s", "#7f7f7f", "finished", 0.60)}
    seen_labels = set()
    for n, e in enumerate(e for e in rec.events if e.kind in marks):
        marker, color, label, level = marks[e.kind]
        y = top_y * level
        ax.plot([e.t], [y], marker=marker, color=color, markersize=7, linestyle="none",
                label=label if label not in seen_labels else None)
        seen_labels.add(label)
        # Events a fraction of a second apart would print their names on top of each other.
        ax.annotate(e.job, (e.t, y), xytext=(4, 3 if n % 2 == 0 else -9), textcoords="offset points", fontsize=7, color=color)
    ax.set_ylim(0, top_y)
    ax.set_xlim(0, xmax or max(times[-1], 1.0))
    ax.set_ylabel("GPUs held by admitted Workloads")
    ax.set_title(title, fontsize=10)
    points, labels = ax.get_legend_handles_labels()
    ax.legend(handles=handles + points, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if rec.occupancy:
        _node_panel(nodes_ax, rec, xmax or max(times[-1], 1.0))
        ax = nodes_ax
    ax.set_xlabel("seconds since the scenario started (real Kueue, recorded from watches)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def node_series(rec: Recording) -> tuple[list[float], dict[str, list[float]]]:
    """A common time grid and, per node, the GPUs its bound pods request at each grid time."""
    times = sorted({0.0, rec.end, *(t for t, _ in rec.occupancy)})
    nodes = sorted({n for _, per_node in rec.occupancy for n in per_node})
    series: dict[str, list[float]] = {n: [] for n in nodes}
    samples, current, k = sorted(rec.occupancy, key=lambda s: s[0]), {}, 0
    for t in times:
        while k < len(samples) and samples[k][0] <= t:
            current = samples[k][1]
            k += 1
        for n in nodes:
            series[n].append(float(current.get(n, 0)))
    return times, series


def _node_panel(ax, rec: Recording, xmax: float) -> None:
    times, series = node_series(rec)
    for k, (node, values) in enumerate(series.items()):
        ax.step(times, values, where="post", color=COLORS[(k + 3) % len(COLORS)], linewidth=1.4, label=node)
    for t, _ in rec.steps:
        ax.axvline(t, color="#999999", linestyle=":", linewidth=0.8)
    ax.set_ylim(0, max([1.0, *(v for vs in series.values() for v in vs)]) + 1)
    ax.set_xlim(0, xmax)
    ax.set_ylabel("GPUs in use\nper node (pods)", fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)

