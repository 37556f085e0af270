"""sample-fits decides with Kueue's own flavor assigner offline (harness/gate/kueue_fit.py, tools/fluxbuild
kueueadmit.go): its verdict on a RayJob against a set of queues must be the real Kueue's on the embedded
control plane, where the Ray integration builds the Workload and the scheduler admits it or leaves it
pending with the assigner's message. Each case is a queue shape the older hand-written estimate judged
wrongly: one flavor per resource group and pod set, pod sets on different flavors, the pods resource,
quota lent by a parent Cohort."""
from __future__ import annotations

import pytest

from harness.gate import kueue_fit
from harness.gate.schema_check import Checker
from harness.k8s import RAYJOB, WORKLOAD, Kube, condition, describe_conditions, is_true

pytestmark = pytest.mark.integration

API = WORKLOAD.api_version


def _flavor(name: str) -> dict:
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}}


def _group(covered: list[str], flavors: dict[str, dict[str, str]]) -> dict:
    return {"coveredResources": covered,
            "flavors": [{"name": f, "resources": [{"name": r, "nominalQuota": quota[r]} for r in covered]} for f, quota in flavors.items()]}


def _cq(name: str, groups: list[dict], cohort: str | None = None) -> dict:
    spec = {"namespaceSelector": {}, "resourceGroups": groups} | ({"cohortName": cohort} if cohort else {})
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _rayjob(name: str, namespace: str, queue: str, head_cpu: str, worker_cpu: str, workers: int, memory: str = "256Mi") -> dict:
    def template(cpu: str, role: str) -> dict:
        res = {"cpu": cpu, "memory": memory}
        return {"spec": {"containers": [{"name": role, "image": "rayproject/ray:2.41.0", "resources": {"requests": res, "limits": res}}]}}
    return {"apiVersion": RAYJOB.api_version, "kind": "RayJob",
            "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"suspend": True, "entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                     "submitterPodTemplate": {"spec": {"restartPolicy": "Never", "containers": [
                         {"name": "submitter", "image": "rayproject/ray:2.41.0",
                          "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}}]}},
                     "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": template(head_cpu, "ray-head")},
                                        "workerGroupSpecs": [{"groupName": "workers", "replicas": workers, "minReplicas": workers,
                                                              "maxReplicas": workers, "rayStartParams": {},
                                                              "template": template(worker_cpu, "ray-worker")}]}}}


def _cases(p: str) -> dict[str, tuple[list[dict], str, dict, bool]]:
    """name -> (queue objects, ClusterQueue, RayJob submitted to it as {head_cpu, worker_cpu, workers[, memory]}, admitted?)."""
    two = [_flavor(f"{p}f1"), _flavor(f"{p}f2")]
    return {
        # cpu from f1 and memory from f2 is no assignment: a pod set takes one flavor for its whole group.
        "one-flavor-per-group": (two + [_cq(f"{p}split", [_group(["cpu", "memory"], {f"{p}f1": {"cpu": "8", "memory": "1Gi"},
                                                                                     f"{p}f2": {"cpu": "1", "memory": "8Gi"}})])],
                                 f"{p}split", {"head_cpu": "2", "worker_cpu": "2", "workers": 1, "memory": "2Gi"}, False),
        # The head takes f1, the worker no longer fits there and takes f2.
        "pod-sets-on-two-flavors": (two + [_cq(f"{p}spread", [_group(["cpu", "memory"], {f"{p}f1": {"cpu": "3", "memory": "4Gi"},
                                                                                        f"{p}f2": {"cpu": "3", "memory": "4Gi"}})])],
                                    f"{p}spread", {"head_cpu": "2", "worker_cpu": "2", "workers": 1}, True),
        # Three pod sets (head, workers, submitter) count one pod each against a pods quota of 2.
        "pods-quota": ([_flavor(f"{p}f1"), _cq(f"{p}pods", [_group(["cpu", "memory", "pods"], {f"{p}f1": {"cpu": "8", "memory": "8Gi", "pods": "2"}})])],
                       f"{p}pods", {"head_cpu": "1", "worker_cpu": "1", "workers": 1}, False),
        # 1 cpu of its own, 1 from its sibling, 6 from the parent Cohort: 6 cpu fit, 9 do not.
        "parent-cohort-lends": (_tree(p, "lends"), f"{p}lends-cq", {"head_cpu": "1", "worker_cpu": "2", "workers": 2}, True),
        "parent-cohort-too-small": (_tree(p, "short"), f"{p}short-cq", {"head_cpu": "1", "worker_cpu": "4", "workers": 2}, False),
    }


def _tree(p: str, tag: str) -> list[dict]:
    cpu = lambda q: {f"{p}{tag}-f": {"cpu": q, "memory": "8Gi"}}  # noqa: E731
    return [_flavor(f"{p}{tag}-f"),
            {"apiVersion": API, "kind": "Cohort", "metadata": {"name": f"{p}{tag}-root"}, "spec": {"resourceGroups": [_group(["cpu", "memory"], cpu("6"))]}},
            {"apiVersion": API, "kind": "Cohort", "metadata": {"name": f"{p}{tag}-team"}, "spec": {"parentName": f"{p}{tag}-root"}},
            _cq(f"{p}{tag}-cq", [_group(["cpu", "memory"], cpu("1"))], f"{p}{tag}-team"),
            _cq(f"{p}{tag}-peer", [_group(["cpu", "memory"], cpu("1"))], f"{p}{tag}-team")]


CASES = ["one-flavor-per-group", "pod-sets-on-two-flavors", "pods-quota", "parent-cohort-lends", "parent-cohort-too-small"]


@pytest.mark.parametrize("case", CASES)
def test_offline_flavor_assignment_is_the_real_kueues(kube: Kube, names, create, case):
    p = f"{names.prefix}adm{CASES.index(case)}-"
    queues, cq, shape, admitted = _cases(p)[case]
    lq = {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": f"{p}lq", "namespace": names.namespace}, "spec": {"clusterQueue": cq}}
    job = _rayjob(f"{p}job", names.namespace, f"{p}lq", **shape)
    offline = kueue_fit.verdicts(Checker().start(), queues, [(job, cq, [])])[0]
    assert offline["mode"] == ("Fit" if admitted else "NoFit"), f"{case}: offline {offline}"

    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    create(queues + [lq])
    create([job])

    def decided(wls):
        mine = [w for w in wls if any(o.get("name") == job["metadata"]["name"] for o in w["metadata"].get("ownerReferences") or [])]
        if not mine:
            return None
        reserved = condition(mine[0], "QuotaReserved") or {}
        if is_true(mine[0], "QuotaReserved"):
            return mine[0]
        # Pending: Kueue's first verdict can come before its cache links a Cohort to its parent (it then saw a smaller
        # cohort, "maximum capacity (2)" for 8); a Cohort's update requeues the Workload and its message (or its admission)
        # follows. Decided once it says what the offline assigner says; the bound reports the last state when it never does.
        said = reserved.get("status") == "False" and reserved.get("message") or ""
        return mine[0] if said and not admitted and offline["message"] in said else None

    wl = kube.wait_for(*WORKLOAD, decided, f"{case}: the RayJob's Workload admitted, or pending with the offline assigner's message "
                       f"({offline.get('message') or 'admitted'})", names.namespace, show=describe_conditions)
    # Its quota freed before the Cohorts go: borrowed quota outliving its lender is what the invariant checker flags.
    kube.delete(RAYJOB.api_version, "RayJob", job["metadata"]["name"], names.namespace)
    kube.wait_for(*WORKLOAD, lambda wls: not any(w["metadata"]["uid"] == wl["metadata"]["uid"] for w in wls) or None,
                  f"{case}: the RayJob's Workload deleted with it", names.namespace)
    assert is_true(wl, "QuotaReserved") == admitted, f"{case}: offline {offline}; on the cluster: {describe_conditions(wl)}"
    if not admitted:  # the same words: the scheduler's pending message is the assigner's
        assert offline["message"] in condition(wl, "QuotaReserved")["message"], (offline["message"], describe_conditions(wl))
