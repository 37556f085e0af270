"""Where pods really land, on the local plane (KWOK nodes from a cluster's Terraform pools, the real
kube-scheduler): the report's scenario outcome and `Finish` judge an admitted job by whether its pods
are bound (harness.kueue.placement, the invariant checker's own test), and a layer's DaemonSet runs
a pod on every matching node, as on AKS."""
from __future__ import annotations

import pytest

from harness.core import REPO_ROOT
from harness.k8s import POD, is_true
from harness.kueue import scenarios
from harness.report import markdown
from harness.report.scenarios import ScenarioRunner
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.integration

UNTOLERATED = "untolerated taint"


@pytest.fixture
def local(backend):
    if backend.name != "local":
        pytest.skip(f"simulated (KWOK) nodes need the local backend; {backend.name} brings its own nodes")


def test_gpu_pool_tainted_without_toleration_is_a_changed_outcome_and_nothing_finishes(local, backend, repo_copy, names, invariants):
    """O#1b/O#2: the GPU pool tainted, no toleration in flavor gpu. Kueue admits train-1 (quota is a sum over nodes); kube-scheduler
    leaves its pods Pending; the step outcome says so with the scheduler's reason, the expectation fails, train-1 does not
    finish (KubeRay would never submit it: its RayCluster is not ready) so train-2 stays pending, and the report lists the
    scenario as changed."""
    edit(repo_copy, "terraform/node_pools.tf", "  node_taints = []\n", '  node_taints = ["nvidia.com/gpu=present:NoSchedule"]\n')
    runner = ScenarioRunner(backend.api_client(), names)
    sc = scenarios.SINGLE_QUEUE
    base = runner.run(sc, REPO_ROOT, "base")
    assert base.passed, (base.error, base.failures, base.outcome())
    assert not any("Pending" in line for line in sum(base.outcome(), [])), base.outcome()
    head = runner.run(sc, repo_copy, "head")
    assert not head.error, head.error
    first, _, done = head.outcome()
    assert first[0].startswith("default: 1 admitted but not running: ") and "pods Pending (" in first[0] and UNTOLERATED in first[0], first
    assert any("train-1 should be admitted, is admitted but does not run:" in f and UNTOLERATED in f for f in head.failures), head.failures
    not_finished = [line for line in done if line.startswith("train-1 not finished: it does not run: ")]
    assert not_finished and UNTOLERATED in not_finished[0], done
    assert "finished" not in done[0] and "pending" in done[0], done  # train-1 holds its quota, train-2 waits
    assert not [e for e in head.recording.events if e.kind == "finished" and e.job.endswith("train-1")], head.recording.events
    data = markdown.ReportData("repo", "main", "a" * 40, "working tree", "b" * 40, [], [sc], {(sc.name, "base"): base, (sc.name, "head"): head})
    assert data.changed_scenarios() == [sc]
    md = markdown.render(data)
    assert "outcome differs at step 1, 2, 3" in md and "No scenario outcome changed" not in md, md
    # Provoked on purpose: the checker saw the same pods unbound (the report's runner has deleted them by now).
    assert any(UNTOLERATED in v for v in invariants.take("not bound after")), invariants.violations


def test_a_daemonset_runs_a_pod_on_every_matching_node(local, kube, nodes, names):
    """O#5: the plane runs kube-controller-manager's daemonset-controller: a DaemonSet's pod is bound to every node its
    nodeSelector matches and becomes Running there (KWOK's pod stages), taking its requests off the node as on AKS."""
    gpu_nodes = [n for n in nodes(REPO_ROOT, "prod-eastus2") if n.startswith("aks-gpupool-")]
    assert gpu_nodes
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    labels = {"app": "dcgm-exporter"}
    container = {"name": "exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:latest",
                 "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}}
    kube.apply({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "dcgm-exporter", "namespace": names.namespace},
                "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                    "nodeSelector": {"accelerator": "nvidia"}, "tolerations": [{"operator": "Exists"}], "containers": [container]}}}})
    try:
        def on_every_gpu_node(pods):
            mine = [p for p in pods if p["metadata"]["name"].startswith("dcgm-exporter-")]
            return mine if sorted(p["spec"].get("nodeName") or "" for p in mine) == gpu_nodes and all(is_true(p, "Ready") for p in mine) else None

        pods = kube.wait_for(*POD, on_every_gpu_node, f"a Running dcgm-exporter pod on each of {gpu_nodes}", names.namespace)
        assert {p["spec"]["nodeName"] for p in pods} == set(gpu_nodes)
    finally:
        kube.delete("apps/v1", "DaemonSet", "dcgm-exporter", names.namespace)
        kube.wait_for(*POD, lambda items: not [p for p in items if p["metadata"]["name"].startswith("dcgm-exporter-")] or None,
                      "the DaemonSet's pods deleted", names.namespace)
