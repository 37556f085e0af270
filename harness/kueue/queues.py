"""Building blocks of the behavioural scenarios: sized RayJobs from the samples, queue layouts
applied and removed again, and watch-driven waits on what Kueue decides about them."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import Names
from harness.core import REPO_ROOT, timeouts
from harness.gate import build_directory, render_sample
from harness.k8s import (CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, POD, RAYCLUSTER, RAYJOB, WORKLOAD, Kube, apply_order, condition,
                         is_false, is_true, owned_by)
from harness.kueue.placement import job_pods

__all__ = ["CLUSTER_QUEUE", "FOUR_GPUS", "LOCAL_QUEUE", "PRIORITY_LABEL", "RAYCLUSTER", "RAYJOB", "WORKLOAD", "Queues", "Size",
           "flavor_usage", "pods_running", "rayjob"]

PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True)
class Size:
    """Per-pod requests for a RayJob's head and workers (requests == limits, as the samples do)."""

    workers: int
    worker_cpu: str
    worker_memory: str
    worker_gpu: int = 1
    head_cpu: str = "2"
    head_memory: str = "8Gi"


# The scenario size of the team-queues tests: 34 CPU, 264Gi, 4 GPU, so that two fit the cohort's
# 94 CPU (the sample's llm-training, 68 CPU for 4 GPUs, runs out of CPU first).
FOUR_GPUS = Size(workers=4, worker_cpu="8", worker_memory="64Gi", head_cpu="2", head_memory="8Gi")


def _set_resources(template: dict, cpu: str, memory: str, gpu: int | None) -> None:
    container = template["spec"]["containers"][0]
    res = {"cpu": cpu, "memory": memory}
    if gpu:
        res["nvidia.com/gpu"] = str(gpu)
    container["resources"] = {"requests": dict(res), "limits": dict(res)}


def rayjob(sample: str, name: str, queue: str, size: Size | None = None, priority: str | None = None,
           namespace: str = "ray", root: Path = REPO_ROOT, **values: str) -> dict:
    """The sample RayJob of the tree at `root` (its workloads/ and workloads/defaults.yaml), renamed
    and optionally re-sized, ready to submit to `queue`."""
    job = render_sample(sample, queue, {"JOB_NAME": name, **values}, root)
    job["metadata"]["namespace"] = namespace
    if size:
        spec = job["spec"]["rayClusterSpec"]
        _set_resources(spec["headGroupSpec"]["template"], size.head_cpu, size.head_memory, None)
        group = spec["workerGroupSpecs"][0]
        group["replicas"] = group["minReplicas"] = group["maxReplicas"] = size.workers
        _set_resources(group["template"], size.worker_cpu, size.worker_memory, size.worker_gpu)
    if priority:
        job["metadata"].setdefault("labels", {})[PRIORITY_LABEL] = priority
    return copy.deepcopy(job)


class Queues:
    """What a test asks of Kueue, in its own words; every wait is bounded and watch-driven.
    Tests use the repository's names; `names` maps them to this run's lane (harness.cluster.isolation).
    What apply_layout/apply_objects put on the cluster, teardown() removes again."""

    def __init__(self, kube: Kube, names: Names | None = None, timeout: float = timeouts.DECISION):
        self.kube, self.names, self.timeout = kube, names or Names(), timeout
        self.namespace = self.names.namespace
        self.applied: list[dict] = []  # in the order applied, localized

    # -- layouts ---------------------------------------------------------------------------------
    def apply_layout(self, directory: str) -> list[dict]:
        """A queue layout of this repository (e.g. overlays/team-queues) applied in this run's
        names; waits until Kueue reports every ClusterQueue Active. Returns what was applied."""
        return self.apply_objects(build_directory(REPO_ROOT, directory))

    def apply_objects(self, repo_objs: list[dict]) -> list[dict]:
        """Objects in the repository's names (a rendered layout, e.g. of another ref) applied in
        this run's names, each ClusterQueue waited for until Kueue has decided whether it is Active
        (settled_activity). Returns what was applied."""
        objs = apply_order([self.names.localize(o) for o in repo_objs])
        for o in objs:
            self.kube.apply(o)
            self.applied.append(o)
        flavors = {o["metadata"]["name"] for o in repo_objs if o["kind"] == "ResourceFlavor"}
        for cq in (o for o in repo_objs if o["kind"] == "ClusterQueue"):
            final = settled_activity(cq, flavors)
            self.wait_cluster_queue(cq["metadata"]["name"], lambda c, f=final: (condition(c, "Active") or {}).get("status") == "True"
                                    or (is_false(c, "Active") and condition(c, "Active").get("reason") in f),
                                    "Active=True" + "".join(f" or Active=False ({r})" for r in sorted(final)))
        return objs

    def remove_jobs(self) -> None:
        """Every RayJob of the namespace deleted, and waited for until Kueue has dropped their
        Workloads and KubeRay's RayClusters are gone, so the queues hold nothing any more."""
        if self.kube.get(*NAMESPACE, name=self.namespace) is None:
            return
        for job in self.kube.list(*RAYJOB, namespace=self.namespace):
            self.delete(job["metadata"]["name"])
        for rtype in (RAYJOB, WORKLOAD, RAYCLUSTER):
            self.kube.wait_for(*rtype, lambda items: not items or None, f"all {rtype.kind}s deleted", self.namespace, self.timeout)

    def teardown(self) -> None:
        """The jobs first (a queue that still holds a Workload stays Terminating behind Kueue's
        finalizer), then everything applied, waited for until gone: a flavor still Terminating
        when the next layout is applied would leave that layout's queues inactive. The namespace
        stays (deleting one is slow and the next layout wants it)."""
        self.remove_jobs()
        ours = [o for o in self.applied if o["kind"] != "Namespace"]
        for o in reversed(ours):
            self.kube.delete(o["apiVersion"], o["kind"], o["metadata"]["name"], (o.get("metadata") or {}).get("namespace"))
        for api_version, kind in sorted({(o["apiVersion"], o["kind"]) for o in ours}):
            names = {o["metadata"]["name"] for o in ours if o["kind"] == kind}
            self.kube.wait_for(api_version, kind, lambda items, n=names: not n & {i["metadata"]["name"] for i in items} or None,
                               f"the applied {kind} objects deleted", None, self.timeout)
        self.applied = []

    # -- jobs ------------------------------------------------------------------------------------
    def submit(self, job: dict) -> dict:
        return self.kube.create(self.names.localize(job))

    def delete(self, name: str) -> None:
        self.kube.delete(*RAYJOB, name=name, namespace=self.namespace)

    def job(self, name: str) -> dict | None:
        return self.kube.get(*RAYJOB, name=name, namespace=self.namespace)

    def workload(self, job_name: str, timeout: float | None = None) -> dict:
        """The Workload Kueue created for a RayJob (found by owner reference)."""
        job = self.job(job_name)
        assert job, f"RayJob {self.namespace}/{job_name} does not exist"
        uid = job["metadata"]["uid"]

        def find(items):
            owned = owned_by(items, uid)
            return owned[0] if owned else None

        return self.kube.wait_for(*WORKLOAD, find, f"the Workload of RayJob {job_name}", self.namespace, timeout or self.timeout)

    def wait_workload(self, job_name: str, test, describe: str, timeout: float | None = None) -> dict:
        uid = self.workload(job_name, timeout)["metadata"]["ownerReferences"][0]["uid"]

        def check(items):
            owned = owned_by(items, uid)
            return owned[0] if owned and test(owned[0]) else None

        return self.kube.wait_for(*WORKLOAD, check, f"Workload of RayJob {job_name}: {describe}", self.namespace, timeout or self.timeout)

    def wait_job(self, job_name: str, test, describe: str, timeout: float | None = None) -> dict:
        def check(items):
            for o in items:
                if o["metadata"]["name"] == job_name and test(o):
                    return o
            return None

        return self.kube.wait_for(*RAYJOB, check, f"RayJob {job_name}: {describe}", self.namespace, timeout or self.timeout)

    # -- the decisions tests assert on ---------------------------------------------------------
    def wait_admitted(self, job_name: str, timeout: float | None = None) -> dict:
        wl = self.wait_workload(job_name, lambda w: is_true(w, "Admitted"), "Admitted=True", timeout)
        self.wait_job(job_name, lambda j: not j["spec"].get("suspend"), "spec.suspend false or unset (unsuspended by Kueue)", timeout)
        return wl

    def wait_pending(self, job_name: str, timeout: float | None = None) -> dict:
        """Workload has no quota: QuotaReserved=False with Kueue's reason; the RayJob stays suspended."""
        wl = self.wait_workload(
            job_name,
            lambda w: (c := condition(w, "QuotaReserved")) is not None and c.get("status") == "False" and c.get("message"),
            "QuotaReserved=False with a message", timeout)
        job = self.job(job_name)
        assert job["spec"].get("suspend") is True, f"RayJob {job_name} is not suspended while its Workload is pending"
        return wl

    def wait_one_evicted(self, job_names: list[str], timeout: float | None = None, suspended: bool = True) -> tuple[str, dict]:
        """Kueue chooses which of several equal candidates to preempt; returns (its RayJob, Workload)
        once the Workload is Evicted or Preempted and (`suspended`) Kueue has suspended the RayJob."""
        uids = {self.job(n)["metadata"]["uid"]: n for n in job_names}

        def check(items):
            for w in items:
                for ref in (w.get("metadata") or {}).get("ownerReferences") or []:
                    if ref.get("uid") in uids and (is_true(w, "Evicted") or is_true(w, "Preempted")):
                        return uids[ref["uid"]], w
            return None

        name, wl = self.kube.wait_for(*WORKLOAD, check, f"one of {', '.join(job_names)} evicted", self.namespace, timeout or self.timeout)
        if suspended:
            self.wait_job(name, lambda j: j["spec"].get("suspend") is True, "suspended again after eviction", timeout)
        return name, wl

    def wait_rayclusters(self, job_names: list[str], test, describe: str, timeout: float | None = None) -> list[dict]:
        """The RayClusters KubeRay runs for these RayJobs (by owner reference), once `test` holds for them."""
        uids = {self.job(n)["metadata"]["uid"] for n in job_names}

        def check(items):
            owned = [c for c in items if any(r.get("uid") in uids for r in c["metadata"].get("ownerReferences") or [])]
            return (owned,) if test(owned) else None  # a tuple: true even when no cluster is the answer

        return self.kube.wait_for(*RAYCLUSTER, check, f"RayClusters of {', '.join(job_names)}: {describe}", self.namespace,
                                  timeout or self.timeout)[0]

    def wait_pods(self, job_name: str, test, describe: str, timeout: float | None = None) -> list[dict]:
        """The pods of RayJob `job_name` (head, workers and submitter: KubeRay names them after the
        RayJob) once `test(pods)` holds for them."""
        def check(items):
            mine = job_pods(items, job_name)
            return (mine,) if test(mine) else None  # a tuple: an empty list of pods is an answer too

        return self.kube.wait_for(*POD, check, f"pods of {job_name}: {describe}", self.namespace, timeout or self.timeout)[0]

    def cluster_queue(self, name: str) -> dict:
        return self.kube.get(*CLUSTER_QUEUE, name=self.names.cq(name))

    def local_queue(self, name: str) -> dict:
        return self.kube.get(*LOCAL_QUEUE, name=name, namespace=self.namespace)

    def usage(self, cq: dict, flavor: str, resource: str, field: str = "total") -> str:
        return flavor_usage(cq, self.names.flavor(flavor), resource, field)

    def gpus(self, cq: dict, field: str = "total") -> str:
        """GPUs a ClusterQueue's status reports in use (field "borrowed": of those, borrowed)."""
        return self.usage(cq, "gpu", "nvidia.com/gpu", field)

    def wait_cluster_queue(self, name: str, test, describe: str, timeout: float | None = None) -> dict:
        return self._wait_named(CLUSTER_QUEUE, self.names.cq(name), None, test, describe, timeout)

    def wait_local_queue(self, name: str, test, describe: str, timeout: float | None = None) -> dict:
        return self._wait_named(LOCAL_QUEUE, name, self.namespace, test, describe, timeout)

    def _wait_named(self, rtype, name: str, namespace: str | None, test, describe: str, timeout: float | None) -> dict:
        def check(items):
            for o in items:
                if o["metadata"]["name"] == name and test(o):
                    return o
            return None

        return self.kube.wait_for(*rtype, check, f"{rtype.kind} {name}: {describe}", namespace, timeout or self.timeout)

    # -- what two runs compare -------------------------------------------------------------------
    def state(self, jobs: dict[str, str], cluster_queues: list[str]) -> dict:
        """What a reviewer would compare between two runs, keyed by `jobs`' labels (a role such as
        "victim", so that runs in which Kueue picked another of two equal jobs compare equal):
        each job's admission, suspension and preemption reason, its Workloads and RayClusters,
        and each ClusterQueue's usage and counts."""
        workloads = self.kube.list(*WORKLOAD, namespace=self.namespace)
        clusters = self.kube.list(*RAYCLUSTER, namespace=self.namespace)
        state: dict = {}
        for label, name in jobs.items():
            job = self.job(name)
            assert job, f"RayJob {name} was lost"
            owned = owned_by(workloads, job["metadata"]["uid"])
            wl = owned[0] if owned else None
            preempted = condition(wl, "Preempted") or {}
            suspended = bool(job["spec"].get("suspend"))
            state[label] = {
                "workloads": len(owned),
                "admitted": is_true(wl, "Admitted"),
                "suspended": suspended,
                # KubeRay's status of a running job moves on by itself; that of a suspended one rests.
                "jobDeploymentStatus": (job.get("status") or {}).get("jobDeploymentStatus") if suspended else "-",
                "preempted": (preempted.get("status"), preempted.get("reason")),
                "rayclusters": len(owned_by(clusters, job["metadata"]["uid"])),
            }
        for name in cluster_queues:
            cq = self.cluster_queue(name)
            status = cq.get("status") or {}
            state[name] = {"gpu": self.gpus(cq), "borrowed": self.gpus(cq, "borrowed"),
                           "admitted": status.get("admittedWorkloads") or 0, "pending": status.get("pendingWorkloads") or 0}
        return state


def settled_activity(cq: dict, flavors: set[str]) -> set[str]:
    """The reasons of Active=False that are Kueue's final word on ClusterQueue `cq` as applied with
    the ResourceFlavors `flavors` (Kueue 0.17.1 pkg/cache/scheduler/clusterqueue.go inactiveReason, whose
    first reason is the condition's): Stopped when its spec.stopPolicy holds it (Hold, HoldAndDrain),
    FlavorNotFound when it names a flavor nobody applies. Any other False is on its way to True."""
    spec = cq.get("spec") or {}
    final = set()
    if spec.get("stopPolicy") not in (None, "None"):
        final.add("Stopped")
    named = {f.get("name") for g in spec.get("resourceGroups") or [] for f in g.get("flavors") or []}
    if named - flavors:
        final.add("FlavorNotFound")
    return final


def pods_running(pods: list[dict]) -> bool:
    """A RayJob's head, workers and submitter all bound to a node and Ready (KWOK runs them)."""
    return len(pods) >= 3 and all(p["spec"].get("nodeName") and is_true(p, "Ready") for p in pods)


def flavor_usage(cq: dict, flavor: str, resource: str, field: str = "total") -> str:
    """status.flavorsUsage[flavor].resources[resource].<total|borrowed> of a ClusterQueue ("0" if absent)."""
    for f in (cq.get("status") or {}).get("flavorsUsage") or []:
        if f.get("name") == flavor:
            for r in f.get("resources") or []:
                if r.get("name") == resource:
                    return str(r.get(field, "0"))
    return "0"
