"""Component restarts in the middle of team-queues' reclaim: Kueue SIGKILLed, the KubeRay operator
restarted, kube-apiserver restarted (etcd kept), kube-scheduler SIGKILLed, KWOK (the simulated
kubelets) SIGKILLed. Each run is compared with what Kueue decides when nothing breaks, and the
invariant checker follows the cluster through every restart. The runs have pods: the production
cluster's pool nodes are on the plane, so every admitted job's pods must be bound (the checker's
invariant) and a preempted job's pods must go.

The scenario is the integration tests' (harness.kueue.scenarios.TEAM_QUEUES): team A borrows B's
idle 4 GPUs with two 4-GPU RayJobs; team B submits one; Kueue reclaims by evicting one of A's jobs
(either: they are equal, so runs compare by role), KubeRay tears down its RayCluster, and B's job
is admitted; when B is done A's job is re-admitted. The fault is injected at a named step.
"""
from __future__ import annotations

import pytest

from harness.cluster import PoolNodes, production_kueue_config
from harness.core import REPO_ROOT, releases, versions
from harness.k8s import CLUSTER_QUEUE, LOCAL_QUEUE, PRIORITY_CLASS, RAYCLUSTER, RAYJOB, RESOURCE_FLAVOR, WORKLOAD
from harness.kueue import ACTED, AFTER, BEFORE, Hook, Queues, ScenarioRun, pods_running, run_scenario, scenarios

pytestmark = pytest.mark.faults

TEAM_QUEUES = scenarios.TEAM_QUEUES
A_JOBS = list(scenarios.TEAM_A_JOBS)

KUEUE = versions.module("kueue")[1]  # the running Kueue (a candidate under `make rehearse`)


def configuration_as_upgraded() -> dict | None:
    """The Kueue Configuration the fault tests run with: the production HelmRelease's
    (None) while the running Kueue lacks the fix of kueue#10901; from 0.18 (kueue#11296), the same
    without the `FinishOrphanedWorkloads: false` workaround, so that the rehearsal of a candidate
    tells whether the workaround can go (harness.core.releases: finish-orphaned-workloads-fixed)."""
    if not releases.has("kueue", "finish-orphaned-workloads-fixed", KUEUE):
        return None
    config = production_kueue_config()
    gates = {k: v for k, v in (config.get("featureGates") or {}).items() if k != "FinishOrphanedWorkloads"}
    return {**{k: v for k, v in config.items() if k != "featureGates"}, **({"featureGates": gates} if gates else {})}


@pytest.fixture
def kueue_config():
    """Every fault test here runs Kueue as the upgrade would configure it (tests/conftest.py fresh_cluster)."""
    return configuration_as_upgraded()


@pytest.fixture
def team_queues(queues, kube):
    """The layout on the cluster and the production cluster's pool nodes; every run starts from no jobs."""
    queues.apply_layout(TEAM_QUEUES.layout)
    PoolNodes(kube, queues.namespace).add(REPO_ROOT, TEAM_QUEUES.cluster)  # the cluster is the test's own: no removal
    return queues


def states(result: ScenarioRun) -> dict:
    """Per step, who is admitted, suspended, preempted and why, by role, and each queue's usage."""
    return {s.name: s.state for s in result.steps}


def undisturbed(queues: Queues) -> ScenarioRun:
    baseline = run_scenario(queues, TEAM_QUEUES)
    queues.remove_jobs()  # so the next run starts from the same queues
    queues.wait_cluster_queue("team-a-cq", lambda c: queues.gpus(c) == "0", "no GPUs in use")
    return baseline


def at_first_eviction(queues: Queues, fault) -> Hook:
    """Once team B has submitted: the moment Kueue marks one of A's Workloads Evicted (before the
    RayJob is suspended), fault(victim) runs."""
    def inject(run: ScenarioRun) -> None:
        victim, _ = queues.wait_one_evicted(A_JOBS, suspended=False)
        fault(victim)

    return Hook(ACTED, inject, step="reclaim")


def test_kueue_sigkill_during_reclaim_ends_as_undisturbed(cluster, invariants, team_queues):
    baseline = undisturbed(team_queues)
    assert baseline["reclaim"].state["victim"]["preempted"] == ("True", "InCohortReclamation"), states(baseline)
    victims = []

    def kill_kueue(victim: str) -> None:
        victims.append(victim)
        cluster.restart_kueue(kill=True)  # the eviction is written, the suspend and B's admission may not be
        assert cluster.process("kueue").alive()

    disturbed = run_scenario(team_queues, TEAM_QUEUES, [at_first_eviction(team_queues, kill_kueue)])
    assert victims, "Kueue was never killed"
    assert states(disturbed) == states(baseline), f"victim of the disturbed run: {victims[0]}"
    assert invariants.events > 0


def test_kuberay_restart_while_suspending_still_suspends_and_releases_quota(cluster, invariants, team_queues):
    def kuberay_down_until_suspended(victim: str) -> None:
        # KubeRay down from the eviction until Kueue has set spec.suspend: the operator comes back
        # to a RayJob it must suspend and a RayCluster it must delete.
        cluster.restart_kuberay(kill=True, while_down=lambda: team_queues.wait_job(
            victim, lambda j: j["spec"].get("suspend") is True, "spec.suspend true (set by Kueue)"))

    state = run_scenario(team_queues, TEAM_QUEUES, [at_first_eviction(team_queues, kuberay_down_until_suspended)])["reclaim"].state
    assert state["victim"] == {"workloads": 1, "admitted": False, "suspended": True, "jobDeploymentStatus": "Suspended",
                               "preempted": ("True", "InCohortReclamation"), "rayclusters": 0}, state
    # Its quota is released: A holds only its own 4 GPUs, B its guaranteed 4.
    assert state["team-a-cq"] == {"gpu": "4", "borrowed": "0", "admitted": 1, "pending": 1}, state
    assert state["team-b-cq"] == {"gpu": "4", "borrowed": "0", "admitted": 1, "pending": 0}, state


def test_apiserver_restart_between_borrow_and_reclaim(cluster, invariants, team_queues):
    """An AKS control-plane upgrade restarts kube-apiserver. Below Kueue 0.18 with the production
    workaround; from 0.18 with FinishOrphanedWorkloads as Kueue ships it (on, fixed)."""
    gates = cluster.kueue_config.get("featureGates") or {}
    if releases.has("kueue", "finish-orphaned-workloads-fixed", KUEUE):
        assert "FinishOrphanedWorkloads" not in gates, gates  # Kueue's own default: on, with the fix
    else:
        assert gates.get("FinishOrphanedWorkloads") is False, gates  # the workaround (kueue#10901)
    baseline = undisturbed(team_queues)
    reconnects = invariants.reconnects

    disturbed = run_scenario(team_queues, TEAM_QUEUES, [Hook(BEFORE, lambda run: cluster.restart_apiserver(), step="reclaim")])
    assert states(disturbed) == states(baseline)

    for name in ("kueue", "kuberay-operator", "kube-controller-manager", "etcd"):
        assert cluster.process(name).alive(), cluster.process(name).describe_failure("died across the apiserver restart")
    assert invariants.reconnects > reconnects, "the invariant checker's watches never saw the apiserver go away"


def unbound(pods: list[dict]) -> bool:
    return len(pods) >= 3 and not any(p["spec"].get("nodeName") for p in pods)


def head_bound_not_started(pods: list[dict]) -> bool:
    """The head bound by the scheduler, but no kubelet has started it (KWOK is down)."""
    heads = [p for p in pods if "-head-" in p["metadata"]["name"]]
    return bool(heads) and all(p["spec"].get("nodeName") and p.get("status", {}).get("phase") == "Pending" for p in heads)


def bs_pods_run(when: str) -> Hook:
    """Once the reclaim step's decisions are in: b-1's head, workers and submitter bound and Running."""
    return Hook(AFTER, lambda run: run.queues.wait_pods("b-1", pods_running, f"bound and Running {when}"), step="reclaim")


def test_scheduler_sigkill_during_reclaim_binds_bs_pods_once_back(cluster, invariants, team_queues):
    """kube-scheduler SIGKILLed at the eviction and kept down until KubeRay has created b-1's pods:
    they wait unbound; the restarted scheduler binds them within the checker's bound, and the run
    ends as undisturbed."""
    baseline = undisturbed(team_queues)
    waited = []

    def scheduler_down_until_bs_pods_wait(victim: str) -> None:
        cluster.restart_node_component("kube-scheduler", while_down=lambda: waited.append(
            team_queues.wait_pods("b-1", unbound, "created by KubeRay, unbound (no scheduler)")))

    disturbed = run_scenario(team_queues, TEAM_QUEUES, [at_first_eviction(team_queues, scheduler_down_until_bs_pods_wait),
                                                        bs_pods_run("after the scheduler's restart")])
    assert waited and waited[0], "b-1's pods were never seen waiting for the scheduler"
    assert states(disturbed) == states(baseline)
    assert cluster.process("kube-scheduler").alive()


def test_kwok_sigkill_during_reclaim_runs_bs_pods_once_back(cluster, invariants, team_queues):
    """KWOK (every simulated kubelet) SIGKILLed at the eviction and kept down until the scheduler
    has bound b-1's head: bound, but nothing starts it, and the victim's deleted pods linger (no
    kubelet confirms them gone), holding the GPU node's GPUs against b-1's workers. The restarted
    KWOK lets the victim's pods go and runs b-1's, the nodes stay Ready, and the run ends as
    undisturbed."""
    baseline = undisturbed(team_queues)
    waited = []

    def kwok_down_until_bs_pods_bound(victim: str) -> None:
        cluster.restart_node_component("kwok", while_down=lambda: waited.append(
            team_queues.wait_pods("b-1", head_bound_not_started, "head bound by the scheduler, not started (no kubelet)")))

    disturbed = run_scenario(team_queues, TEAM_QUEUES, [at_first_eviction(team_queues, kwok_down_until_bs_pods_bound),
                                                        bs_pods_run("once KWOK is back")])
    assert waited and waited[0], "b-1's head was never seen bound and waiting for a kubelet"
    assert states(disturbed) == states(baseline)
    # While KWOK was down the victim's deleted pods held the GPU node's GPUs, so b-1's workers may
    # have waited unbound past the checker's bound (on a slow machine): the outage's own effect,
    # and the only one allowed. bs_pods_run above has already seen them bound and Running.
    held_back = invariants.take("Insufficient nvidia.com/gpu")
    assert all("/b-1-" in v and "gpu-workers" in v for v in held_back), held_back
    nodes = team_queues.kube.list("v1", "Node")
    assert nodes and all(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"]) for n in nodes), \
        [(n["metadata"]["name"], n["status"].get("conditions")) for n in nodes]


KINDS = [RESOURCE_FLAVOR, CLUSTER_QUEUE, LOCAL_QUEUE, PRIORITY_CLASS, WORKLOAD, RAYJOB, RAYCLUSTER]  # what etcd must keep


def snapshot(queues: Queues) -> dict:
    out = {}
    for api_version, kind in KINDS:
        for o in queues.kube.list(api_version, kind):
            meta = o["metadata"]
            out[(kind, meta.get("namespace"), meta["name"])] = (meta["uid"], meta.get("generation"), o.get("spec"))
    return out


def test_etcd_keeps_every_object_across_apiserver_sigkill(cluster, invariants, team_queues):
    run_scenario(team_queues, TEAM_QUEUES, until="reclaim")
    before = snapshot(team_queues)
    assert {k[0] for k in before} >= {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload", "RayJob", "RayCluster"}, before.keys()

    cluster.restart_apiserver(kill=True)

    after = snapshot(team_queues)
    assert after.keys() == before.keys(), f"lost: {sorted(before.keys() - after.keys())}; new: {sorted(after.keys() - before.keys())}"
    changed = [k for k in before if before[k] != after[k]]
    assert not changed, f"changed across the restart (uid, generation or spec): {changed}"
