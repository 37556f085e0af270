"""What Kueue does with submissions that can never run: the test asserts Kueue's real answer."""
from __future__ import annotations

import pytest
from kubernetes.dynamic.exceptions import ApiException

from harness.k8s.client import condition
from harness.kueue.queues import Size, rayjob

pytestmark = pytest.mark.integration


def test_queue_label_naming_no_localqueue_stays_pending(layout, queues):
    layout("overlays/team-queues")
    queues.submit(rayjob("batch-inference", "lost", "team-c"))
    message = condition(queues.wait_pending("lost"), "QuotaReserved")["message"]
    assert "LocalQueue team-c doesn't exist" in message, message


def test_shutdown_after_job_finishes_false_is_rejected_by_the_webhook(layout, queues):
    layout("overlays/team-queues")
    job = rayjob("batch-inference", "keeps-cluster", "team-a")
    job["spec"]["shutdownAfterJobFinishes"] = False
    with pytest.raises(ApiException) as rejected:
        queues.submit(job)
    assert rejected.value.status in (400, 403, 422)
    assert "a kueue managed job should delete the cluster after finishing" in str(rejected.value.body)
    assert queues.job("keeps-cluster") is None


def test_job_larger_than_the_queue_can_ever_hold_is_inadmissible(layout, queues):
    layout("overlays/team-queues")
    # 10 GPUs: more than team A's 4 guaranteed + 4 borrowable.
    queues.submit(rayjob("llm-training", "too-big", "team-a", Size(workers=10, worker_cpu="4", worker_memory="32Gi")))
    message = condition(queues.wait_pending("too-big"), "QuotaReserved")["message"]
    assert f"insufficient quota for nvidia.com/gpu in flavor {queues.names.flavor('gpu')}" in message, message
