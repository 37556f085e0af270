"""team-queues: guaranteed quota per team, borrowing from the idle team, reclaim by preemption.

The Azure sample's scenario table says team A gets all 8 GPUs while B is idle. With the sample's
own llm-training (68 CPU for 4 GPUs) that cannot happen: two of them need 136 CPU and the whole
cohort has 96, so CPU, not GPU, runs out first (test_sample_workloads_run_out_of_cpu_first).
The scenarios below therefore use RayJobs sized 34 CPU / 264Gi / 4 GPU, so that each documented
scenario is exercised for real.
"""
from __future__ import annotations

import pytest

from harness.k8s.client import condition, is_true
from harness.kueue.queues import FOUR_GPUS, rayjob

pytestmark = pytest.mark.integration


@pytest.fixture
def gpus(queues):
    """GPUs a ClusterQueue status reports in use (or borrowed)."""
    return queues.gpus


def test_borrow_reclaim_and_readmit(layout, queues, gpus):
    layout("overlays/team-queues")

    # (a) Team A submits 8 GPUs of work while B is idle: both admitted, 4 GPUs borrowed.
    queues.submit(rayjob("llm-training", "a-1", "team-a", FOUR_GPUS))
    queues.wait_admitted("a-1")
    queues.submit(rayjob("llm-training", "a-2", "team-a", FOUR_GPUS))
    queues.wait_admitted("a-2")
    cq_a = queues.wait_cluster_queue("team-a-cq", lambda c: gpus(c) == "8" and gpus(c, "borrowed") == "4", "8 GPUs in use, 4 borrowed")
    assert cq_a["status"]["admittedWorkloads"] == 2

    # (b) Team B submits 4 GPUs while A uses 8: Kueue reclaims B's lent GPUs by evicting one A
    # workload (either: both are equal and were admitted within the same second), suspends
    # that RayJob, and admits B.
    queues.submit(rayjob("batch-inference", "b-1", "team-b", FOUR_GPUS))
    victim, evicted = queues.wait_one_evicted(["a-1", "a-2"])
    survivor = "a-2" if victim == "a-1" else "a-1"
    preempted = condition(evicted, "Preempted")
    assert preempted and preempted["status"] == "True" and preempted["reason"] == "InCohortReclamation", preempted
    assert condition(evicted, "Evicted")["reason"] == "Preempted"
    queues.wait_admitted("b-1")
    assert is_true(queues.workload(survivor), "Admitted"), "A's workload within its guarantee must keep running"
    queues.wait_cluster_queue("team-b-cq", lambda c: gpus(c) == "4" and gpus(c, "borrowed") == "0", "B holds its guaranteed 4")

    # (c) Both busy: each team holds exactly its 4, nobody borrows; A's evicted job waits.
    queues.wait_pending(victim)
    queues.wait_cluster_queue("team-a-cq", lambda c: gpus(c) == "4" and gpus(c, "borrowed") == "0"
                              and c["status"].get("pendingWorkloads") == 1, "A holds 4, 1 pending")

    # B finishes: its GPUs are idle again and A's preempted job is re-admitted by borrowing.
    queues.delete("b-1")
    queues.wait_admitted(victim)
    queues.wait_cluster_queue("team-a-cq", lambda c: gpus(c) == "8" and gpus(c, "borrowed") == "4", "A borrows again")


def test_sample_workloads_run_out_of_cpu_first(layout, queues, gpus):
    """The sample's llm-training as shipped: the second one on team A pends on CPU, not GPU."""
    layout("overlays/team-queues")
    queues.submit(rayjob("llm-training", "llm-1", "team-a"))
    queues.wait_admitted("llm-1")  # 68 CPU: 48 guaranteed + 20 borrowed
    queues.submit(rayjob("llm-training", "llm-2", "team-a"))
    message = condition(queues.wait_pending("llm-2"), "QuotaReserved")["message"]
    assert f"insufficient unused quota for cpu in flavor {queues.names.flavor('default')}" in message, message
    cq = queues.wait_cluster_queue("team-a-cq", lambda c: queues.usage(c, "default", "cpu", "borrowed") == "20", "20 CPU borrowed")
    assert gpus(cq) == "4" and gpus(cq, "borrowed") == "0"
