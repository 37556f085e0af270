"""Kueue's decision at every step of every scenario, on the versions $RAY_KUEUE_VERSIONS selects:
the rehearsal runs it once per side (harness.report.rehearsal) and compares the two step by step.

The scenarios, their runs and each step's outcome (per LocalQueue the jobs admitted or pending and
why, who was preempted and why, the GPUs each ClusterQueue holds and borrows) are the report's own
(harness.report.scenarios.ScenarioRunner), on an embedded cluster with the pool nodes of the
cluster each scenario names, against this checkout's layouts.

    python -m harness.report.step_decisions --out FILE.json

Exit 0 when every scenario ran (whether or not its expectations held: that is the result),
2 with a one-line reason when the cluster could not run them.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from harness.core import REPO_ROOT, HarnessError, atomic_write, timeouts


def run(root: Path, label: str) -> list[dict]:
    """Every report scenario on a fresh embedded cluster; per scenario its verdict and each step's outcome."""
    from harness.report.scenarios import SCENARIOS, run_all

    with tempfile.TemporaryDirectory(prefix="step-decisions-") as tmp:
        results = run_all([(scenario, root, label, None) for scenario in SCENARIOS], Path(tmp) / "cluster", timeout=timeouts.SETTLE)
    return [{"scenario": r.scenario, "layout": r.layout, "verdict": r.verdict(), "failures": r.failures,
             "error": r.error, "steps": [{"title": s.title, "outcome": s.outcome()} for s in r.steps]} for r in results.values()]


def compare(base: list[dict], cand: list[dict]) -> list[dict]:
    """Per scenario step, the outcome on each side; the steps whose outcome differs first. A step
    one side never reached (its run stopped earlier) is compared with None."""
    rows = []
    by_name = {"baseline": {s["scenario"]: s for s in base}, "candidate": {s["scenario"]: s for s in cand}}
    for name in sorted(set(by_name["baseline"]) | set(by_name["candidate"])):
        sides = {label: by_name[label].get(name) or {"steps": [], "verdict": "not run"} for label in by_name}
        titles = list(dict.fromkeys(s["title"] for label in ("baseline", "candidate") for s in sides[label]["steps"]))
        for i, title in enumerate(titles):
            got = {label: next((s["outcome"] for s in sides[label]["steps"] if s["title"] == title), None) for label in sides}
            rows.append({"scenario": name, "index": i, "step": title, **got, "differs": got["baseline"] != got["candidate"],
                         "verdict": {label: sides[label]["verdict"] for label in sides}})
    rows.sort(key=lambda r: (not r["differs"], r["scenario"], r["index"]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", default="working tree")
    args = parser.parse_args(argv)
    try:
        results = run(REPO_ROOT, args.label)
        atomic_write(args.out, json.dumps(results, indent=1, default=str) + "\n")
    except (HarnessError, RuntimeError, OSError) as err:  # ClusterError, ToolBuildError, WaitTimeout, ...
        print(f"step_decisions: could not run: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
