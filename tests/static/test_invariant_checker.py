"""The invariant checker must be able to fail: fed states that break each invariant, it reports them."""
from __future__ import annotations

import pytest

from kubernetes import client

from harness.kueue import AdmissionLedger, InvariantChecker

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


def checker(cqs, wls, cohorts=()):
    c = InvariantChecker(client.ApiClient())  # never started: the checks run on the state given here
    c.state = {"ClusterQueue": {(None, q["metadata"]["name"]): q for q in cqs},
               "Workload": {("ray", w["metadata"]["name"]): w for w in wls}, "RayJob": {},
               "Cohort": {(None, co["metadata"]["name"]): co for co in cohorts}}
    return c.check()


def cohort(name, gpus, parent=None):
    spec = {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
        {"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}]}]}]}
    return {"metadata": {"name": name}, "spec": {**spec, **({"parentName": parent} if parent else {})}}


def test_within_limits_is_quiet():
    assert checker([cq("a", 4, 4), cq("b", 4, 4)], [workload("w1", "a", 8)]) == []


def test_above_nominal_plus_borrowing_is_reported():
    found = checker([cq("a", 4, 2), cq("b", 4, 4)], [workload("w1", "a", 7)])
    assert any("ClusterQueue a holds 7" in v for v in found), found


def test_cohort_above_its_nominal_total_is_reported():
    found = checker([cq("a", 4, 8), cq("b", 4, 8)], [workload("w1", "a", 6), workload("w2", "b", 4)])
    assert any("cohort shared-cohort holds 10" in v for v in found), found


def test_a_cohorts_own_quota_counts_and_is_still_a_bound():
    """A Cohort's resourceGroups add to what its queues may hold in total, and no more."""
    cqs = [cq("a", 4, 8), cq("b", 4, 8)]
    wls = [workload("w1", "a", 6), workload("w2", "b", 4)]
    assert checker(cqs, wls, [cohort("shared-cohort", 2)]) == []
    found = checker(cqs, wls + [workload("w3", "b", 1)], [cohort("shared-cohort", 2)])
    assert any("cohort shared-cohort holds 11" in v for v in found), found
    assert checker(cqs, wls + [workload("w3", "b", 1)], [cohort("shared-cohort", 2, parent="org")]) == []  # may borrow from org


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


def evicted(name, uid, owner, at, evictions):
    """A version of the Workload that Kueue evicted at `at` (Admitted gone False), counting `evictions`."""
    wl = admitted(name, uid, owner, at, evictions)
    wl["status"]["conditions"] = [{"type": "Admitted", "status": "False", "lastTransitionTime": at},
                                  {"type": "Evicted", "status": "True", "reason": "Preempted", "lastTransitionTime": at}]
    return wl


def test_readmission_after_an_eviction_the_watch_saw_is_quiet_though_kueue_set_its_counter_back():
    """Kueue's loose admission apply from a stale copy can write an older eviction count: the two
    evictions the watch saw still allow the third admission."""
    c = admission_checker()
    for version in (admitted("w1", "u1", "job1", "10:00"), evicted("w1", "u1", "job1", "10:01", 1),
                    admitted("w1", "u1", "job1", "10:02", evictions=1), evicted("w1", "u1", "job1", "10:03", 2),
                    admitted("w1", "u1", "job1", "10:04", evictions=1)):
        assert see(c, version) == []
    assert c.eviction_counts_set_back == 1


def test_a_third_admission_after_one_eviction_is_reported_with_its_history():
    c = admission_checker()
    see(c, admitted("w1", "u1", "job1", "10:00"))
    see(c, evicted("w1", "u1", "job1", "10:01", 1))
    see(c, admitted("w1", "u1", "job1", "10:02", evictions=1))
    found = see(c, admitted("w1", "u1", "job1", "10:04", evictions=1))
    assert len(found) == 1 and "admitted 3 times with 1 evictions" in found[0], found
    assert "Evicted=True(Preempted@10:01)" in found[0] and "Admitted=True(None@10:04)" in found[0], found
    assert see(c, admitted("w1", "u1", "job1", "10:04", evictions=1)) == found, "reported once per admission count"


def test_a_deleted_workload_leaves_the_ledger():
    ledger = AdmissionLedger()
    ledger.observe(admitted("w1", "u1", "job1", "10:00"))
    ledger.forget("u1")
    again = admitted("w1", "u1", "job1", "10:05")
    ledger.observe(again)
    assert ledger.excess(again) is None


def test_two_admitted_workloads_of_one_job_are_reported():
    found = see(admission_checker(), admitted("w1", "u1", "job1", "10:00"), admitted("w2", "u2", "job1", "10:01"))
    assert any("has 2 admitted Workloads at once" in v for v in found), found


def _pod(name: str, bound: bool, labels: dict | None = None, unschedulable: str = "") -> dict:
    pod = {"metadata": {"name": name, "namespace": "ray", "uid": f"uid-{name}",
                        "labels": {"kueue.x-k8s.io/cluster-queue-name": "team-a-cq", **(labels or {})}},
           "spec": {"nodeName": "aks-gpupool-00000000-vmss000000"} if bound else {}, "status": {}}
    if unschedulable:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}]
    return pod


def test_pod_binding_invariant_can_fail():
    now = [100.0]
    checker = InvariantChecker(api_client=None, pod_bound=30, clock=lambda: now[0])
    checker.state["Node"] = {(None, "aks-gpupool-00000000-vmss000000"): {"metadata": {"name": "n"}}}
    checker.state["Pod"] = {("ray", "w"): _pod("w", bound=False, unschedulable="0/3 nodes are available: 1 node(s) had untolerated taint"),
                            ("ray", "h"): _pod("h", bound=True)}
    assert checker.check() == []  # first seen now
    now[0] += 31
    violations = checker.check()
    assert len(violations) == 1 and "ray/w" in violations[0] and "untolerated taint" in violations[0], violations


def test_a_violation_a_test_took_is_not_reported_again_and_others_still_are():
    """A test takes the violation it provoked; the checker's watches may still hold the pod a moment later and
    must not report it anew (the CI flake of test_pod_bigger_than_any_node...), while another pod still fails."""
    now = [100.0]
    checker = InvariantChecker(api_client=None, pod_bound=30, clock=lambda: now[0])
    checker.state["Node"] = {(None, "n"): {"metadata": {"name": "n"}}}
    checker.state["Pod"] = {("ray", "two-gpus-w"): _pod("two-gpus-w", bound=False, unschedulable="Insufficient nvidia.com/gpu")}
    checker.check()
    now[0] += 31
    assert len(checker.check()) == 1
    assert checker.take("nothing-such") == [] and len(checker.violations) == 1
    assert len(checker.take("two-gpus")) == 1 and checker.violations == []
    now[0] += 1
    assert checker.check() == [], "the taken violation came back"
    checker.state["Pod"][("ray", "other-w")] = _pod("other-w", bound=False)
    checker.check()
    now[0] += 31
    violations = checker.check()
    assert len(violations) == 1 and "ray/other-w" in violations[0], violations


def test_pod_binding_invariant_ignores_clusters_without_nodes_and_pods_outside_kueue():
    now = [0.0]
    checker = InvariantChecker(api_client=None, pod_bound=30, clock=lambda: now[0])
    checker.state["Pod"] = {("ray", "w"): _pod("w", bound=False)}
    checker.check()
    now[0] += 100
    assert checker.check() == []  # no Node: nothing can be bound, not this run's subject
    checker.state["Node"] = {(None, "n"): {"metadata": {"name": "n"}}}
    other = _pod("x", bound=False)
    other["metadata"]["labels"] = {}
    checker.state["Pod"] = {("ray", "x"): other}
    checker.check()
    now[0] += 100
    assert checker.check() == []


def test_pods_of_a_suspended_rayjob_must_go():
    now = [0.0]
    checker = InvariantChecker(api_client=None, pod_bound=30, clock=lambda: now[0])
    checker.state["Node"] = {(None, "n"): {"metadata": {"name": "n"}}}
    checker.state["RayJob"] = {("ray", "job"): {"metadata": {"name": "job", "namespace": "ray", "uid": "j"},
                                                "spec": {"suspend": True}, "status": {"rayClusterName": "job-abc"}}}
    checker.state["Pod"] = {("ray", "job-abc-head"): _pod("job-abc-head", bound=True, labels={"ray.io/cluster": "job-abc"})}
    assert checker.check() == []
    now[0] += 31
    assert any("suspended RayJob ray/job" in v for v in checker.check())


def test_finished_workload_no_longer_holds_quota():
    cq = {"metadata": {"name": "team-a-cq"}, "spec": {"resourceGroups": [{"flavors": [{"name": "default", "resources": [
        {"name": "cpu", "nominalQuota": "48", "borrowingLimit": "48"}]}]}]}}

    def wl(name, finished):
        conds = [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True", "lastTransitionTime": name}]
        if finished:
            conds.append({"type": "Finished", "status": "True"})
        return {"metadata": {"name": name, "namespace": "ray", "uid": name, "resourceVersion": "1"},
                "status": {"conditions": conds, "admission": {"clusterQueue": "team-a-cq", "podSetAssignments": [
                    {"flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "68"}}]}}}

    assert checker([cq], [wl("first", finished=True), wl("second", finished=False)]) == []
    assert checker([cq], [wl("first", finished=False), wl("second", finished=False)])  # 136 > 96: caught


def _node(ready: str, message: str = "") -> dict:
    return {"metadata": {"name": "aks-gpupool-00000000-vmss000000", "uid": "node-uid"},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "NodeStatusUnknown" if ready != "True" else "KubeletReady",
                                       "message": message}]}}


def test_a_node_that_stops_heartbeating_is_reported():
    checker = InvariantChecker(api_client=None)
    checker.state["Node"] = {(None, "aks-gpupool-00000000-vmss000000"): _node("Unknown")}
    assert checker.check() == []  # never Ready yet: KWOK has not initialised it, not a violation
    checker.state["Node"] = {(None, "aks-gpupool-00000000-vmss000000"): _node("True")}
    assert checker.check() == []
    checker.state["Node"] = {(None, "aks-gpupool-00000000-vmss000000"): _node("Unknown", "Kubelet stopped posting node status.")}
    violations = checker.check()
    assert len(violations) == 1 and "aks-gpupool-00000000-vmss000000" in violations[0], violations
    assert "Kubelet stopped posting node status." in violations[0], violations


@pytest.mark.parametrize("deployment, reported", [("Running", True), ("ValidationFailed", False)])
def test_unsuspended_rayjob_without_admission_unless_kuberay_refused_it(monkeypatch, deployment, reported):
    """Invariant 1 on a fresh read: a RayJob unsuspended without an admitted Workload for longer than
    the bound is reported, unless KubeRay refused its spec (ValidationFailed: nothing runs; Kueue 0.19
    releases the quota first). Within the bound it is not yet: Kueue's job reconciler can clear a
    preempted Workload's quota a moment before it suspends the RayJob."""
    from harness.kueue import invariants

    job = {"metadata": {"name": "job", "namespace": "ray", "uid": "j"}, "spec": {"suspend": False},
           "status": {"jobDeploymentStatus": deployment}}
    wl = workload("job-wl", "team-a-cq", 4, reserved=False)
    wl["metadata"]["ownerReferences"] = [{"uid": "j"}]
    monkeypatch.setattr(invariants, "get_object", lambda api, rtype, name, ns: job)
    monkeypatch.setattr(invariants, "list_objects", lambda api, rtype, ns: {"items": [wl]})
    now = [100.0]
    c = InvariantChecker(client.ApiClient(), suspend_bound=10, clock=lambda: now[0])
    c.state = {"ClusterQueue": {(None, "team-a-cq"): cq("team-a-cq", 4)}, "Workload": {("ray", "job-wl"): wl},
               "RayJob": {("ray", "job"): job}}
    assert [v for v in c.check() if "unsuspended" in v] == []  # first seen: within the bound
    now[0] += 11
    found = [v for v in c.check() if "unsuspended" in v]
    assert bool(found) == reported, found


def test_a_rayjob_suspended_again_within_the_bound_is_a_brief_window_not_a_violation():
    """Kueue's stale-cache window (admitted, preempted at once, the quota cleared before the RayJob is
    suspended) heals within the bound: counted, not reported, even when time passes afterwards."""
    job = {"metadata": {"name": "job", "namespace": "ray", "uid": "j"}, "spec": {"suspend": False}, "status": {"jobDeploymentStatus": "New"}}
    now = [100.0]
    c = InvariantChecker(client.ApiClient(), suspend_bound=10, clock=lambda: now[0])
    c.state = {"ClusterQueue": {}, "Workload": {}, "RayJob": {("ray", "job"): job}}
    assert c.check() == []
    now[0] += 0.2
    job["spec"]["suspend"] = True
    assert c.check() == [] and c.brief_unadmitted == 1
    now[0] += 60
    assert c.check() == []


def test_lost_events_tells_a_lost_event_from_the_cluster_moving_on(monkeypatch):
    """The watches are compared with a fresh listing: an object deleted after the listing (a fresh read
    finds it gone) and one created after it are the cluster moving on; a listed object the watch lacks
    while it still exists, one it holds at an older version, and one it holds that the listing at a
    later version lacks, are lost events."""
    from harness.kueue import invariants

    def pod(name, rv):
        return {"metadata": {"name": name, "namespace": "ray", "resourceVersion": str(rv)}}

    listed = [pod("kept", 10), pod("deleted-since", 12), pod("missed", 13), pod("stale", 15)]
    exists = {"kept", "missed", "stale", "created-since"}

    def list_objects(api, rtype, ns=None):
        return {"metadata": {"resourceVersion": "20"}, "items": listed if rtype.kind == "Pod" else []}

    monkeypatch.setattr(invariants, "list_objects", list_objects)
    monkeypatch.setattr(invariants, "get_object", lambda api, rtype, name, ns=None: pod(name, 1) if name in exists else None)
    c = InvariantChecker(client.ApiClient())
    c.state["Pod"] = {("ray", p["metadata"]["name"]): p for p in (pod("kept", 10), pod("stale", 14), pod("created-since", 25),
                                                                  pod("deletion-missed", 5))}
    lost = c.lost_events(timeout=0)
    assert sorted(lost) == ["Pod ('ray', 'deletion-missed'): held by the watch at 5, not listed at 20",
                            "Pod ('ray', 'missed'): listed at 13, watch has None",
                            "Pod ('ray', 'stale'): listed at 15, watch has 14"], lost
