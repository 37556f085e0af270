"""Pods on nodes: the real kube-scheduler binds the pods KubeRay creates for an admitted RayJob to
KWOK nodes built from a cluster's Terraform pools, and a job ends as it ends on AKS (its result
reported, KubeRay deleting the RayCluster, Kueue freeing the quota for the next job)."""
from __future__ import annotations

import pytest

from harness.cluster import add_nodes, remove_nodes
from harness.core import REPO_ROOT, timeouts
from harness.gate import build_directory, render_sample, validate_repository
from harness.k8s import POD, condition, is_true
from harness.kueue import AFTER, Hook, finish_rayjob, scenarios

pytestmark = pytest.mark.integration

GPU_POOL_NODE = "aks-gpupool-"


@pytest.fixture
def nodes(kube, backend, queues, names):
    """nodes(root, cluster): that cluster's pool nodes on the local plane; afterwards the test's
    jobs and their pods go first (KWOK plays the kubelet that lets a bound pod go), then the nodes."""
    if backend.name != "local":
        pytest.skip(f"simulated (KWOK) nodes need the local backend; {backend.name} brings its own nodes")
    added: list[str] = []

    def add(root, cluster: str) -> list[str]:
        added.extend(add_nodes(kube, root, cluster))
        return added

    yield add
    queues.remove_jobs()
    kube.wait_for(*POD, lambda items: not items or None, "the test's pods deleted", names.namespace, timeouts.DECISION)
    remove_nodes(kube, added)


def _job(sample: str, name: str, queue: str, **values) -> dict:
    job = render_sample(sample, queue, {"JOB_NAME": name, **values})
    job["spec"]["ttlSecondsAfterFinished"] = 0  # delete the RayCluster as soon as the job ends
    return job


def _pods(kube, namespace: str, job: str, test, describe: str, timeout: float = timeouts.DECISION) -> list[dict]:
    """The pods of RayJob `job` (head, workers and submitter, by name prefix) once `test(pods)` holds."""
    def check(items):
        mine = [p for p in items if p["metadata"]["name"].startswith(job + "-")]
        return (mine,) if test(mine) else None  # a tuple: an empty list of pods is an answer too
    return kube.wait_for(*POD, check, f"pods of {job}: {describe}", namespace, timeout)[0]


def _running(pods: list[dict]) -> bool:
    return len(pods) >= 3 and all(p["spec"].get("nodeName") and is_true(p, "Ready") for p in pods)


def test_sample_runs_on_the_pools_and_its_end_admits_the_next(layout, queues, kube, nodes, names):
    nodes(REPO_ROOT, "prod-eastus2")
    layout("overlays/team-queues")
    queues.submit(_job("llm-training", "first", "team-a", NUM_WORKERS="4"))
    queues.wait_admitted("first")
    pods = _pods(kube, names.namespace, "first", _running, "bound and Running")
    workers = [p for p in pods if "-gpu-workers-" in p["metadata"]["name"]]
    assert workers and all(p["spec"]["nodeName"].startswith(GPU_POOL_NODE) for p in workers), \
        [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in pods]

    queues.submit(_job("llm-training", "second", "team-a", NUM_WORKERS="4"))
    queues.wait_pending("second")

    finish_rayjob(kube, "first", names.namespace)
    queues.wait_workload("first", lambda wl: is_true(wl, "Finished"), "Finished (quota freed)")
    _pods(kube, names.namespace, "first", lambda ps: not [p for p in ps if "-head-" in p["metadata"]["name"]],
          "head and workers deleted with the RayCluster")
    queues.wait_admitted("second")
    _pods(kube, names.namespace, "second", _running, "bound and Running")


def test_tainted_gpu_pool_without_toleration_pends_and_the_gate_names_the_flavor(repo_copy, queues, kube, nodes, names, invariants):
    tf = repo_copy / "terraform/node_pools.tf"
    tf.write_text(tf.read_text().replace("  node_taints = []\n", '  node_taints = ["sku=gpu:NoSchedule"]\n', 1))
    nodes(repo_copy, "prod-eastus2")
    queues.apply_objects(build_directory(repo_copy, "overlays/team-queues"))
    queues.submit(_job("batch-inference", "tainted", "team-b"))
    queues.wait_admitted("tainted")  # quota is a sum over nodes: Kueue says yes

    def unschedulable(pods):
        return (any("-gpu-workers-" in p["metadata"]["name"] for p in pods)
                and all((condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable" for p in pods))
    pods = _pods(kube, names.namespace, "tainted", unschedulable, "head and GPU workers Unschedulable")
    worker = next(p for p in pods if "-gpu-workers-" in p["metadata"]["name"])
    assert "untolerated taint" in condition(worker, "PodScheduled")["message"], condition(worker, "PodScheduled")

    # The checker reports the pods left unbound, with the scheduler's reason.
    reported = invariants.wait_for_violation("not bound after", timeouts.POD_BOUND + timeouts.DECISION)
    assert any("untolerated taint" in v and "tainted-" in v for v in reported), invariants.violations

    # The static gate names the same cause for the same change: flavor gpu tolerates no GPU node.
    findings = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-flavor-labels"]
    assert any(f.file == "base/resource-flavors.yaml" and "flavor gpu" in f.message for f in findings), findings

    # Provoked on purpose: once the job is gone, only these violations may be set aside.
    queues.remove_jobs()
    _pods(kube, names.namespace, "tainted", lambda ps: not ps, "deleted")
    reported = invariants.take("of an admitted workload (ClusterQueue team-b-cq) not bound")
    assert reported and all("tainted-" in v for v in reported), reported


def test_reclaim_with_pods_on_nodes_and_the_ttl_gap(scenario, kube, queues, nodes, names, invariants):
    """The team-queues scenario on the production cluster's pools. After the reclaim, the preempted
    job's pods are gone and the survivor's and B's run (every pod bound: the checker's invariant).
    When B finishes, Kueue frees its quota at once and re-admits A's job, but KubeRay keeps B's
    RayCluster for the samples' ttlSecondsAfterFinished (300 s): the re-admitted job's GPU workers
    cannot be placed until then. The test pins that gap; the checker reports it."""
    nodes(REPO_ROOT, "prod-eastus2")
    seen = {}

    def after_reclaim(run):
        victim = run.roles["victim"]
        seen["victim"] = _pods(kube, names.namespace, victim, lambda ps: not [p for p in ps if "-head-" in p["metadata"]["name"]],
                               "the preempted job's head and workers gone")
        for job in (run.roles["survivor"], "b-1"):
            seen[job] = _pods(kube, names.namespace, job, _running, "bound and Running")

    result = scenario(scenarios.TEAM_QUEUES, [Hook(AFTER, after_reclaim, step="reclaim")])
    victim = result.roles["victim"]
    assert seen["b-1"] and not [p for p in seen["victim"] if "-head-" in p["metadata"]["name"]]

    gap = invariants.wait_for_violation(f"pod {names.namespace}/{victim}-", timeouts.POD_BOUND + timeouts.DECISION)
    assert any("Insufficient nvidia.com/gpu" in v for v in gap), invariants.violations
    assert queues.job("b-1")["status"]["jobDeploymentStatus"] == "Complete"
    assert [p for p in _pods(kube, names.namespace, "b-1", lambda ps: True, "listed") if "-gpu-workers-" in p["metadata"]["name"]], \
        "b-1's RayCluster (and its GPU pods) outlive the job until ttlSecondsAfterFinished"
    queues.remove_jobs()
    kube.wait_for(*POD, lambda items: not items or None, "every pod deleted", names.namespace, timeouts.DECISION)
    assert all(victim in v for v in invariants.take("not bound after")), invariants.violations
