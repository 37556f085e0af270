"""`make bench-cluster`: cold start of the embedded control plane to ready (tools cached),
median of several runs, and the wall time of the whole behavioural suite."""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import toolchain as tools
from harness.cluster import docker_problem
from harness.cluster import LocalCluster
from harness.core import REPO_ROOT


def _start_once() -> float:
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        cluster = LocalCluster(Path(tmp))
        t = time.perf_counter()
        try:
            cluster.start()
            return time.perf_counter() - t
        finally:
            cluster.stop()


def suite_seconds(backend: str = "local") -> float:
    """Wall time of the behavioural suite (`pytest -m integration`) on `backend`; it must pass."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "integration", f"--backend={backend}", "-q", "-p", "no:cacheprovider"],
                          cwd=REPO_ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"bench: the behavioural suite failed on {backend}:\n{proc.stdout[-3000:]}")
    return wall


def bench_cluster(runs: int) -> None:
    tools.ensure(*tools.CLUSTER_TOOLS)  # builds are not part of the start time
    starts = [_start_once() for _ in range(runs)]
    start = statistics.median(starts)
    suite = suite_seconds("local")
    print(f"local: start median {start:.2f}s over {runs} runs ({', '.join(f'{s:.2f}' for s in starts)}); behavioural suite {suite:.1f}s")
    problem = docker_problem()
    print(f"kind:  n/a ({problem})" if problem else f"kind:  behavioural suite {suite_seconds('kind'):.1f}s (cluster start included)")
    print(f"start_s={start:.2f} suite_s={suite:.1f}")
