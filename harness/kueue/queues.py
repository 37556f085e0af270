"""Building blocks of the behavioural scenarios: sized RayJobs from the samples, and
watch-driven waits on what Kueue decides about them."""
from __future__ import annotations

import copy
from dataclasses import dataclass

from harness.gate import render_sample
from harness.cluster import Names
from harness.k8s import Kube, apply_order, condition, is_true, owned_by
from harness.gate import build_directory
from harness.core import REPO_ROOT

RAYJOB = ("ray.io/v1", "RayJob")
RAYCLUSTER = ("ray.io/v1", "RayCluster")
WORKLOAD = ("kueue.x-k8s.io/v1beta2", "Workload")
CLUSTER_QUEUE = ("kueue.x-k8s.io/v1beta2", "ClusterQueue")
LOCAL_QUEUE = ("kueue.x-k8s.io/v1beta2", "LocalQueue")
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
# 96 CPU (the sample's llm-training, 68 CPU for 4 GPUs, runs out of CPU first).
FOUR_GPUS = Size(workers=4, worker_cpu="8", worker_memory="64Gi", head_cpu="2", head_memory="8Gi")


def _set_resources(template: dict, cpu: str, memory: str, gpu: int | None) -> None:
    container = template["spec"]["containers"][0]
    res = {"cpu": cpu, "memory": memory}
    if gpu:
        res["nvidia.com/gpu"] = str(gpu)
    container["resources"] = {"requests": dict(res), "limits": dict(res)}


def rayjob(sample: str, name: str, queue: str, size: Size | None = None, priority: str | None = None,
           namespace: str = "ray", **values: str) -> dict:
    """The sample RayJob, renamed and optionally re-sized, ready to submit to `queue`."""
    job = render_sample(sample, queue, {"JOB_NAME": name, **values})
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
    Tests use the repository's names; `names` maps them to this run's lane (harness.isolation)."""

    def __init__(self, kube: Kube, names: Names | None = None, timeout: float = 60):
        self.kube, self.names, self.timeout = kube, names or Names(), timeout
        self.namespace = self.names.namespace

    def apply_layout(self, directory: str) -> list[dict]:
        """A queue layout of this repository (e.g. overlays/team-queues) applied in this run's
        names; waits until Kueue reports every ClusterQueue Active. Returns what was applied."""
        repo_objs = build_directory(REPO_ROOT, directory)
        objs = apply_order([self.names.localize(o) for o in repo_objs])
        for o in objs:
            self.kube.apply(o)
        for cq in (o for o in repo_objs if o["kind"] == "ClusterQueue"):
            self.wait_cluster_queue(cq["metadata"]["name"], lambda c: is_true(c, "Active"), "Active=True")
        return objs

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

    def wait_evicted(self, job_name: str, timeout: float | None = None) -> dict:
        wl = self.wait_workload(job_name, lambda w: is_true(w, "Evicted") or is_true(w, "Preempted"), "Evicted/Preempted", timeout)
        self.wait_job(job_name, lambda j: j["spec"].get("suspend") is True, "suspended again after eviction", timeout)
        return wl

    def wait_one_evicted(self, job_names: list[str], timeout: float | None = None) -> tuple[str, dict]:
        """Kueue chooses which of several equal candidates to preempt; returns (its RayJob, Workload)."""
        uids = {self.job(n)["metadata"]["uid"]: n for n in job_names}

        def check(items):
            for w in items:
                for ref in (w.get("metadata") or {}).get("ownerReferences") or []:
                    if ref.get("uid") in uids and (is_true(w, "Evicted") or is_true(w, "Preempted")):
                        return uids[ref["uid"]], w
            return None

        name, wl = self.kube.wait_for(*WORKLOAD, check, f"one of {', '.join(job_names)} evicted", self.namespace, timeout or self.timeout)
        self.wait_job(name, lambda j: j["spec"].get("suspend") is True, "suspended again after eviction", timeout)
        return name, wl

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
        name = self.names.cq(name)

        def check(items):
            for o in items:
                if o["metadata"]["name"] == name and test(o):
                    return o
            return None

        return self.kube.wait_for(*CLUSTER_QUEUE, check, f"ClusterQueue {name}: {describe}", None, timeout or self.timeout)


def flavor_usage(cq: dict, flavor: str, resource: str, field: str = "total") -> str:
    """status.flavorsUsage[flavor].resources[resource].<total|borrowed> of a ClusterQueue ("0" if absent)."""
    for f in (cq.get("status") or {}).get("flavorsUsage") or []:
        if f.get("name") == flavor:
            for r in f.get("resources") or []:
                if r.get("name") == resource:
                    return str(r.get(field, "0"))
    return "0"
