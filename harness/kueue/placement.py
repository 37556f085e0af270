"""Whether an admitted RayJob runs: its pods bound to nodes and its RayCluster ready, as KubeRay and
kube-scheduler report it. One implementation for the invariant checker (every pod of an admitted
workload bound within timeouts.POD_BOUND), for `Finish` (only a job whose RayCluster KubeRay reports
ready can finish: KubeRay 1.6.1 submits the job only then, rayjob_controller.go "Wait for the
RayCluster.Status.State to be ready before submitting the job") and for the report's step outcome
("admitted but not running: 5 of 5 pods Pending (0/3 nodes are available: 3 node(s) had untolerated taint(s))").

On a cluster without Nodes nothing can be bound: pods are not the subject there (`has_nodes`).
"""
from __future__ import annotations

import re

from harness.k8s import condition, owned_by

CQ_LABEL = "kueue.x-k8s.io/cluster-queue-name"  # on every pod of an admitted workload
REFUSED = "ValidationFailed"  # KubeRay's jobDeploymentStatus for a RayJob whose spec it refuses
READY = "ready"  # a RayCluster's status.state once every pod of it runs


def job_pods(pods, job_name: str) -> list[dict]:
    """The pods of RayJob `job_name` (head, workers and submitter: KubeRay names them after the RayJob)."""
    return [p for p in pods if p["metadata"]["name"].startswith(job_name + "-")]


def unbound(pod: dict) -> str | None:
    """None unless `pod` belongs to an admitted workload (Kueue's cluster-queue label), is not being
    deleted and has no node yet; then what kube-scheduler says of it (its PodScheduled message)."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    if CQ_LABEL not in (meta.get("labels") or {}) or meta.get("deletionTimestamp") or spec.get("nodeName"):
        return None
    return (condition(pod, "PodScheduled") or {}).get("message") or "no scheduling decision recorded"


def scheduler_reason(message: str) -> str:
    """kube-scheduler's first sentence, the filters' verdict per node ("0/3 nodes are available: 3 node(s) had
    untolerated taint(s)"), without what follows (". no new claims to deallocate, preemption: 0/3 nodes ...")."""
    return re.split(r"\.\s", message, maxsplit=1)[0].rstrip(" .")


def refused(job: dict | None) -> str:
    """Why KubeRay refused the RayJob's spec ("" when it did not)."""
    status = (job or {}).get("status") or {}
    if status.get("jobDeploymentStatus") != REFUSED:
        return ""
    return f"KubeRay refused it ({REFUSED}: {status.get('message') or status.get('reason') or 'no message'})"


def not_placed(job: dict | None, clusters: list[dict], pods: list[dict]) -> str:
    """Why the unsuspended RayJob `job` does not run ("" when it does): KubeRay refused it, some of
    its pods are not bound (with the scheduler's reason), or its RayCluster is not ready yet.
    `clusters`, `pods`: the RayClusters and pods of its namespace (any: those of the job are picked)."""
    if job is None:
        return "its RayJob is gone"
    if why := refused(job):
        return why
    name, uid = job["metadata"]["name"], job["metadata"].get("uid")
    mine = [p for p in job_pods(pods, name) if not p["metadata"].get("deletionTimestamp")]
    waiting = [why for p in mine if (why := unbound(p)) is not None]
    if waiting:
        return f"{len(waiting)} of {len(mine)} pods Pending ({scheduler_reason(waiting[0])})"
    cluster = next(iter(owned_by(clusters, uid)), None)
    if cluster is None:
        return "KubeRay has created no RayCluster for it"
    state = (cluster.get("status") or {}).get("state")
    if state != READY:
        return f"its RayCluster is {state or 'not ready'}" + (f" ({len(mine)} pods bound)" if mine else " (no pod created)")
    return ""
