"""`make bench-flux`: how long a merged quota change takes to reach Kueue through the real Flux.

One local cluster with source-controller and kustomize-controller, bootstrapped from this
working tree; then N commits, each changing the whole-pool CPU quota of single-queue. For each,
the time from `git push` returning to the ClusterQueue carrying the new quota (applied by
kustomize-controller) and to Kueue having processed that generation (Active condition at the
new observedGeneration). Printed next to the intervals that bound it.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import durationpy

from harness import toolchain as tools
from harness.gitops import GIT_INTERVAL, KUSTOMIZATION, NAMESPACE, Fleet, set_whole_pool_quota
from harness.k8s import condition
from harness.cluster import LocalCluster
from harness.kueue import CLUSTER_QUEUE


def _seconds(go_duration: str) -> float:
    """A Go duration ("1m30s", "500ms"), as Flux writes intervals, in seconds."""
    return durationpy.from_str(go_duration).total_seconds()


def _cpu_quota(cq: dict) -> str:
    return cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]


def _kueue_saw(cq: dict) -> bool:
    active = condition(cq, "Active") or {}
    return active.get("status") == "True" and active.get("observedGeneration") == cq["metadata"]["generation"]


def bench_flux(commits: int) -> None:
    tools.ensure(*tools.CLUSTER_TOOLS, *tools.FLUX_TOOLS)  # builds are not part of the measurement
    with tempfile.TemporaryDirectory(prefix="bench-flux-") as tmp:
        with LocalCluster(Path(tmp)) as cluster, Fleet(cluster, Path(tmp) / "fleet") as fleet:
            fleet.wait_ready(fleet.bootstrap(), timeout=180)
            interval = fleet.kube.get(*KUSTOMIZATION, name="queues", namespace=NAMESPACE)["spec"]["interval"]
            timeout = _seconds(interval) * 2
            applied, processed = [], []
            for i in range(commits):
                cpu = str(97 + i)
                set_whole_pool_quota(fleet.wc, cpu, "768Gi")
                fleet.push(f"bench: whole-pool CPU {cpu}")
                pushed = time.monotonic()
                fleet.kube.wait_for(*CLUSTER_QUEUE, lambda items: any(_cpu_quota(c) == cpu for c in items) or None,
                                    f"cluster-queue with CPU quota {cpu}", None, timeout)
                applied.append(time.monotonic() - pushed)
                fleet.kube.wait_for(*CLUSTER_QUEUE, lambda items: any(_cpu_quota(c) == cpu and _kueue_saw(c) for c in items) or None,
                                    f"Kueue processed cluster-queue with CPU quota {cpu}", None, timeout)
                processed.append(time.monotonic() - pushed)
                print(f"commit {i + 1}: applied after {applied[-1]:.2f}s, Kueue after {processed[-1]:.2f}s", flush=True)
    print(f"commits={commits}")
    print(f"intervals: GitRepository {GIT_INTERVAL} (polling; production 1m), Kustomization queues {interval}")
    print(f"push_to_applied_median_s={statistics.median(applied):.2f}")
    print(f"push_to_kueue_median_s={statistics.median(processed):.2f}  (Kustomization interval {_seconds(interval):.0f}s)")

