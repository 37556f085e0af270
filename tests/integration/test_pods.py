"""Pods on nodes: the real kube-scheduler binds the pods KubeRay creates for an admitted RayJob to
KWOK nodes built from a cluster's Terraform pools, and a job ends as it ends on AKS (its result
reported, KubeRay deleting the RayCluster, Kueue freeing the quota for the next job)."""
from __future__ import annotations

import pytest

from harness.core import REPO_ROOT, timeouts
from harness.gate import build_directory, render_sample, validate_repository
from harness.gate.schema_check import kuberay_pods, validate
from harness.k8s import condition, is_true
from harness.kueue import AFTER, Hook, finish_rayjob, pods_running, scenarios
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.integration

GPU_POOL_NODE = "aks-gpupool-"


def _job(sample: str, name: str, queue: str, **values) -> dict:
    return render_sample(sample, queue, {"JOB_NAME": name, **values})


def test_sample_runs_on_the_pools_and_its_end_admits_the_next(layout, queues, kube, nodes, names):
    nodes(REPO_ROOT, "prod-eastus2")
    layout("overlays/team-queues")
    scripts = kube.get("v1", "ConfigMap", "llm-training-scripts", names.namespace)  # base/ applies what the pods mount
    assert scripts and "llm_training.py" in scripts.get("data", {}), "the layer applies the sample's script ConfigMap"
    queues.submit(_job("llm-training", "first", "team-a", NUM_WORKERS="4"))
    queues.wait_admitted("first")
    pods = queues.wait_pods("first", pods_running, "bound and Running")
    workers = [p for p in pods if "-gpu-workers-" in p["metadata"]["name"]]
    assert workers and all(p["spec"]["nodeName"].startswith(GPU_POOL_NODE) for p in workers), \
        [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in pods]

    queues.submit(_job("llm-training", "second", "team-a", NUM_WORKERS="4"))
    queues.wait_pending("second")

    finish_rayjob(kube, "first", names.namespace)
    queues.wait_workload("first", lambda wl: is_true(wl, "Finished"), "Finished (quota freed)")
    queues.wait_pods("first", lambda ps: not [p for p in ps if "-head-" in p["metadata"]["name"]],
                      "head and workers deleted with the RayCluster")
    queues.wait_admitted("second")
    queues.wait_pods("second", pods_running, "bound and Running")


def test_tainted_gpu_pool_without_toleration_pends_and_the_gate_names_the_flavor(repo_copy, layout, queues, kube, nodes, names, invariants):
    edit(repo_copy, "terraform/node_pools.tf", "  node_taints = []\n", '  node_taints = ["sku=gpu:NoSchedule"]\n')
    nodes(repo_copy, "prod-eastus2")
    queues.apply_objects(build_directory(repo_copy, "overlays/team-queues"))
    queues.submit(_job("batch-inference", "tainted", "team-b"))
    queues.wait_admitted("tainted")  # quota is a sum over nodes: Kueue says yes

    def unschedulable(pods):
        return (any("-gpu-workers-" in p["metadata"]["name"] for p in pods)
                and all((condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable" for p in pods))
    pods = queues.wait_pods("tainted", unschedulable, "head and GPU workers Unschedulable")
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
    queues.wait_pods("tainted", lambda ps: not ps, "deleted")
    reported = invariants.take("of an admitted workload (ClusterQueue team-b-cq) not bound")
    assert reported and all("tainted-" in v for v in reported), reported

    # The fix the gate names, in two parts. With only the toleration in flavor gpu, the GPU workers
    # could run, but the head (flavor default, no toleration) has no untainted pool with nodes.
    edit(repo_copy, "base/resource-flavors.yaml", "    kubernetes.azure.com/accelerator: nvidia\n",
          "    kubernetes.azure.com/accelerator: nvidia\n  tolerations:\n    - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}\n")
    prod = [f for f in validate_repository(repo_copy).findings if "prod-eastus2" in f.context and f.rule.startswith("capacity-")]
    assert [f.rule for f in prod] == ["capacity-empty-pool"] and "head" in prod[0].message, prod
    # With a CPU node as well, Kueue injects the toleration at admission and every pod is placed.
    (repo_copy / "terraform/clusters/prod-eastus2.tfvars").write_text(
        (repo_copy / "terraform/clusters/prod-eastus2.tfvars").read_text() + "cpu_node_count = 1\n")
    assert not [f for f in validate_repository(repo_copy).findings if "prod-eastus2" in f.context and f.rule.startswith("capacity-")]
    nodes(repo_copy, "prod-eastus2")
    queues.apply_objects(build_directory(repo_copy, "overlays/team-queues"))
    queues.submit(_job("batch-inference", "tolerated", "team-b"))
    queues.wait_admitted("tolerated")
    pods = queues.wait_pods("tolerated", pods_running, "bound and Running")
    on = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
    assert all(node.startswith(GPU_POOL_NODE) for pod, node in on.items() if "-gpu-workers-" in pod), on
    assert all(node.startswith("aks-cpupool-") for pod, node in on.items() if "-head-" in pod), on


def test_pod_bigger_than_any_node_is_admitted_by_quota_but_never_scheduled(two_gpu_worker, layout, queues, kube, nodes, names, invariants):
    """Two Standard_NC24ads_A100_v4 nodes (1 GPU each), quota for both, and a worker asking for
    2 GPUs: the quota, a sum over nodes, admits it; no node can take the pod; the checker and the
    gate both say so."""
    repo_copy = two_gpu_worker
    nodes(repo_copy, "dev-westus3")
    queues.apply_objects(build_directory(repo_copy, "clusters/dev-westus3/queues"))
    queues.submit(render_sample("aurora-finetune", "default", {"JOB_NAME": "two-gpus"}, repo_copy))
    queues.wait_admitted("two-gpus")

    def worker_unschedulable(pods):
        return any("-gpu-workers-" in p["metadata"]["name"] and (condition(p, "PodScheduled") or {}).get("reason") == "Unschedulable"
                   for p in pods)
    pods = queues.wait_pods("two-gpus", worker_unschedulable, "GPU worker Unschedulable")
    worker = next(p for p in pods if "-gpu-workers-" in p["metadata"]["name"])
    assert "Insufficient nvidia.com/gpu" in condition(worker, "PodScheduled")["message"], condition(worker, "PodScheduled")
    reported = invariants.wait_for_violation("two-gpus", timeouts.POD_BOUND + timeouts.DECISION)
    assert any("Insufficient nvidia.com/gpu" in v for v in reported), invariants.violations

    findings = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-pod-fits-node"]
    assert any(f.file == "workloads/aurora-finetune.yaml" and "nvidia.com/gpu 2" in f.message for f in findings), findings

    queues.remove_jobs()
    queues.wait_pods("two-gpus", lambda ps: not ps, "deleted")
    assert invariants.take("two-gpus")


def test_a_sidecar_mode_head_pod_is_the_one_the_gate_builds(layout, queues, kube, nodes, names):
    """SidecarMode: KubeRay adds its submitter container to the head pod. The head pod the real operator creates has the
    containers, with their resources, that the gate's pods (tools/kubecheck) give it, and is bound on the cluster's nodes."""
    nodes(REPO_ROOT, "dev-westus3")
    layout("overlays/single-queue")
    job = _job("batch-inference", "sidecar", "default")
    job["spec"].pop("submitterPodTemplate", None)
    job["spec"]["submissionMode"] = "SidecarMode"
    queues.submit(job)
    queues.wait_admitted("sidecar")
    heads = lambda ps: [p for p in ps if "-head-" in p["metadata"]["name"] and p["spec"].get("nodeName")]  # noqa: E731
    head = heads(queues.wait_pods("sidecar", heads, "the head pod bound"))[0]
    offline = kuberay_pods([job])[0]["head"]
    shape = lambda pod: [(c["name"], c.get("resources") or {}) for c in pod["spec"]["containers"]]  # noqa: E731
    assert shape(head) == shape(offline) and len(shape(head)) == 2, (shape(head), shape(offline))
    queues.remove_jobs()
    queues.wait_pods("sidecar", lambda ps: not ps, "deleted")


def test_reclaim_with_pods_on_nodes(scenario, kube, queues, nodes, names):
    """The team-queues scenario on the production cluster's pools. After the reclaim, the preempted
    job's pods are gone and the survivor's and B's run (every pod bound: the checker's invariant).
    When B finishes, Kueue frees its quota at once and re-admits A's job; KubeRay deletes B's
    RayCluster as the job ends (the samples' ttlSecondsAfterFinished: 0), so the re-admitted job's
    GPU workers are placed. With the 300 s the samples had, they waited Pending for B's GPUs
    (found by this test; the gate's sample-ttl-holds-nodes warns of it now)."""
    assert scenarios.TEAM_QUEUES.cluster == "prod-eastus2"  # the scenario fixture adds its nodes (`nodes`: local only)
    seen = {}

    def after_reclaim(run):
        victim = run.roles["victim"]
        seen["victim"] = queues.wait_pods(victim, lambda ps: not [p for p in ps if "-head-" in p["metadata"]["name"]],
                               "the preempted job's head and workers gone")
        for job in (run.roles["survivor"], "b-1"):
            seen[job] = queues.wait_pods(job, pods_running, "bound and Running")

    result = scenario(scenarios.TEAM_QUEUES, [Hook(AFTER, after_reclaim, step="reclaim")])
    victim = result.roles["victim"]
    assert seen["b-1"] and not [p for p in seen["victim"] if "-head-" in p["metadata"]["name"]]
    assert queues.job("b-1")["status"]["jobDeploymentStatus"] == "Complete"
    queues.wait_pods("b-1", lambda ps: not ps, "b-1's RayCluster deleted as the job ended")
    queues.wait_pods(victim, pods_running, "the re-admitted job bound and Running")


@pytest.mark.parametrize("replicas,bounds,rule,said", [
    (1, 2, "kueue-unaccounted-pods", "Kueue charges the queue for 1 pod(s) (replicas 1), KubeRay creates 2"),
    (2, 1, "kueue-idle-quota", "Kueue charges the queue for 2 pod(s) (replicas 2), KubeRay creates 1"),
], ids=["below-min-replicas", "above-max-replicas"])
def test_worker_pods_kueue_charges_and_kuberay_creates_are_what_the_gate_says(layout, queues, nodes, replicas, bounds, rule, said):
    """A worker group whose replicas are outside [minReplicas, maxReplicas]: the gate says Kueue charges `replicas`
    workers and KubeRay creates `bounds` of them; on the real components the ClusterQueue holds `replicas` GPUs while
    `bounds` GPU workers run (below: pods outside the quota; above: quota no pod uses)."""
    nodes(REPO_ROOT, "prod-eastus2")
    layout("overlays/team-queues")
    job = _job("batch-inference", "accounting", "team-b")
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(replicas=replicas, minReplicas=bounds, maxReplicas=bounds)
    (problem,) = validate([job])
    assert problem is not None and problem.rule == rule and said in problem.errors[0]["message"], problem
    queues.submit(job)
    wl = queues.wait_admitted("accounting")
    assert {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]}.get("gpu-workers") == replicas, wl["spec"]["podSets"]

    def workers_running(pods):
        return len([p for p in pods if "-gpu-workers-" in p["metadata"]["name"]]) == bounds and pods_running(pods)
    queues.wait_pods("accounting", workers_running, f"{bounds} GPU worker(s) bound and Running")
    queues.wait_cluster_queue("team-b-cq", lambda cq: queues.gpus(cq) == str(replicas), f"{replicas} GPU(s) in use (the workers Kueue charged)")


def test_an_unlabelled_rayjob_where_a_default_localqueue_exists_is_queued_as_the_gate_says(layout, queues, nodes):
    """Kueue's mutating webhook labels a RayJob without a queue-name label for its namespace's LocalQueue `default`
    (LocalQueueDefaulting): the gate judges it as queued (here: kueue-unaccounted-pods) and the real Kueue admits it."""
    nodes(REPO_ROOT, "prod-eastus2")
    layout("overlays/single-queue")  # its LocalQueue is named default
    job = _job("batch-inference", "unlabelled", "default")
    job["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(replicas=1, minReplicas=2, maxReplicas=2)
    default = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "default", "namespace": job["metadata"]["namespace"]}}
    assert validate([job]) == [None], "without a default LocalQueue, Kueue leaves the job alone"
    (problem,) = validate([job], [[default]])
    assert problem is not None and problem.rule == "kueue-unaccounted-pods", problem
    queues.submit(job)
    queues.wait_job("unlabelled", lambda j: (j["metadata"].get("labels") or {}).get("kueue.x-k8s.io/queue-name") == "default",
                    "labelled for LocalQueue default by Kueue's webhook")
    queues.wait_admitted("unlabelled")


def test_kwok_renews_every_nodes_lease_as_a_kubelet_does(kube, nodes):
    """Without renewed Leases the node-lifecycle controller turns every node NotReady after its
    grace period (50 s) and marks the pods on it not Ready, which KWOK never undoes: a long run's
    jobs would never finish (the invariant checker reports such a node)."""
    names = set(nodes(REPO_ROOT, "prod-eastus2"))

    def renewals(items: list[dict]) -> dict[str, str]:
        return {i["metadata"]["name"]: (i.get("spec") or {}).get("renewTime") for i in items
                if i["metadata"]["name"] in names and (i.get("spec") or {}).get("holderIdentity")}  # KWOK's own identity

    first = kube.wait_for("coordination.k8s.io/v1", "Lease", lambda items: (r := renewals(items)).keys() == names and r,
                          "a Lease held (by KWOK) for every node", "kube-node-lease", timeouts.NODES_READY)
    renewed = kube.wait_for("coordination.k8s.io/v1", "Lease",
                            lambda items: all(t and t != first[n] for n, t in renewals(items).items()) and renewals(items).keys() == names,
                            "every node's Lease renewed (KWOK renews at a quarter of the 40 s lease)", "kube-node-lease", 30)
    assert renewed
    assert all(is_true(n, "Ready") for n in kube.list("v1", "Node") if n["metadata"]["name"] in names)
