"""report.md: scenario outcomes that changed first, then per cluster the quota tables before and
after (changed cells in bold with the old value), queues added or removed and headroom, then
every scenario's steps on both refs with its timeline plots."""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from harness.core import format_quantity
from harness.gate import Finding
from harness.report.quotas import LIMIT_TITLES, LIMITS, ClusterDiff, Headroom, same
from harness.report.scenarios import Scenario, ScenarioResult

MARKER = "<!-- aks-ray-kueue-report -->"  # lets the PR workflow find and update its one comment
EMBEDDED = "the embedded control plane"


@dataclass
class ReportData:
    repo: str
    base_ref: str
    base_sha: str
    head_label: str
    head_sha: str
    clusters: list[ClusterDiff]
    scenarios: list[Scenario]
    results: dict[tuple[str, str], ScenarioResult]  # (scenario, "base" | "head")
    images: dict[tuple[str, str], str] = field(default_factory=dict)  # (scenario, side) -> file name in OUT
    gate: dict[str, list[Finding]] = field(default_factory=dict)  # side -> static gate findings
    seconds: float = 0.0
    plane: str = EMBEDDED  # where the scenarios ran

    def layout_switches(self) -> list[tuple[ClusterDiff, ScenarioResult | None, ScenarioResult | None]]:
        """Each scenario cluster whose queue layout differs between the refs, with the scenario run on its own layer on
        base and on head (None where no report scenario runs that layout): the comparison a layout switch is about."""
        out = []
        for c in self.clusters:
            if c.overlays[0] == c.overlays[1] or not any(sc.cluster == c.name for sc in self.scenarios):
                continue
            on = [next((r for (name, ref), r in self.results.items() if ref == side and r.on_cluster
                        and any(sc.name == name and sc.cluster == c.name for sc in self.scenarios)), None) for side in ("base", "head")]
            out.append((c, on[0], on[1]))
        return out

    def changed_scenarios(self) -> list[Scenario]:
        out = []
        for sc in self.scenarios:
            b, h = self.results.get((sc.name, "base")), self.results.get((sc.name, "head"))
            if b is None or h is None or b.verdict() != h.verdict() or b.outcome() != h.outcome():
                out.append(sc)
        return out


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def cell(before, after, status: str = "changed") -> str:
    """A table cell: the new value, bold with the old one where it changed."""
    show = lambda v: "—" if v is None else f"`{v}`"  # noqa: E731
    if status == "added":
        return f"**{show(after)}** (new)"
    if status == "removed":
        return f"~~{show(before)}~~ (removed)"
    if same(before, after):
        return show(after)
    return f"**{show(after)}** (was {show(before)})"


def _q(resource: str, value: Decimal | None) -> str | None:
    return None if value is None else format_quantity(resource, value)


def quota_section(c: ClusterDiff) -> list[str]:
    """One cluster's part of the report: its layout, quota table, queues added or removed, headroom."""
    lines = [f"### Cluster `{c.name}`" + ("" if c.status in ("same", "changed") else f" ({c.status})"), ""]
    (ob, oa), (cb, ca) = c.overlays, c.components
    overlay = ", ".join(f"`{o}`" for o in oa) or "none"
    if ob != oa:
        overlay = f"**{overlay}** (was {', '.join(f'`{o}`' for o in ob) or 'none'})"
    comps = ", ".join(f"`{x}`" for x in ca) or "none"
    if cb != ca:
        comps = f"**{comps}** (was {', '.join(f'`{x}`' for x in cb) or 'none'})"
    lines += [f"Runs {overlay}; quota components and the cluster's own patches (in the order they apply, the last wins): {comps}.", ""]
    lines += ["| ClusterQueue | cohort | flavor | resource | " + " | ".join(LIMIT_TITLES[k] for k in LIMITS) + " |",
              "|---|---|---|---|" + "---|" * len(LIMITS)]
    for r in c.rows:
        cq, flavor, resource = r.key
        name = f"**{cq}**" if r.status in ("added", "removed") else cq
        lines.append(f"| {name} | {r.cohort or '—'} | {flavor} | {resource} | "
                     + " | ".join(cell(r.cells[k].before, r.cells[k].after, r.status) for k in LIMITS) + " |")
    if not c.rows:
        lines.append("| (no ClusterQueues) | | | | | | |")
    lines += ["", "— not set: no borrowing limit within the cohort / all of the nominal quota can be lent.", ""]
    if c.queues_added or c.queues_removed:
        lines.append("ClusterQueues added: " + (", ".join(f"`{q}`" for q in c.queues_added) or "none")
                     + "; removed: " + (", ".join(f"`{q}`" for q in c.queues_removed) or "none") + ".")
    else:
        lines.append("No ClusterQueue added or removed.")
    lines += ["", f"Capacity headroom against the Terraform node pools ({c.headroom_note}):", "",
              "| flavor | resource | pools | pool capacity | nominal total | headroom |", "|---|---|---|---|---|---|"]
    for (flavor, resource), hb, ha in c.headroom:
        h: Headroom = ha or hb
        lines.append(f"| {flavor} | {resource} | {_esc(h.pools) or '—'} | "
                     f"{cell(_q(resource, hb.capacity) if hb else None, _q(resource, ha.capacity) if ha else None)} | "
                     f"{cell(_q(resource, hb.nominal_total) if hb else None, _q(resource, ha.nominal_total) if ha else None)} | "
                     f"{_headroom_cell(resource, hb, ha)} |")
    lines.append("")
    return lines


def _headroom_cell(resource: str, hb: Headroom | None, ha: Headroom | None) -> str:
    b = _q(resource, hb.headroom) if hb and hb.headroom is not None else None
    a = _q(resource, ha.headroom) if ha and ha.headroom is not None else None
    text = cell(b, a)
    if ha and ha.headroom is not None and ha.headroom < 0:
        text += " ⚠ over capacity: admitted work would pend"
    return text


def _verdict(r: ScenarioResult | None) -> str:
    if r is None:
        return "not run"
    mark = {"holds": "✅", "does not hold": "❌", "did not finish": "⏱"}.get(r.verdict(), "➖")
    return f"{mark} {r.verdict()}"


def _scenario_section(data: ReportData, sc: Scenario, images: bool) -> list[str]:
    b, h = data.results.get((sc.name, "base")), data.results.get((sc.name, "head"))
    lines = [f"### {sc.title} (`{sc.layout}`)", "", f"Expected: {sc.expectation}.", ""]
    for side, r in (("base", b), ("head", h)):
        if r and r.ran_on:
            sizes: dict[str, list[str]] = {}
            for job, text in r.asks.items():
                sizes.setdefault(text, []).append(job)
            lines.append(f"- {side}: ran on {_esc(r.ran_on)}" + (
                "; the jobs ask for " + "; ".join(f"{', '.join(jobs)}: {text}" for text, jobs in sizes.items()) if sizes else "") + ".")
    if (b and b.ran_on) or (h and h.ran_on):
        lines.append("")
    lines += [f"| | base `{data.base_ref}` | head ({data.head_label}) |", "|---|---|---|",
              f"| **expectation** | {_verdict(b)} | {_verdict(h)} |"]
    steps = max(len(b.steps) if b else 0, len(h.steps) if h else 0, len(sc.steps))
    for i in range(steps):
        title = sc.steps[i].title if i < len(sc.steps) else f"step {i + 1}"
        ob = b.steps[i].outcome() if b and i < len(b.steps) else []
        oh = h.steps[i].outcome() if h and i < len(h.steps) else []
        mark = " **(changed)**" if ob != oh else ""
        lines.append(f"| {i + 1}. {_esc(title)}{mark} | {'<br>'.join(map(_esc, ob)) or '—'} | "
                     f"{'<br>'.join((f'**{_esc(x)}**' if x not in ob else _esc(x)) for x in oh) or '—'} |")
    lines.append("")
    for side, r in (("base", b), ("head", h)):
        if r and (r.failures or r.error):
            lines.append(f"- {side}: " + "; ".join(map(_esc, [*r.failures, *([r.error] if r.error else [])])))
    if (b and (b.failures or b.error)) or (h and (h.failures or h.error)):
        lines.append("")
    detail = []
    for side, r in (("base", b), ("head", h)):
        for i, s in enumerate(r.steps if r else [], 1):
            for job, (state, msg) in s.jobs.items():
                queue = s.queue_of.get(job, "")
                detail.append(f"| {side} | {i} | {job} | {r.bind.get(queue, queue)} | {state} | {_esc(msg)} |")
    if detail:
        lines += ["<details><summary>Every job after every step (Kueue's own messages)</summary>", "",
                  "| ref | step | RayJob | LocalQueue | state | Kueue message |", "|---|---|---|---|---|---|", *detail, "", "</details>", ""]
    if images:
        ib, ih = data.images.get((sc.name, "base")), data.images.get((sc.name, "head"))
        if ib or ih:
            lines += ["| base | head |", "|---|---|",
                      f"| {f'![{sc.name} on base]({ib})' if ib else '—'} | {f'![{sc.name} on head]({ih})' if ih else '—'} |", ""]
    return lines


def _gate_section(data: ReportData) -> list[str]:
    if not data.gate:
        return []
    before, after = data.gate.get("base", []), data.gate.get("head", [])
    key = lambda f: (f.rule, f.resource, f.message)  # noqa: E731
    new = [f for f in after if key(f) not in {key(x) for x in before}]
    gone = [f for f in before if key(f) not in {key(x) for x in after}]
    lines = ["## Static gate", "", f"`scripts/validate`: base {len(before)} finding(s), head {len(after)} finding(s)."]
    for title, items in (("New on head", new), ("Fixed on head", gone)):
        if items:
            lines += ["", f"{title}:", ""] + [f"- `{f.location()}` {f.resource} **{f.rule}**: {_esc(f.message)}" for f in items]
    lines.append("")
    return lines


def _switch_lines(data: ReportData, switches) -> list[str]:
    """The headline of a layout switch: the cluster's base layout's outcome next to its head layout's."""
    lines = []
    for c, b, h in switches:
        names = [", ".join(f"`{o}`" for o in side) or "no overlay" for side in c.overlays]
        lines.append(f"- **`{c.name}` switches its queue layout {names[0]} → {names[1]}**: who gets GPUs there is what its base layout "
                     "did on base against what its head layout does on head:")
        for side, r, layout in (("base", b, names[0]), ("head", h, names[1])):
            sc = next((x for x in data.scenarios if r and x.name == r.scenario), None)
            if r is None or sc is None:
                lines.append(f"  - {side}, {layout}: no scenario of this report runs it.")
                continue
            steps = "; ".join(f"{i}. {_esc(s.title)}: {_esc(', '.join(s.outcome()))}" for i, s in enumerate(r.steps, 1))
            lines.append(f"  - {side}, {layout} ({sc.title}, {_verdict(r)}): {steps or '—'}")
    return lines + ([""] if lines else [])


def render(data: ReportData, images: bool = True, note: str = "") -> str:
    changed = data.changed_scenarios()
    quota_changes = [c for c in data.clusters if c.changed]
    lines = [MARKER, "# What this change does to who gets GPUs", "",
             f"Head: {data.head_label} (`{data.head_sha[:12]}`) of `{data.repo}`; base: `{data.base_ref}` (`{data.base_sha[:12]}`). "
             f"Scenarios ran for real on {data.plane} (Kueue, KubeRay operator) against each ref's queue layer, with each ref's samples"
             f"{f' in {data.seconds:.0f} s' if data.seconds else ''}.", ""]
    if note:
        lines += [note, ""]
    lines += ["## Scenario outcomes that changed", ""]
    switches = data.layout_switches()
    lines += _switch_lines(data, switches)
    if changed:
        for sc in changed:
            b, h = data.results.get((sc.name, "base")), data.results.get((sc.name, "head"))
            steps = [i + 1 for i in range(max(len(b.steps) if b else 0, len(h.steps) if h else 0))
                     if (b.steps[i].outcome() if b and i < len(b.steps) else None) != (h.steps[i].outcome() if h and i < len(h.steps) else None)]
            lines.append(f"- **{sc.title}**: expectation {_verdict(b)} on base → {_verdict(h)} on head"
                         + (f"; outcome differs at step {', '.join(map(str, steps))}" if steps else "") + ".")
            for side, r in (("head", h),):
                for f in (r.failures if r else []):
                    lines.append(f"  - {side}: {_esc(f)}")
    elif switches:
        lines.append("Each scenario compared with itself on the same layout (below) shows no change.")
    else:
        lines.append("No scenario outcome changed.")
    lines += ["", "## Quotas per cluster", ""]
    lines.append(f"{len(quota_changes)} of {len(data.clusters)} cluster(s) change: "
                 + (", ".join(f"`{c.name}`" for c in quota_changes) or "none") + ".")
    lines.append("")
    for c in sorted(data.clusters, key=lambda c: (not c.changed, c.name)):
        lines += quota_section(c)
    lines += _gate_section(data)
    lines += ["## Scenarios", ""]
    for sc in sorted(data.scenarios, key=lambda s: s not in changed):
        lines += _scenario_section(data, sc, images)
    return "\n".join(lines).rstrip() + "\n"
