"""team-queues: guaranteed quota per team, borrowing from the idle team, reclaim by preemption
(harness.kueue.scenarios: TEAM_QUEUES, SAMPLE_CPU_FIRST; every step's expectations are awaited).

The Azure sample's scenario table says team A gets all 8 GPUs while B is idle. With the sample's
own llm-training (68 CPU for 4 GPUs) that cannot happen: two of them need 136 CPU and the whole
cohort has 96, so CPU, not GPU, runs out first (test_sample_workloads_run_out_of_cpu_first).
The scenarios therefore use RayJobs sized 34 CPU / 264Gi / 4 GPU, so that each documented
scenario is exercised for real.
"""
from __future__ import annotations

import pytest

from harness.kueue import scenarios

pytestmark = pytest.mark.integration


def test_borrow_reclaim_and_readmit(scenario):
    result = scenario(scenarios.TEAM_QUEUES)

    # (a) Team A submits 8 GPUs of work while B is idle: both admitted, 4 GPUs borrowed.
    borrow = result["borrow"].state
    assert borrow["team-a-cq"] == {"gpu": "8", "borrowed": "4", "admitted": 2, "pending": 0}, borrow
    assert all(borrow[j]["admitted"] and borrow[j]["rayclusters"] == 1 for j in ("a-1", "a-2")), borrow

    # (b) Team B submits 4 GPUs while A uses 8: Kueue reclaims B's lent GPUs by evicting one of
    # A's workloads (either: they are equal; compared by role), suspends it and admits B.
    assert {result.roles["victim"], result.roles["survivor"]} == {"a-1", "a-2"}, result.roles
    reclaim = result["reclaim"].state
    assert reclaim["victim"] == {"workloads": 1, "admitted": False, "suspended": True, "jobDeploymentStatus": "Suspended",
                                 "preempted": ("True", "InCohortReclamation"), "rayclusters": 0}, reclaim
    assert reclaim["survivor"]["admitted"] and reclaim["b-1"]["admitted"], reclaim
    # (c) Both busy: each team holds exactly its 4, nobody borrows; A's evicted job waits.
    assert reclaim["team-a-cq"] == {"gpu": "4", "borrowed": "0", "admitted": 1, "pending": 1}, reclaim
    assert reclaim["team-b-cq"] == {"gpu": "4", "borrowed": "0", "admitted": 1, "pending": 0}, reclaim

    # B finishes: its GPUs are idle again and A's preempted job is re-admitted by borrowing.
    readmit = result["readmit"].state
    assert readmit["victim"]["admitted"] and not readmit["victim"]["suspended"], readmit
    assert readmit["team-a-cq"] == {"gpu": "8", "borrowed": "4", "admitted": 2, "pending": 0}, readmit
    assert "b-1" not in readmit


def test_sample_workloads_run_out_of_cpu_first(scenario, queues):
    """The sample's llm-training as shipped: the second one on team A pends on CPU, not GPU."""
    result = scenario(scenarios.SAMPLE_CPU_FIRST)
    state = result["second"].state
    assert state["llm-1"]["admitted"] and not state["llm-2"]["admitted"] and state["llm-2"]["suspended"], state
    assert state["team-a-cq"]["gpu"] == "4" and state["team-a-cq"]["borrowed"] == "0", state
    assert queues.usage(queues.cluster_queue("team-a-cq"), "default", "cpu", "borrowed") == "21"  # 68 CPU: 47 guaranteed + 21 borrowed
