"""Commits to the fleet repository, reconciled by the real Flux controllers with no manual step:
a quota change, a broken ClusterQueue, and the switch from single-queue to team-queues."""
from __future__ import annotations

import time

import durationpy
import pytest
import yaml

from harness.cluster import PoolNodes
from harness.gitops.flux import KUSTOMIZATION, NAMESPACE, NODES_OF, applied_revision, set_whole_pool_quota
from harness.core import timeouts
from harness.k8s import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD, condition, is_true
from harness.kueue import pods_running, rayjob
from tests.static.test_gate_corpus import edit

PROD_TFVARS = "terraform/clusters/prod-eastus2.tfvars"

pytestmark = pytest.mark.flux

SINGLE_QUEUE_CQ = "overlays/single-queue/cluster-queue.yaml"
LAYOUT = "clusters/local/queues/kustomization.yaml"


def _counts(cq: dict) -> tuple[int, int]:
    status = cq.get("status") or {}
    return status.get("admittedWorkloads", 0), status.get("pendingWorkloads", 0)


def test_quota_commit_reaches_kueue_within_the_interval(run, queues, repo_copy):
    """Two llm-training jobs (68 CPU, 528Gi each) do not fit the 94 CPU / 768Gi pool: one waits.
    The pool grows in Terraform first (gpu_node_count = 2: the second Standard_ND96amsr_A100_v4
    node `terraform apply` would add), then a commit that raises the queue's quota is picked up
    by source-controller, applied by kustomize-controller, and Kueue admits the waiting job, all
    within the queues interval; its pods are placed beside the first job's."""
    fleet, kube = run.fleet, run.kube
    edit(repo_copy, PROD_TFVARS, "gpu_node_count = 1", "gpu_node_count = 2")
    grown = PoolNodes(kube, queues.namespace)
    try:
        _quota_commit(fleet, kube, queues, grown, repo_copy)
    finally:
        queues.remove_jobs()  # the pods go before the node they run on
        grown.close()


def _quota_commit(fleet, kube, queues, grown, repo_copy):
    interval = durationpy.from_str(kube.get(*KUSTOMIZATION, name="queues", namespace=NAMESPACE)["spec"]["interval"]).total_seconds()
    queues.submit(rayjob("llm-training", "train-1", "default"))
    queues.wait_admitted("train-1")
    queues.submit(rayjob("llm-training", "train-2", "default"))
    queues.wait_pending("train-2")
    queues.wait_cluster_queue("cluster-queue", lambda c: _counts(c) == (1, 1), "1 admitted, 1 pending")
    queues.wait_pods("train-1", pods_running, "bound and Running on the pool's node")

    assert len([n for n in grown.add(repo_copy, NODES_OF) if "gpupool" in n]) == 2 and len(grown.names) == 1, grown.names
    set_whole_pool_quota(fleet.wc, "160", "1200Gi")
    pushed = time.monotonic()
    rev = fleet.push("single-queue: the pool grows to 160 CPU, 1200Gi")
    queues.wait_admitted("train-2", timeout=interval)
    took = time.monotonic() - pushed
    cq = queues.wait_cluster_queue("cluster-queue", lambda c: _counts(c) == (2, 0), "2 admitted, 0 pending")
    cpu = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert cpu["nominalQuota"] == "160", cpu
    assert queues.usage(cq, "default", "cpu") == "136"
    ks = fleet.wait_ready(rev, names=("queues",), timeout=interval)[0]
    assert took < interval, f"push to admission took {took:.1f}s, more than the Kustomization interval {interval}s"
    assert not any(m.get("manager") not in ("kustomize-controller", "kueue")
                   for m in cq["metadata"]["managedFields"]), "something besides Flux and Kueue wrote the ClusterQueue"
    assert applied_revision(ks) == rev
    pods = queues.wait_pods("train-2", pods_running, "bound and Running on the grown pool")
    assert {p["spec"]["nodeName"] for p in pods} & set(grown.names), "train-2 fits only with the new node's CPU"


def test_commit_breaking_a_cel_rule_changes_nothing(run, queues):
    """A borrowingLimit on the single queue (no cohort) breaks Kueue's CEL rule. Flux reports the
    apiserver's message on the queues Kustomization, applies no object of that commit (not even
    the valid change beside it), and the queues of the last good commit keep working."""
    fleet, kube = run.fleet, run.kube
    before = {o["metadata"]["name"]: o for o in kube.list(*CLUSTER_QUEUE)}
    lq_before = queues.local_queue("default")
    docs = list(yaml.safe_load_all(fleet.wc.read(SINGLE_QUEUE_CQ)))
    gpu = docs[0]["spec"]["resourceGroups"][1]["flavors"][0]["resources"][0]
    gpu["borrowingLimit"] = "4"
    docs[1]["metadata"].setdefault("labels", {})["ray-on-aks/changed-in"] = "bad-commit"  # valid on its own
    fleet.wc.write(SINGLE_QUEUE_CQ, yaml.safe_dump_all(docs, sort_keys=False))
    good = fleet.revision
    bad = fleet.push("single-queue: borrowingLimit without a cohort")

    ks = fleet.wait_failed("queues", bad)
    ready = condition(ks, "Ready")
    assert "borrowingLimit must be nil when cohort is empty" in ready["message"], ready
    assert "ClusterQueue/cluster-queue" in ready["message"], ready
    assert applied_revision(ks) == good, ks["status"]

    after = {o["metadata"]["name"]: o for o in kube.list(*CLUSTER_QUEUE)}
    assert set(after) == set(before)
    assert after["cluster-queue"]["metadata"]["generation"] == before["cluster-queue"]["metadata"]["generation"]
    assert after["cluster-queue"]["spec"] == before["cluster-queue"]["spec"]
    lq = queues.local_queue("default")
    assert "ray-on-aks/changed-in" not in (lq["metadata"].get("labels") or {}), "half of the bad commit was applied"
    assert lq["spec"] == lq_before["spec"]
    # Nothing lost: the old queue still admits.
    assert is_true(after["cluster-queue"], "Active")
    queues.submit(rayjob("llm-training", "train-1", "default"))
    queues.wait_admitted("train-1")


def test_switch_to_team_queues_prunes_the_single_queue(run, queues):
    """The one-line layout switch: Flux prunes ClusterQueue cluster-queue and LocalQueue default
    and creates the team queues. A RayJob admitted on the old queue keeps running: Kueue does
    not evict admitted workloads when their queues go, it holds cluster-queue in Terminating
    (finalizer resource-in-use) until the last one is gone, and then it disappears."""
    fleet, kube = run.fleet, run.kube
    queues.submit(rayjob("llm-training", "train-1", "default"))
    wl = queues.wait_admitted("train-1")

    fleet.wc.write(LAYOUT, fleet.wc.read(LAYOUT).replace("../../../overlays/single-queue", "../../../overlays/team-queues"))
    rev = fleet.push("local: switch to team-queues")
    fleet.wait_ready(rev, names=("queues",))

    for name in ("team-a-cq", "team-b-cq"):
        assert is_true(queues.cluster_queue(name), "Active"), name
    for name in ("team-a", "team-b"):
        assert is_true(queues.local_queue(name), "Active"), name
    ks = kube.get(*KUSTOMIZATION, name="queues", namespace=NAMESPACE)
    inventory = {e["id"] for e in ks["status"]["inventory"]["entries"]}
    assert "_cluster-queue_kueue.x-k8s.io_ClusterQueue" not in inventory and "ray_default_kueue.x-k8s.io_LocalQueue" not in inventory
    assert kube.get(*LOCAL_QUEUE, name="default", namespace="ray") is None, "LocalQueue default not pruned"

    old = kube.get(*CLUSTER_QUEUE, name="cluster-queue")
    assert old and old["metadata"].get("deletionTimestamp"), f"cluster-queue should be Terminating: {old and old['metadata']}"
    assert "kueue.x-k8s.io/resource-in-use" in old["metadata"]["finalizers"]
    live_wl = kube.get(*WORKLOAD, name=wl["metadata"]["name"], namespace="ray")
    assert is_true(live_wl, "Admitted") and not is_true(live_wl, "Evicted"), live_wl["status"]
    assert queues.job("train-1")["spec"].get("suspend") is not True, "the running job was suspended by the switch"

    queues.delete("train-1")
    kube.wait_for(*CLUSTER_QUEUE, lambda items: "cluster-queue" not in {i["metadata"]["name"] for i in items} or None,
                  "cluster-queue gone once its last workload is", None, timeouts.DECISION)
