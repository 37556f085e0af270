"""What Kueue does with submissions that can never run: the test asserts Kueue's real answer
(harness.kueue.scenarios: NO_LOCAL_QUEUE, KEEPS_CLUSTER_REJECTED, TOO_BIG, REQUESTS_OVER_LIMITS), and
that the static gate says the same of the job beforehand where it has a rule for it."""
from __future__ import annotations

import pytest

from harness.gate.schema_check import validate
from harness.k8s import condition
from harness.kueue import scenarios
from harness.kueue.queues import rayjob

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


def test_requests_above_limits_are_inadmissible_as_the_gate_says(scenario, queues):
    # The gate's verdict on the job the scenario submits (Kueue's own check, offline) ...
    submit = scenarios.REQUESTS_OVER_LIMITS.steps[0].actions[0]
    job = rayjob(submit.sample, submit.name, submit.queue)
    job["spec"].update(submit.spec)
    (problem,) = validate([job])
    assert problem is not None and problem.rule == "kueue-inadmissible", problem
    assert problem.errors[0]["field"] == "spec.submitterPodTemplate.spec.containers[0]", problem
    # ... is the real Kueue's: accepted by the apiserver and the webhook, never given quota.
    state = scenario(scenarios.REQUESTS_OVER_LIMITS)["submit"].state
    assert not state["over-limits"]["admitted"] and state["over-limits"]["suspended"], state
    message = condition(queues.workload("over-limits"), "QuotaReserved")["message"]
    assert "resources validation failed" in message and "requests must not exceed its limits" in message, message
