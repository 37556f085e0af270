"""The scale scenario: N RayJobs on team-queues at once, spread over both teams and both
priorities, and Kueue's decisions waited for, with the invariant checker following throughout.

Each RayJob asks for 1 GPU (plus a small head), so the cohort's 8 GPUs admit 8 of them. Kueue's
decision for the rest is what is asserted: with high-priority work waiting in both teams, each
team ends holding exactly its own 4 GPUs (B reclaims anything A borrowed first), only
high-priority jobs are admitted, and every other Workload is pending with Kueue's reason.

The jobs run with pods, on the production cluster's pool nodes (KWOK): then every job is run to its
end (harness.kueue.drain: its pods Running, its result reported, its RayCluster deleted, its
Workload Finished, the next admitted), eight at a time, until all N are Finished: 3 N pods.

`python -m harness.kueue.scale --n 100` runs it on a fresh embedded cluster and prints the result as
JSON (wall time, the harness's peak RSS and that of each component); `make bench-scale` runs it
for several N.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kubernetes import client

from harness.cluster import LocalCluster, PoolNodes
from harness.core import REPO_ROOT, HarnessError, say, timeouts
from harness.k8s import WORKLOAD, Kube, condition, is_true
from harness.kueue import scenarios
from harness.kueue.drain import drain
from harness.kueue.invariants import InvariantChecker
from harness.kueue.queues import Queues, Size, rayjob

ONE_GPU = Size(workers=1, worker_cpu="2", worker_memory="8Gi", worker_gpu=1, head_cpu="1", head_memory="2Gi")
TEAMS = ("team-a", "team-b")
CQ_OF = {"team-a": "team-a-cq", "team-b": "team-b-cq"}
SUBMITTERS = 4  # parallel creates: the apiserver and Kueue's webhooks, not the client, set the pace


@dataclass
class ScaleResult:
    n: int
    submit_s: float = 0.0
    decide_s: float = 0.0
    wall_s: float = 0.0
    admitted: dict[str, int] = field(default_factory=dict)       # per ClusterQueue
    admitted_low: int = 0
    pending: dict[str, int] = field(default_factory=dict)
    gpus: dict[str, str] = field(default_factory=dict)            # in use per ClusterQueue
    borrowed: dict[str, str] = field(default_factory=dict)
    events: int = 0
    reconnects: int = 0
    brief_unadmitted: int = 0  # RayJobs unsuspended without admission for a moment (Kueue's stale-cache window)
    eviction_counts_set_back: int = 0  # Workload versions whose eviction count Kueue wrote lower than before
    lost_events: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    watched_workloads: int = 0
    drain_s: float = 0.0      # from the decisions until every Workload is Finished
    finished: int = 0         # Workloads Finished
    pods: int = 0             # distinct pods created, bound and run
    peak_pods: int = 0
    peak_rss_mb: dict[str, float] = field(default_factory=dict)  # harness and each component
    harness_cpu_s: float = 0.0  # this process only (watches, checks, waits), not the components


def jobs(n: int, namespace: str = "ray") -> list[dict]:
    """N RayJobs alternating team A/B, and per team alternating high/low priority."""
    out = []
    for i in range(n):
        team = TEAMS[i % 2]
        priority = "high" if (i // 2) % 2 == 0 else "low"
        out.append(rayjob("llm-training", f"scale-{i:04d}", team, ONE_GPU, priority, namespace=namespace))
    return out


def decided(wl: dict) -> bool:
    """Kueue has decided on a Workload: admitted, or pending with its reason written."""
    if is_true(wl, "Admitted"):
        return True
    c = condition(wl, "QuotaReserved")
    return bool(c and c.get("status") == "False" and c.get("message"))


def all_decided(n: int):
    """Predicate over the namespace's Workloads: all N exist and Kueue has decided on each."""
    def check(items):
        return items if len(items) == n and all(decided(w) for w in items) else None

    return check


def run(cluster: LocalCluster, n: int, timeout: float | None = None) -> ScaleResult:
    timeout = timeout or timeouts.LONG_DECISION + timeouts.SCALE_PER_JOB * n
    result = ScaleResult(n=n)
    api = cluster.api_client()
    kube = Kube(api)
    queues = Queues(kube, timeout=timeout)
    queues.apply_layout(scenarios.TEAM_QUEUES.layout)
    PoolNodes(kube, queues.namespace).add(REPO_ROOT, scenarios.TEAM_QUEUES.cluster)  # the cluster is the run's own
    checker_api = cluster.api_client()  # its own connections: the watches run in their own threads
    checker = InvariantChecker(checker_api).start()
    try:
        t0 = time.monotonic()
        say("scale", f"submitting {n} RayJobs ({SUBMITTERS} at a time)")
        with ThreadPoolExecutor(SUBMITTERS) as pool:
            list(pool.map(queues.submit, jobs(n, queues.namespace)))
        result.submit_s = time.monotonic() - t0
        say("scale", f"submitted in {result.submit_s:.1f}s; waiting for Kueue to decide on every Workload")
        kube.wait_for(*WORKLOAD, all_decided(n), f"Kueue's decision on all {n} Workloads", queues.namespace, timeout)
        per_team = {"team-a": (n + 1) // 2, "team-b": n // 2}
        for team in TEAMS:
            # CQ status lags the Workloads: wait until it shows the end state (4 GPUs each, none
            # borrowed, every Workload counted as admitted or pending).
            queues.wait_cluster_queue(
                CQ_OF[team], lambda c, t=team: queues.gpus(c) == "4"
                and queues.gpus(c, "borrowed") == "0"
                and c["status"].get("admittedWorkloads", 0) + c["status"].get("pendingWorkloads", 0) == per_team[t],
                "holds its own 4 GPUs and counts every Workload", timeout)
        result.decide_s = time.monotonic() - t0 - result.submit_s
        workloads = kube.list(*WORKLOAD, namespace=queues.namespace)
        for team in TEAMS:
            cq = queues.cluster_queue(CQ_OF[team])
            result.admitted[CQ_OF[team]] = cq["status"].get("admittedWorkloads", 0)
            result.pending[CQ_OF[team]] = cq["status"].get("pendingWorkloads", 0)
            result.gpus[CQ_OF[team]] = queues.gpus(cq)
            result.borrowed[CQ_OF[team]] = queues.gpus(cq, "borrowed")
        top = max(w["spec"].get("priority") or 0 for w in workloads)
        result.admitted_low = sum(1 for w in workloads if is_true(w, "Admitted") and (w["spec"].get("priority") or 0) < top)
        say("scale", f"decided in {result.decide_s:.1f}s; running all {n} jobs to their ends, 8 at a time")
        drained = drain(api, kube, queues.namespace, n, timeouts.LONG_DECISION + timeouts.SCALE_PER_JOB_RUN * n)
        result.drain_s, result.finished, result.pods, result.peak_pods = drained.seconds, drained.finished, drained.pods, drained.peak_pods
        result.wall_s = time.monotonic() - t0
        result.lost_events = checker.lost_events()
    finally:
        checker.stop()
        result.events, result.reconnects, result.brief_unadmitted = checker.events, checker.reconnects, checker.brief_unadmitted
        result.eviction_counts_set_back = checker.eviction_counts_set_back
        result.violations = list(checker.violations)
        result.watched_workloads = len(checker.state["Workload"])
        api.close()
        checker_api.close()
    result.peak_rss_mb = peak_rss_mb(cluster)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result.harness_cpu_s = usage.ru_utime + usage.ru_stime
    return result


def peak_rss_mb(cluster: LocalCluster) -> dict[str, float]:
    """Peak resident memory (VmHWM) of each component, and of this process, in MiB."""
    out = {"harness": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    for proc in cluster.all_processes():
        try:
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out[proc.name] = int(line.split()[1]) / 1024  # kB
        except (OSError, TypeError):
            pass
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.kueue.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100, help="number of RayJobs (default 100)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="scale-"))
    try:
        with LocalCluster(tmp / "cluster") as cluster:
            result = run(cluster, args.n)
    except (HarnessError, AssertionError, client.ApiException) as err:
        print(f"scale run with N={args.n} failed: {err}\n(component logs kept in {tmp / 'cluster' / 'logs'})", file=sys.stderr)
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    text = json.dumps(asdict(result), indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0 if not result.violations and not result.lost_events else 1


if __name__ == "__main__":
    sys.exit(main())
