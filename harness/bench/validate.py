"""Benchmarks (medians of several runs, against a reference in the same run).

    python -m harness.bench validate [--runs N]
        our full static gate vs the reference pipeline of fluxcd's example validate script:
        `kustomize build DIR | kubeconform -strict` per kustomization directory, same schemas.
    python -m harness.bench cluster [--runs N]
        cold start of the embedded control plane to ready (tools cached), and the behavioural suite.

Where the gate's Go helper spends its time: FLUXBUILD_TRACE=FILE appends when each request began and
how long it took; FLUXBUILD_CPUPROFILE=FILE writes a CPU profile (`go tool pprof`).
"""
from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path

from harness import toolchain as tools
from harness.gate import RULE_IDS, is_component, kubeconform_args, kustomization_dirs, schema_dir
from harness.core import REPO_ROOT



def _time(cmd: list[str], **kw) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


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
    _time(ours_cmd), _time(ref_cmd)  # warm caches (tool builds, schemas, page cache)
    ours, ref = [], []
    for _ in range(runs):  # interleaved, so machine noise hits both alike
        ours.append(_time(ours_cmd))
        ref.append(_time(ref_cmd))
    mo, mr = statistics.median(ours), statistics.median(ref)
    print(f"runs={runs}")
    print(f"ours_median_s={mo:.3f}  (full gate: render as Flux, strict schemas incl. sample RayJobs, {len(RULE_IDS)} rules)")
    print(f"reference_median_s={mr:.3f}  (kustomize build | kubeconform -strict per directory)")
    print(f"ratio={mo / mr:.2f}")

