"""report.md of `make rehearse` (harness.report.rehearsal): differences first."""
from __future__ import annotations

import json

ICON = {"passed": "passed", "failed": "**failed**", "error": "**error**", "skipped": "skipped", "absent": "(not run)"}


def _v(choice: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(choice.items()))


def _cell(value) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    text = text.replace("|", "\\|").replace("\n", " ")
    return f"`{text[:160]}`" if text else ""


def _outcome(o: dict) -> str:
    text = ICON.get(o["outcome"], o["outcome"])
    if o["outcome"] in ("failed", "error", "skipped") and o.get("message"):
        text += f": {o['message'][:200]}".replace("|", "\\|")
    return text


def render(report: dict) -> str:
    base, cand, cmp = report["baseline"], report["candidate"], report["comparison"]
    tests = cmp["tests"]
    differing = [t for t in tests if t["differs"]]
    lines = [f"# Upgrade rehearsal: {_v(base['versions'])} → {_v(cand['versions'])}", "",
             f"Suites: {', '.join(report['suites'])}. Static gate: `scripts/validate --kueue --kuberay` on each side. "
             f"{len(differing)} of {len(tests)} test(s) differ; {len(cmp['gate']['only_candidate'])} gate finding(s) only on the "
             f"candidate, {len(cmp['gate']['only_baseline'])} only on the baseline.", "",
             "| step | baseline | candidate |", "|---|---|---|"]
    for label, side in (("baseline", base), ("candidate", cand)):
        if side.get("reused"):
            lines.insert(-2, f"The {label} side is reused from a run of {side['finished']} (same checkout, versions and suites).\n")
    for step in ("tools", "gate", "scenarios", *report["suites"]):
        lines.append(f"| {step} | {base['timings'].get(step, 0):.0f}s (exit {base['exit_codes'].get(step)}) | "
                     f"{cand['timings'].get(step, 0):.0f}s (exit {cand['exit_codes'].get(step)}) |")
    lines += ["", "## Tests: differences first", ""]
    if not tests:
        lines.append("No test ran.")
    else:
        lines += ["| suite | test | baseline | candidate |", "|---|---|---|---|"]
        for t in tests:
            mark = "⚠ " if t["differs"] else ""
            lines.append(f"| {t['suite']} | {mark}`{t['test']}` | {_outcome(t['baseline'])} | {_outcome(t['candidate'])} |")
    lines += ["", "## Kueue's decisions per scenario step: differences first", "",
              "The report's scenarios (harness.report.step_decisions) on each side: per LocalQueue the jobs admitted or "
              "pending and why, who was preempted and why, the GPUs each ClusterQueue holds.", ""]
    steps = cmp.get("scenario_steps") or []
    if not steps:
        lines.append("No scenario ran.")
    else:
        lines += ["| scenario | step | baseline | candidate |", "|---|---|---|---|"]
        for r in steps:
            mark = "⚠ " if r["differs"] else ""
            cells = ["<br>".join(o).replace("|", "\\|") if o is not None else "(not reached)" for o in (r["baseline"], r["candidate"])]
            lines.append(f"| {r['scenario']} | {mark}{r['step']} | {cells[0]} | {cells[1]} |" if r["differs"]
                         else f"| {r['scenario']} | {r['step']} | {cells[0]} | same |")
    lines += ["", "## Static gate", ""]
    for side, items in (("candidate only", cmp["gate"]["only_candidate"]), ("baseline only", cmp["gate"]["only_baseline"])):
        lines.append(f"**{side}:** " + ("none" if not items else ""))
        lines += [f"- `{f['rule']}` {f['file']} {f['resource']}: {f['message']}" for f in items]
        lines.append("")
    lines += ["## CRD schema changes touching fields this repository sets", ""]
    for comp, found in cmp["crds"].items():
        touching = found["touching"]
        lines.append(f"**{comp}**: {len(touching)} change(s) touch fields set here; {len(found['other'])} other change(s) do not (listed in report.json).")
        if touching:
            lines += ["", "| apiVersion | kind | field | change | before | after |", "|---|---|---|---|---|---|"]
            lines += [f"| {c['apiVersion']} | {c['kind']} | `{c['path']}` | {c['change']} | {_cell(c['old'])} | {_cell(c['new'])} |"
                      for c in touching]
        lines.append("")
    lines += ["## Kueue Configuration: what the binaries fill in", "",
              "Read from each Kueue binary's `Configuration loaded` log line (harness.cluster.kueue_effective_config).", ""]
    for name, title in (("defaults", "Defaults (an empty Configuration)"), ("production", "The production HelmRelease's Configuration")):
        changes = cmp["configuration"][name]
        lines.append(f"**{title}**: " + ("unchanged" if not changes else f"{len(changes)} value(s) change"))
        if changes:
            lines += ["", "| field | baseline | candidate |", "|---|---|---|"]
            lines += [f"| `{c['path']}` | {_cell(c['old'])} | {_cell(c['new'])} |" for c in changes]
        lines.append("")
    lines += ["## Release changes crossed and what the repository must do", "",
              "From harness/core/releases.py (each with its release note); `checked by` says what ran it.", "",
              "| component | since | change | repository | checked by |", "|---|---|---|---|---|"]
    for c in cmp["release_changes"]:
        ran = "".join(f"; ran: {r['baseline']} on the baseline, {r['candidate']} on the candidate" for r in c.get("ran") or [])
        lines.append(f"| {c['component']} | {c['since']} | {c['note']} | {c['repository']} | {c['checked_by']}{ran} |".replace("\n", " "))
    lines += ["", f"Rehearsal wall time: {report['seconds']:.0f}s.", ""]
    return "\n".join(lines)
