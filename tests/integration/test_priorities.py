"""Within one team queue, a high-priority job preempts a low-priority one, never the reverse
(`withinClusterQueue: LowerPriority`, WorkloadPriorityClasses `high` and `low` from base/)."""
from __future__ import annotations

import pytest

from harness.k8s.client import condition, is_true
from harness.kueue.queues import FOUR_GPUS, rayjob

pytestmark = pytest.mark.integration


@pytest.fixture
def team_b_busy(layout, queues):
    """Team B uses its whole share, so team A has nothing to borrow and must choose within itself."""
    layout("overlays/team-queues")
    queues.submit(rayjob("batch-inference", "b-busy", "team-b", FOUR_GPUS))
    queues.wait_admitted("b-busy")


def test_high_preempts_low_within_a_team(team_b_busy, queues):
    queues.submit(rayjob("llm-training", "a-low", "team-a", FOUR_GPUS, priority="low"))
    queues.wait_admitted("a-low")
    queues.submit(rayjob("llm-training", "a-high", "team-a", FOUR_GPUS, priority="high"))
    evicted = queues.wait_evicted("a-low")
    assert condition(evicted, "Preempted")["reason"] == "InClusterQueue", condition(evicted, "Preempted")
    queues.wait_admitted("a-high")
    assert is_true(queues.workload("b-busy"), "Admitted"), "team B within its guarantee is never preempted by A"


def test_low_never_preempts_high(team_b_busy, queues):
    queues.submit(rayjob("llm-training", "a-high", "team-a", FOUR_GPUS, priority="high"))
    queues.wait_admitted("a-high")
    queues.submit(rayjob("llm-training", "a-low", "team-a", FOUR_GPUS, priority="low"))
    queues.wait_pending("a-low")
    high = queues.workload("a-high")
    assert is_true(high, "Admitted") and not is_true(high, "Evicted")
