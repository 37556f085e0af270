"""Within one team queue, a high-priority job preempts a low-priority one, never the reverse
(`withinClusterQueue: LowerPriority`, WorkloadPriorityClasses `high` and `low` from base/;
harness.kueue.scenarios: HIGH_PREEMPTS_LOW, LOW_NEVER_PREEMPTS_HIGH). Team B first uses its whole
share, so team A has nothing to borrow and must choose within itself."""
from __future__ import annotations

import pytest

from harness.kueue import scenarios

pytestmark = pytest.mark.integration


def test_high_preempts_low_within_a_team(scenario):
    state = scenario(scenarios.HIGH_PREEMPTS_LOW)["high"].state
    assert state["a-low"]["preempted"] == ("True", "InClusterQueue") and state["a-low"]["suspended"], state
    assert state["a-high"]["admitted"], state
    assert state["b-busy"]["admitted"], "team B within its guarantee is never preempted by A"


def test_low_never_preempts_high(scenario):
    state = scenario(scenarios.LOW_NEVER_PREEMPTS_HIGH)["low"].state
    assert state["a-high"]["admitted"] and state["a-high"]["preempted"][0] != "True", state
    assert not state["a-low"]["admitted"] and state["a-low"]["suspended"], state
