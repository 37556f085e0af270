"""The gate's inactive-queue rules (harness/gate/queue_activity.py) against the real Kueue: each
case of tests/static/test_queue_activity.py, which the gate reports, is applied to the embedded
control plane, and Kueue must give the reason the gate names. A ClusterQueue must settle at
Active=False with that reason in its message; for a cohort cycle, a Workload submitted to the queue must be
refused admission as "... is inactive". The same
shapes complete (which the gate passes) must leave the queue Active."""
from __future__ import annotations

import pytest
import yaml

from harness.k8s import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD, Kube, condition, describe_conditions
from tests.static.test_queue_activity import CASES, COMPLETE, objects_text

pytestmark = pytest.mark.integration


def _active(kube: Kube, name: str, status: str, says: str = "") -> None:
    """Waits until ClusterQueue `name`'s Active condition has `status` and its message `says`."""
    def settled(cqs):
        active = next((condition(c, "Active") or {} for c in cqs if c["metadata"]["name"] == name), {})
        return active.get("status") == status and says in (active.get("message") or "")

    kube.wait_for(*CLUSTER_QUEUE, settled, f"ClusterQueue {name} Active={status}" + (f": '{says}'" if says else ""), show=describe_conditions)


def _objects(text: str, prefix: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(objects_text(text, prefix)) if d]


@pytest.mark.parametrize("case,rule,severity,where,objects,kueue_says", CASES, ids=[c[0] for c in CASES])
def test_kueue_keeps_the_queue_inactive_for_the_reason_the_gate_names(kube: Kube, names, create, case, rule, severity, where, objects,
                                                                       kueue_says):
    prefix = f"{names.prefix}gate-{case}-"
    if kueue_says != "is inactive":
        create(_objects(objects, prefix))
        _active(kube, f"{prefix}cq", "False", kueue_says)
        return
    # A cohort cycle: the scheduler leaves the queue out. Its Active condition says nothing reliable: Kueue's status update
    # fails on a queue below a cycle (Cache.Usage: "cohort has a cycle"), so the condition keeps whatever an update before
    # Kueue saw the cycle wrote (True, or False with reason Ready), depending on the order Kueue saw the objects in; and a
    # Workload queued before Kueue saw every Cohort of the loop is refused as over a quota of 0 instead of as inactive.
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    create(_objects(objects, prefix) + [{"apiVersion": LOCAL_QUEUE.api_version, "kind": "LocalQueue",
                                         "metadata": {"name": f"{prefix}lq", "namespace": names.namespace},
                                         "spec": {"clusterQueue": f"{prefix}cq"}}])
    kube.wait_for(*CLUSTER_QUEUE, lambda cqs: any(c["metadata"]["name"] == f"{prefix}cq" and condition(c, "Active") for c in cqs),
                  f"Kueue to take ClusterQueue {prefix}cq in", show=describe_conditions)
    pod = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}
    create([{"apiVersion": WORKLOAD.api_version, "kind": "Workload", "metadata": {"name": f"{prefix}wl", "namespace": names.namespace},
             "spec": {"queueName": f"{prefix}lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": pod}}]}}])
    refusals = (kueue_says, "maximum capacity (0)")
    wl = kube.wait_for(*WORKLOAD, lambda wls: next((w for w in wls if w["metadata"]["name"] == f"{prefix}wl" and any(
                           said in ((condition(w, "QuotaReserved") or {}).get("message") or "") for said in refusals)), None),
                       f"Workload {prefix}wl pending with one of {refusals}", names.namespace, show=describe_conditions)
    assert (condition(wl, "QuotaReserved") or {}).get("status") == "False", describe_conditions(wl)


def test_complete_topology_and_cohort_tree_keep_the_queue_active(kube: Kube, names, create):
    """The control: the same shapes complete, which the gate passes, leave the ClusterQueue Active."""
    prefix = f"{names.prefix}gate-complete-"
    create(_objects(COMPLETE, prefix))
    _active(kube, f"{prefix}cq", "True")
