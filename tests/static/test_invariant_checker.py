"""The invariant checker must be able to fail: fed states that break each invariant, it reports them."""
from __future__ import annotations

import pytest

from kubernetes import client

from harness.kueue import InvariantChecker

pytestmark = pytest.mark.static


def cq(name, gpu_nominal, gpu_borrow=None, cohort="shared-cohort"):
    res = {"name": "nvidia.com/gpu", "nominalQuota": str(gpu_nominal)}
    if gpu_borrow is not None:
        res["borrowingLimit"] = str(gpu_borrow)
    spec = {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "gpu", "resources": [res]}]}]}
    if cohort:
        spec["cohortName"] = cohort
    return {"metadata": {"name": name}, "spec": spec}


def workload(name, queue, gpus, reserved=True):
    return {"metadata": {"name": name, "namespace": "ray", "ownerReferences": []},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True" if reserved else "False"}],
                       "admission": {"clusterQueue": queue, "podSetAssignments": [
                           {"name": "workers", "flavors": {"nvidia.com/gpu": "gpu"}, "resourceUsage": {"nvidia.com/gpu": str(gpus)}}]}}}


def checker(cqs, wls):
    c = InvariantChecker(client.ApiClient())  # never started: the checks run on the state given here
    c.state = {"ClusterQueue": {(None, q["metadata"]["name"]): q for q in cqs},
               "Workload": {("ray", w["metadata"]["name"]): w for w in wls}, "RayJob": {}}
    return c.check()


def test_within_limits_is_quiet():
    assert checker([cq("a", 4, 4), cq("b", 4, 4)], [workload("w1", "a", 8)]) == []


def test_above_nominal_plus_borrowing_is_reported():
    found = checker([cq("a", 4, 2), cq("b", 4, 4)], [workload("w1", "a", 7)])
    assert any("ClusterQueue a holds 7" in v for v in found), found


def test_cohort_above_its_nominal_total_is_reported():
    found = checker([cq("a", 4, 8), cq("b", 4, 8)], [workload("w1", "a", 6), workload("w2", "b", 4)])
    assert any("cohort shared-cohort holds 10" in v for v in found), found


def test_queue_without_cohort_cannot_exceed_nominal():
    found = checker([cq("solo", 8, cohort=None)], [workload("w1", "solo", 9)])
    assert any("ClusterQueue solo holds 9" in v for v in found), found


def test_released_quota_does_not_count():
    assert checker([cq("solo", 8, cohort=None)], [workload("w1", "solo", 8), workload("w2", "solo", 8, reserved=False)]) == []


def admitted(name, uid, owner, at, evictions=0):
    wl = {"metadata": {"name": name, "namespace": "ray", "uid": uid, "ownerReferences": [{"uid": owner}]},
          "status": {"conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": at}]}}
    if evictions:
        wl["status"]["schedulingStats"] = {"evictions": [{"reason": "Preempted", "count": evictions}]}
    return wl


def admission_checker():
    c = InvariantChecker(client.ApiClient())
    c.state["Workload"] = {}
    return c


def see(c, *wls):
    c.state["Workload"] = {("ray", w["metadata"]["name"]): w for w in wls}
    return c.check()


def test_readmission_after_an_eviction_is_quiet():
    c = admission_checker()
    see(c, admitted("w1", "u1", "job1", "10:00"))
    assert see(c, admitted("w1", "u1", "job1", "10:05", evictions=1)) == []


def test_readmission_without_an_eviction_is_reported():
    c = admission_checker()
    see(c, admitted("w1", "u1", "job1", "10:00"))
    found = see(c, admitted("w1", "u1", "job1", "10:05"))
    assert any("admitted 2 times with 0 evictions" in v for v in found), found


def test_two_admitted_workloads_of_one_job_are_reported():
    found = see(admission_checker(), admitted("w1", "u1", "job1", "10:00"), admitted("w2", "u2", "job1", "10:01"))
    assert any("has 2 admitted Workloads at once" in v for v in found), found
