"""Benchmarks (medians of several runs, against a reference in the same run).

    python -m harness.bench validate [--runs N]
        our full static gate vs the reference pipeline of fluxcd's example validate script:
        `kustomize build DIR | kubeconform -strict` per kustomization directory, same schemas; wall-clock medians,
        and the CPU time of every process each starts (user + system, the Go helpers included).
    python -m harness.bench cluster [--runs N]
        cold start of the embedded control plane to ready (tools cached), and the behavioural suite.

Where the gate's Go helper spends its time: FLUXBUILD_TRACE=FILE appends when each request began and
how long it took; FLUXBUILD_CPUPROFILE=FILE writes a CPU profile (`go tool pprof`).
"""
from __future__ import annotations

import ctypes
import os
import resource
import statistics
import subprocess
import time
from pathlib import Path

from harness import toolchain as tools
from harness.gate import RULE_IDS, is_component, kubeconform_args, kustomization_dirs, schema_dir
from harness.core import REPO_ROOT



def _subreaper() -> bool:
    """Makes this process the reaper of its descendants' orphans (Linux), so that the CPU time of the gate's Go helpers,
    which outlive the gate's own process by a moment, is counted; False where that is not available."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


PR_SET_CHILD_SUBREAPER = 36


def _time(cmd: list[str], **kw) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every process the command started, user and system, helpers included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    while True:  # the orphans it left (a subreaper gets them): their CPU time is counted once they are reaped
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def reference_pipeline(root: Path) -> list[str]:
    """The reference as one shell script, so it pays the same process start-up costs a CI job does."""
    kustomize = tools.ensure("kustomize")["kustomize"].path()
    kubeconform = tools.ensure("kubeconform")["kubeconform"].path()
    flags = " ".join(f"'{a}'" for a in kubeconform_args(schema_dir()))
    lines = ["set -o pipefail", "rc=0"]
    for d in kustomization_dirs(root):
        if not is_component(d):
            lines.append(f"'{kustomize}' build '{d}' --load-restrictor=LoadRestrictionsNone | '{kubeconform}' {flags} - || rc=1")
    lines.append("exit $rc")
    return ["bash", "-c", "\n".join(lines)]


def bench_validate(runs: int) -> None:
    ours_cmd = [str(REPO_ROOT / "scripts" / "validate"), str(REPO_ROOT), "--quiet"]
    ref_cmd = reference_pipeline(REPO_ROOT)
    counted = _subreaper()
    _time(ours_cmd), _time(ref_cmd)  # warm caches (tool builds, schemas, page cache)
    ours, ref = [], []
    for _ in range(runs):  # interleaved, so machine noise hits both alike
        ours.append(_time(ours_cmd))
        ref.append(_time(ref_cmd))
    mo, mr = (statistics.median(w for w, _ in xs) for xs in (ours, ref))
    co, cr = (statistics.median(c for _, c in xs) for xs in (ours, ref))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"runs={runs}  cores={cores}")
    if counted:  # CPU time over cores is the least wall time any schedule of that work can take here
        print(f"ours_cpu_median_s={co:.3f}  reference_cpu_median_s={cr:.3f}  (every process, user + system; "
              f"wall >= cpu / {cores}: {co / cores:.3f} s and {cr / cores:.3f} s)")
    print(f"ours_median_s={mo:.3f}  (full gate: render as Flux, strict schemas incl. sample RayJobs, {len(RULE_IDS)} rules)")
    print(f"reference_median_s={mr:.3f}  (kustomize build | kubeconform -strict per directory)")
    print(f"ratio={mo / mr:.2f}")
