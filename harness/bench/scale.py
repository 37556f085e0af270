"""`make bench-scale`: the scale scenario (harness.kueue.scale) for N = 100, 500, 1000 RayJobs, each
run to its end on the production cluster's pool nodes (3 N pods).

Each run is its own process on its own fresh embedded cluster, so that peak memory (the
harness's ru_maxrss and each component's VmHWM) belongs to that N alone. Prints one row per N
(medians over --runs) and, as the last line, growth=<t(1000)/t(100)>: 10 would be linear in N.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import toolchain as tools
from harness.core import REPO_ROOT

SIZES = (100, 500, 1000)
COMPONENTS = ("harness", "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "kueue", "kuberay-operator")


def one_run(n: int, workdir: Path) -> dict:
    out = workdir / f"scale-{n}.json"
    proc = subprocess.run([sys.executable, "-m", "harness.kueue.scale", "--n", str(n), "--json", str(out)],
                          cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0 or not out.exists():
        tail = "\n".join(proc.stderr.splitlines()[-15:])
        raise SystemExit(f"bench-scale: the run with N={n} failed (exit {proc.returncode}):\n{tail}")
    return json.loads(out.read_text())


def bench_scale(runs: int = 3, sizes: tuple[int, ...] = SIZES) -> int:
    """Prints the table; exit status 1 when any run lost an event or broke an invariant."""
    tools.ensure(*tools.CLUSTER_TOOLS)  # builds are not part of the measurement

    rows: dict[int, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for n in sizes:
            results = []
            for i in range(runs):
                print(f"[bench-scale] N={n} run {i + 1}/{runs}", file=sys.stderr, flush=True)
                results.append(one_run(n, Path(tmp)))
            med = lambda key: statistics.median(r[key] for r in results)  # noqa: E731
            rows[n] = {
                "wall": med("wall_s"), "submit": med("submit_s"), "decide": med("decide_s"), "drain": med("drain_s"),
                "pods": med("pods"), "cpu": med("harness_cpu_s"),
                "events": med("events"), "lost": sum(len(r["lost_events"]) for r in results),
                "violations": sum(len(r["violations"]) for r in results),
                **{c: statistics.median(r["peak_rss_mb"].get(c, 0) for r in results) for c in COMPONENTS},
            }

    header = ["N", "wall s", "submit s", "decide s", "run to end s", "pods", "harness CPU s", "events", "lost", "violations"] \
        + [f"{c} MB" for c in COMPONENTS]
    print(f"scale scenario, medians of {runs} run(s) per N; peak RSS per process")
    print("| " + " | ".join(header) + " |")  # a Markdown table, as the README quotes it
    print("|" + "---|" * len(header))
    for n, r in rows.items():
        cells = [n, f"{r['wall']:.1f}", f"{r['submit']:.1f}", f"{r['decide']:.1f}", f"{r['drain']:.1f}", f"{r['pods']:.0f}",
                 f"{r['cpu']:.1f}", f"{r['events']:.0f}", r["lost"],
                 r["violations"]] + [f"{r[c]:.0f}" for c in COMPONENTS]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    if 100 in rows and 1000 in rows:
        print(f"growth={rows[1000]['wall'] / rows[100]['wall']:.2f}")
    else:
        print("growth=n/a (needs N=100 and N=1000)")
    return 0 if all(r["lost"] == 0 and r["violations"] == 0 for r in rows.values()) else 1

