"""What Kueue does with submissions that can never run: the test asserts Kueue's real answer
(harness.kueue.scenarios: NO_LOCAL_QUEUE, KEEPS_CLUSTER_REJECTED, TOO_BIG)."""
from __future__ import annotations

import pytest

from harness.k8s import condition
from harness.kueue import scenarios

pytestmark = pytest.mark.integration


def test_queue_label_naming_no_localqueue_stays_pending(scenario, queues):
    state = scenario(scenarios.NO_LOCAL_QUEUE)["submit"].state
    assert not state["lost"]["admitted"] and state["lost"]["suspended"], state
    message = condition(queues.workload("lost"), "QuotaReserved")["message"]
    assert "LocalQueue team-c doesn't exist" in message, message


def test_shutdown_after_job_finishes_false_is_rejected_by_the_webhook(scenario, queues):
    result = scenario(scenarios.KEEPS_CLUSTER_REJECTED)
    refusal = result.refusals["keeps-cluster"]
    assert refusal.status in (400, 403, 422)
    assert "a kueue managed job should delete the cluster after finishing" in str(refusal.body)
    assert not result.created and queues.job("keeps-cluster") is None


def test_job_larger_than_the_queue_can_ever_hold_is_inadmissible(scenario, queues):
    state = scenario(scenarios.TOO_BIG)["submit"].state
    assert not state["too-big"]["admitted"] and state["too-big"]["suspended"], state
    message = condition(queues.workload("too-big"), "QuotaReserved")["message"]
    assert f"insufficient quota for nvidia.com/gpu in flavor {queues.names.flavor('gpu')}" in message, message
