"""What Kueue does with submissions that can never run: the test asserts Kueue's real answer
(harness.kueue.scenarios: NO_LOCAL_QUEUE, KEEPS_CLUSTER_REJECTED, TOO_BIG, REQUESTS_OVER_LIMITS; a LimitRange), and
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


def test_a_limit_range_below_a_request_is_inadmissible_as_the_gate_says(layout, queues, kube, names):
    """A LimitRange of the job's namespace whose max a worker's CPU request exceeds: the gate, given the
    cluster's LimitRanges, and the real Kueue's scheduler both refuse the Workload, at the same container."""
    layout("overlays/team-queues")
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "max-8-cpu", "namespace": "ray"},
              "spec": {"limits": [{"type": "Container", "max": {"cpu": "8"}}]}}
    job = rayjob("llm-training", "over-limit-range", "team-a")  # workers request 16 CPU each
    (problem,) = validate([job], [[limits]])
    assert problem is not None and problem.rule == "kueue-inadmissible", problem
    assert problem.errors[0]["field"] == "spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0]", problem
    assert validate([job]) == [None], "without the LimitRange the gate admits the job's resources"
    kube.apply(names.localize(limits))
    try:
        queues.submit(job)
        wl = queues.wait_pending("over-limit-range")
        message = condition(wl, "QuotaReserved")["message"]
        assert "resources didn't satisfy LimitRange constraints" in message, message
        assert "workerGroupSpecs" not in message and "podSets[1].template.spec.containers[0]" in message, message
    finally:
        queues.delete("over-limit-range")
        kube.delete("v1", "LimitRange", names.localize(limits)["metadata"]["name"], names.namespace)


def test_a_rayjob_managed_by_another_controller_is_admitted_and_never_run(layout, queues):
    """spec.managedBy kueue.x-k8s.io/multikueue on a ClusterQueue without a MultiKueue admission check: the gate's
    sample-managed-by. The real Kueue admits it (its quota is held) and the real KubeRay operator skips it: the job
    is unsuspended and no RayCluster is ever created, while an identical job without managedBy gets its cluster."""
    layout("overlays/team-queues")
    elsewhere = rayjob("batch-inference", "elsewhere", "team-b")
    elsewhere["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    try:
        queues.submit(elsewhere)
        wl = queues.wait_admitted("elsewhere")
        assert condition(wl, "QuotaReserved")["status"] == "True", wl
        queues.submit(rayjob("batch-inference", "kuberay-run", "team-a"))
        queues.wait_rayclusters(["kuberay-run"], lambda clusters: clusters, "kuberay-run's RayCluster")
        status = queues.job("elsewhere").get("status") or {}
        assert not status.get("jobDeploymentStatus"), f"KubeRay acted on a RayJob managed by another controller: {status}"
        assert not queues.wait_rayclusters(["elsewhere"], lambda clusters: True, "elsewhere's RayClusters (none)"), \
            "KubeRay created a RayCluster for a RayJob managed by another controller"
    finally:
        queues.delete("elsewhere")
        queues.delete("kuberay-run")
