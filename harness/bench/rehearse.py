"""`make bench-rehearse`: the upgrade rehearsal (both sides run, candidate tools already cached)
against `make test`'s behavioural part (`pytest -m integration` on the pins), measured in the same
run; last line `ratio=<rehearsal / behavioural part>` (issue 17's target: at most 2).

The tools of both sides are built before anything is timed. The rehearsal runs with --fresh into
build/bench-rehearse/ (its report kept for a look), so neither side is reused from an earlier run;
a rehearsal whose suites did not pass on both sides is no measurement, and the benchmark stops.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from harness.bench.cluster import suite_seconds
from harness.core import REPO_ROOT, versions


OUT = REPO_ROOT / "build" / "bench-rehearse"


def _rehearsal_seconds(kueue: str, kuberay: str, jobs: int) -> float:
    shutil.rmtree(OUT, ignore_errors=True)
    cmd = [sys.executable, "-m", "harness.report.rehearsal", "--kueue", kueue, "--kuberay", kuberay, "--fresh",
           "--jobs", str(jobs), "--out", str(OUT)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"bench-rehearse: the rehearsal failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    report = json.loads((OUT / "report.json").read_text())
    failed = {f"{side}.{step}": rc for side in ("baseline", "candidate") for step, rc in report[side]["exit_codes"].items()
              if rc != 0 and step != "gate"}  # the gate's 1 is findings, which the report compares
    if failed:
        raise SystemExit(f"bench-rehearse: steps of the rehearsal did not pass: {failed}; see {OUT}/*/*.log")
    return wall


def bench_rehearse(runs: int, jobs: int = 2) -> None:
    cand = {c: versions.newest_candidate(c) for c in versions.SELECTABLE}
    if None in cand.values():
        raise SystemExit(f"bench-rehearse: versions.yaml lists no candidate to rehearse: {cand}")
    for choice in ({c: versions.pinned(c) for c in cand}, cand):  # builds are not part of the measurement
        env = {**os.environ, versions.SELECT_ENV: versions.selection_text(choice)}
        subprocess.run([sys.executable, "-m", "harness.toolchain", "--group", "cluster"], cwd=REPO_ROOT, env=env, check=True)
    suites, rehearsals = [], []
    for i in range(runs):  # interleaved, so machine noise hits both alike
        print(f"[bench-rehearse] run {i + 1}/{runs}: behavioural suite on the pins", file=sys.stderr, flush=True)
        suites.append(suite_seconds("local"))
        print(f"[bench-rehearse] run {i + 1}/{runs}: rehearsal of {versions.selection_text(cand)}, both sides, --jobs {jobs}",
              file=sys.stderr, flush=True)
        rehearsals.append(_rehearsal_seconds(cand["kueue"], cand["kuberay"], jobs))
    ms, mr = statistics.median(suites), statistics.median(rehearsals)
    print(f"runs={runs} candidate={versions.selection_text(cand)} jobs={jobs}")
    print(f"behavioural_median_s={ms:.1f}  (pytest -m integration on the pins)")
    print(f"rehearsal_median_s={mr:.1f}  (make rehearse FRESH=1: tools, gate, scenario steps and the behavioural suite on both sides)")
    print(f"ratio={mr / ms:.2f}")
