"""Every job of a namespace run to its end as on AKS, with no step in between but the one Ray would
take: an admitted RayJob's pods are bound by kube-scheduler and made Running by KWOK; once its
head, workers and submitter are all Running and Ready, its result is reported
(`finish_rayjob`); KubeRay deletes its RayCluster, Kueue marks the Workload Finished, frees the
quota and admits the next one. `drain` follows the pods and Workloads with one watch each and
waits (bounded) until every Workload is Finished. The scale scenario runs it (harness.kueue.scale).
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from harness.k8s import POD, WORKLOAD, ListWatch, WaitTimeout, condition, is_true
from harness.kueue.results import finish_rayjob

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"  # the submitter Job's pods; KubeRay names that Job after the RayJob
CLUSTER_LABEL = "ray.io/cluster"                  # head and workers; the RayCluster is <rayjob>-<suffix>
NODE_TYPE_LABEL = "ray.io/node-type"              # head | worker
ROLES = frozenset({"head", "worker", "submitter"})


@dataclass
class Drained:
    finished: int = 0     # Workloads Finished
    results: int = 0      # jobs whose result the harness reported
    pods: int = 0         # distinct pods seen
    peak_pods: int = 0    # most pods at once
    seconds: float = 0.0


def job_and_role(pod: dict) -> tuple[str, str] | None:
    """Which RayJob a pod belongs to and what it is to it (head, worker or submitter)."""
    labels = pod["metadata"].get("labels") or {}
    if labels.get(JOB_NAME_LABEL):
        return labels[JOB_NAME_LABEL], "submitter"
    if labels.get(CLUSTER_LABEL) and labels.get(NODE_TYPE_LABEL) in ("head", "worker"):
        return labels[CLUSTER_LABEL].rsplit("-", 1)[0], labels[NODE_TYPE_LABEL]
    return None


def _how(pod: dict) -> str:
    """A pod as the last state seen names it: its phase, node and Ready condition."""
    ready = condition(pod, "Ready") or {}
    return (f"{(pod.get('status') or {}).get('phase', '?')} on {pod['spec'].get('nodeName') or 'no node'}, "
            f"Ready={ready.get('status', '?')}" + (f" ({ready['reason']})" if ready.get("reason") else ""))


def running(pod: dict) -> bool:
    return bool(pod["spec"].get("nodeName")) and is_true(pod, "Ready")


class _Follower:
    """The pods' and Workloads' watch callbacks: reports a job's result once all of its pods run."""

    def __init__(self, kube, namespace: str, n: int, reporters: int):
        self.kube, self.namespace, self.n = kube, namespace, n
        self.pods: dict[str, dict[str, tuple[str, bool, str]]] = {}  # job -> pod uid -> (role, running, how it is)
        self.seen: set[str] = set()
        self.live = 0
        self.out = Drained()
        self.reported: set[str] = set()
        self.finished: set[str] = set()
        self.errors: list[str] = []
        self.pool = ThreadPoolExecutor(reporters, thread_name_prefix="drain")
        self.lock = threading.Lock()

    def on_pod(self, kind: str, pod: dict) -> None:
        owner = job_and_role(pod)
        if owner is None:
            return
        job, role = owner
        uid = pod["metadata"]["uid"]
        mine = self.pods.setdefault(job, {})
        if kind == "DELETED":
            self.live -= uid in mine
            mine.pop(uid, None)
            return
        if uid not in self.seen:
            self.seen.add(uid)
            self.live += 1
            self.out.peak_pods = max(self.out.peak_pods, self.live)
        mine[uid] = (role, running(pod), _how(pod))
        if job not in self.reported and {r for r, ok, _ in mine.values() if ok} >= ROLES:
            self.reported.add(job)
            self.pool.submit(self._report, job)

    def _report(self, job: str) -> None:
        try:
            finish_rayjob(self.kube, job, self.namespace)
        except Exception as err:  # noqa: BLE001 - recorded, and the bounded wait reports it
            with self.lock:
                self.errors.append(f"{job}: {err}")

    def on_workload(self, kind: str, wl: dict) -> None:
        if kind != "DELETED" and is_true(wl, "Finished"):
            self.finished.add(wl["metadata"]["name"])

    def state(self) -> str:
        waiting = sorted(job for job, pods in self.pods.items() if job not in self.reported and pods)
        shown = "; ".join(f"{job}: " + ", ".join(f"{role} {how}" for role, _, how in sorted(self.pods[job].values()))
                          for job in waiting[:3])
        return (f"{len(self.finished)} of {self.n} Workloads Finished, {len(self.reported)} results reported, "
                f"{self.live} pods now ({len(waiting)} jobs with pods, not all Running yet" + (f": {shown}" if shown else "") + ")"
                + (f"; errors: {self.errors[-3:]}" if self.errors else ""))


def drain(api, kube, namespace: str, n: int, timeout: float) -> Drained:
    """Runs the namespace's n RayJobs to their ends (see the module); WaitTimeout with the last
    state seen when not every Workload is Finished within `timeout`."""
    follow = _Follower(kube, namespace, n, reporters=4)
    t0 = time.monotonic()
    pods = ListWatch(api, POD, namespace=namespace, on_event=follow.on_pod,
                     on_list=lambda items: [follow.on_pod("ADDED", p) for p in items]).start("drain-pods")
    workloads = ListWatch(api, WORKLOAD, namespace=namespace, on_event=follow.on_workload,
                          on_list=lambda items: [follow.on_workload("ADDED", w) for w in items])
    try:
        done = workloads.run(until=lambda: len(follow.finished) >= n, deadline=t0 + timeout)
    finally:
        pods.stop()
        follow.pool.shutdown(wait=True)
    if not done:
        raise WaitTimeout(f"timed out after {timeout:.0f}s running {n} RayJobs to their ends; last state: {follow.state()}")
    out = follow.out
    out.finished, out.results, out.pods, out.seconds = len(follow.finished), len(follow.reported), len(follow.seen), time.monotonic() - t0
    return out
