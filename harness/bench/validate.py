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
import secrets
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness import toolchain as tools
from harness.gate import RULE_IDS, is_component, kubeconform_args, kustomization_dirs, schema_dir
from harness.core import REPO_ROOT, cache_root, copy_config



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


# A pull request's change, one per run in turn, each a value never validated before (so no verdict of it is kept):
# (file, text, its replacement given a number unique to the run). The first changes the queues' memory quota (every
# ClusterQueue built from the component and what is judged against them), the second a sample RayJob.
EDITS = (
    ("components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml", "nominalQuota, value: 200Gi}",
     lambda n: f"nominalQuota, value: {204800 - n % 4096}Mi}}"),
    ("workloads/batch-inference.yaml", "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n",
     lambda n: f"    kueue.x-k8s.io/queue-name: ${{QUEUE_NAME}}\n    bench-edit: \"{n}\"\n"),
)


class Edits:
    """A throwaway copy of the repository's configuration that `next()` changes as a pull request would."""

    def __init__(self, root: Path):
        self.root, self.originals, self.count = root, {}, secrets.randbelow(10**6)
        for rel, old, _ in EDITS:
            text = (root / rel).read_text(encoding="utf-8")
            if old not in text:
                raise SystemExit(f"bench: {rel} no longer holds {old!r}: update EDITS in {__name__}")
            self.originals[rel] = text

    def next(self, which: int) -> None:
        """Changes EDITS[which % len(EDITS)] to a value not written before."""
        rel, old, new = EDITS[which % len(EDITS)]
        self.count += 1
        # The other file keeps its last change: the tree differs from the one validated before in this one value.
        (self.root / rel).write_text(self.originals[rel].replace(old, new(self.count)), encoding="utf-8")


def bench_validate(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as scratch:
        root = copy_config(Path(scratch) / "repo")
        edits = Edits(root)
        ours_cmd = [str(REPO_ROOT / "scripts" / "validate"), str(root), "--quiet"]
        ref_cmd = reference_pipeline(root)
        counted = _subreaper()
        _time(ours_cmd), _time(ref_cmd)  # warm caches (tool builds, schemas, page cache, the verdicts of the tree as it is)
        memo = cache_root() / "memo"
        cold, edited, unchanged, ref = [], [], [], []
        for i in range(runs):  # interleaved, so machine noise hits each alike
            shutil.rmtree(memo, ignore_errors=True)
            edits.next(i + 1)
            cold.append(_time(ours_cmd))  # no verdict kept (a fresh cache)
            ref.append(_time(ref_cmd))
            edits.next(i)  # each kind of change in turn
            edited.append(_time(ours_cmd))  # one value changed since the run before: the verdicts of the rest are kept
            unchanged.append(_time(ours_cmd))  # the same tree again: every verdict kept
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    wall = {name: statistics.median(w for w, _ in xs) for name, xs in (("edited", edited), ("unchanged", unchanged), ("cold", cold), ("ref", ref))}
    cpu = {name: statistics.median(c for _, c in xs) for name, xs in (("edited", edited), ("unchanged", unchanged), ("cold", cold), ("ref", ref))}
    print(f"runs={runs}  cores={cores}")
    if counted:  # CPU time over cores is the least wall time any schedule of that work can take here
        print("cpu_median_s: " + "  ".join(f"{name}={cpu[name]:.3f}" for name in ("edited", "unchanged", "cold", "ref"))
              + f"  (every process, user + system; wall >= cpu / {cores})")
    print(f"ours_unchanged_median_s={wall['unchanged']:.3f}  (the same tree again: every verdict kept)")
    print(f"ours_cold_median_s={wall['cold']:.3f}  (no verdict kept: a fresh cache; ratio {wall['cold'] / wall['ref']:.2f})")
    print(f"ours_median_s={wall['edited']:.3f}  (full gate after one change ({len(EDITS)} kinds in turn), the verdicts of the rest "
          f"kept: render as Flux, strict schemas incl. sample RayJobs, {len(RULE_IDS)} rules)")
    print(f"reference_median_s={wall['ref']:.3f}  (kustomize build | kubeconform -strict per directory, same tree)")
    print(f"ratio={wall['edited'] / wall['ref']:.2f}")
