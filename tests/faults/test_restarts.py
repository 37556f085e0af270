"""Component restarts in the middle of team-queues' reclaim: Kueue SIGKILLed, the KubeRay operator
restarted, kube-apiserver restarted (etcd kept). Each run is compared with what Kueue decides when
nothing breaks, and the invariant checker follows the cluster through every restart.

The scenario (as in tests/integration/test_team_queues.py): team A borrows B's idle 4 GPUs with
two 4-GPU RayJobs; team B submits one; Kueue reclaims by evicting one of A's jobs (either: they
are equal), KubeRay tears down its RayCluster, and B's job is admitted.
"""
from __future__ import annotations

import pytest

from harness.k8s.client import condition, is_true, owned_by
from harness.kueue.queues import FOUR_GPUS, RAYCLUSTER, RAYJOB, WORKLOAD, Queues, rayjob

pytestmark = pytest.mark.faults

A_JOBS = ["a-1", "a-2"]


def borrow(queues: Queues) -> None:
    """Team A runs 8 GPUs of work while B is idle: 4 of them borrowed from B."""
    queues.apply_layout("overlays/team-queues")
    for name in A_JOBS:
        queues.submit(rayjob("llm-training", name, "team-a", FOUR_GPUS))
        queues.wait_admitted(name)
    queues.wait_cluster_queue("team-a-cq", lambda c: queues.gpus(c) == "8" and queues.gpus(c, "borrowed") == "4",
                              "8 GPUs in use, 4 borrowed")


def first_eviction(queues: Queues) -> str:
    """Returns the moment Kueue marks one of A's Workloads Evicted (before the RayJob is suspended)."""
    uids = {queues.job(n)["metadata"]["uid"]: n for n in A_JOBS}

    def evicted(items):
        for w in items:
            for ref in w["metadata"].get("ownerReferences") or []:
                if ref.get("uid") in uids and is_true(w, "Evicted"):
                    return uids[ref["uid"]]
        return None

    return queues.kube.wait_for(*WORKLOAD, evicted, "one of team A's Workloads Evicted", queues.namespace, queues.timeout)


def reclaim_settled(queues: Queues) -> dict:
    """Waits until the reclaim is over and returns the end state with the victim named by its role,
    so that runs in which Kueue picked a different (equal) victim compare equal."""
    queues.wait_admitted("b-1")
    victim, _ = queues.wait_one_evicted(A_JOBS)
    survivor = next(n for n in A_JOBS if n != victim)
    queues.wait_pending(victim)
    queues.wait_job(victim, lambda j: (j.get("status") or {}).get("jobDeploymentStatus") == "Suspended",
                    "jobDeploymentStatus Suspended (KubeRay finished suspending it)")
    uids = {queues.job(n)["metadata"]["uid"] for n in (victim, survivor, "b-1")}
    queues.kube.wait_for(*RAYCLUSTER, lambda items: len([c for c in items if any(
        r.get("uid") in uids for r in c["metadata"].get("ownerReferences") or [])]) == 2 or None,
        "two RayClusters: the survivor's and B's (the victim's deleted)", queues.namespace, queues.timeout)
    # ClusterQueue status lags the Workloads: wait until it counts what the Workloads say.
    queues.wait_cluster_queue("team-a-cq", lambda c: c["status"].get("admittedWorkloads") == 1
                              and c["status"].get("pendingWorkloads") == 1, "1 admitted, 1 pending")
    queues.wait_cluster_queue("team-b-cq", lambda c: c["status"].get("admittedWorkloads") == 1, "1 admitted")
    return end_state(queues, {"victim": victim, "survivor": survivor, "b-1": "b-1"})


def end_state(queues: Queues, roles: dict[str, str]) -> dict:
    """What a reviewer would compare between two runs: each job's admission, suspension and
    preemption reason, Workloads per job, RayClusters, and each ClusterQueue's usage."""
    workloads = queues.kube.list(*WORKLOAD, namespace=queues.namespace)
    clusters = queues.kube.list(*RAYCLUSTER, namespace=queues.namespace)
    state: dict = {}
    for role, name in roles.items():
        job = queues.job(name)
        assert job, f"RayJob {name} was lost"
        owned = owned_by(workloads, job["metadata"]["uid"])
        wl = owned[0] if owned else None
        preempted = condition(wl, "Preempted") or {}
        state[role] = {
            "workloads": len(owned),
            "admitted": is_true(wl, "Admitted"),
            "suspended": bool(job["spec"].get("suspend")),
            "jobDeploymentStatus": (job.get("status") or {}).get("jobDeploymentStatus") if role == "victim" else "-",
            "preempted": (preempted.get("status"), preempted.get("reason")),
            "rayclusters": len(owned_by(clusters, job["metadata"]["uid"])),
        }
    for name in ("team-a-cq", "team-b-cq"):
        cq = queues.cluster_queue(name)
        state[name] = {"gpu": queues.gpus(cq), "borrowed": queues.gpus(cq, "borrowed"),
                       "admitted": cq["status"].get("admittedWorkloads"), "pending": cq["status"].get("pendingWorkloads")}
    return state


def reset(queues: Queues) -> None:
    """All RayJobs deleted and their Workloads gone, so a second run starts from the same queues."""
    for job in queues.kube.list(*RAYJOB, namespace=queues.namespace):
        queues.delete(job["metadata"]["name"])
    queues.kube.wait_for(*WORKLOAD, lambda items: not items or None, "all Workloads deleted", queues.namespace, 60)
    queues.kube.wait_for(*RAYCLUSTER, lambda items: not items or None, "all RayClusters deleted", queues.namespace, 60)
    queues.wait_cluster_queue("team-a-cq", lambda c: queues.gpus(c) == "0", "no GPUs in use")


def undisturbed(queues: Queues) -> dict:
    borrow(queues)
    queues.submit(rayjob("batch-inference", "b-1", "team-b", FOUR_GPUS))
    baseline = reclaim_settled(queues)
    reset(queues)
    return baseline


def test_kueue_sigkill_during_reclaim_ends_as_undisturbed(cluster, queues, invariants):
    baseline = undisturbed(queues)
    assert baseline["victim"]["preempted"] == ("True", "InCohortReclamation"), baseline

    borrow(queues)
    queues.submit(rayjob("batch-inference", "b-1", "team-b", FOUR_GPUS))
    victim = first_eviction(queues)
    cluster.restart_kueue(kill=True)  # the eviction is written, the suspend and B's admission may not be
    assert cluster.process("kueue").alive()

    assert reclaim_settled(queues) == baseline, f"victim of the disturbed run: {victim}"
    assert invariants.events > 0


def test_kuberay_restart_while_suspending_still_suspends_and_releases_quota(cluster, queues, invariants):
    borrow(queues)
    queues.submit(rayjob("batch-inference", "b-1", "team-b", FOUR_GPUS))
    victim = first_eviction(queues)
    # KubeRay down from the eviction until Kueue has set spec.suspend: the operator comes back to a
    # RayJob it must suspend and a RayCluster it must delete.
    cluster.restart_kuberay(kill=True, while_down=lambda: queues.wait_job(
        victim, lambda j: j["spec"].get("suspend") is True, "spec.suspend true (set by Kueue)"))

    state = reclaim_settled(queues)
    assert state["victim"] == {"workloads": 1, "admitted": False, "suspended": True, "jobDeploymentStatus": "Suspended",
                               "preempted": ("True", "InCohortReclamation"), "rayclusters": 0}, state
    # Its quota is released: A holds only its own 4 GPUs, B its guaranteed 4.
    assert state["team-a-cq"] == {"gpu": "4", "borrowed": "0", "admitted": 1, "pending": 1}, state
    assert state["team-b-cq"] == {"gpu": "4", "borrowed": "0", "admitted": 1, "pending": 0}, state


def test_apiserver_restart_between_borrow_and_reclaim(cluster, queues, invariants):
    baseline = undisturbed(queues)
    reconnects = invariants.reconnects

    borrow(queues)
    cluster.restart_apiserver()
    queues.submit(rayjob("batch-inference", "b-1", "team-b", FOUR_GPUS))
    assert reclaim_settled(queues) == baseline

    for name in ("kueue", "kuberay-operator", "kube-controller-manager", "etcd"):
        assert cluster.process(name).alive(), cluster.process(name).describe_failure("died across the apiserver restart")
    assert invariants.reconnects > reconnects, "the invariant checker's watches never saw the apiserver go away"


KINDS = [  # every object of the queue layout and of the jobs: what etcd must keep
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"), ("kueue.x-k8s.io/v1beta2", "ClusterQueue"),
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"),
    ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass"), WORKLOAD, RAYJOB, RAYCLUSTER,
]


def snapshot(queues: Queues) -> dict:
    out = {}
    for api_version, kind in KINDS:
        for o in queues.kube.list(api_version, kind):
            meta = o["metadata"]
            out[(kind, meta.get("namespace"), meta["name"])] = (meta["uid"], meta.get("generation"), o.get("spec"))
    return out


def test_etcd_keeps_every_object_across_apiserver_sigkill(cluster, queues, invariants):
    borrow(queues)
    queues.submit(rayjob("batch-inference", "b-1", "team-b", FOUR_GPUS))
    reclaim_settled(queues)
    before = snapshot(queues)
    assert {k[0] for k in before} >= {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload", "RayJob", "RayCluster"}, before.keys()

    cluster.restart_apiserver(kill=True)

    after = snapshot(queues)
    assert after.keys() == before.keys(), f"lost: {sorted(before.keys() - after.keys())}; new: {sorted(after.keys() - before.keys())}"
    changed = [k for k in before if before[k] != after[k]]
    assert not changed, f"changed across the restart (uid, generation or spec): {changed}"
