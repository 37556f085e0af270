"""single-queue: back-pressure on one ClusterQueue. One workload runs, the next waits."""
from __future__ import annotations

import pytest

from harness.k8s.client import condition, owned_by
from harness.kueue.queues import RAYCLUSTER, rayjob

pytestmark = pytest.mark.integration


def test_one_runs_the_next_waits_then_runs(layout, queues, kube):
    layout("overlays/single-queue")
    # The sample llm-training as it ships: head 4 CPU + 4 workers x (16 CPU, 128Gi, 1 GPU)
    # = 68 CPU, 528Gi, 4 GPU. Two of them need 136 CPU against the queue's 96.
    first = queues.submit(rayjob("llm-training", "train-1", "default"))
    assert first["spec"]["suspend"] is True
    queues.wait_admitted("train-1")
    clusters = kube.wait_for(*RAYCLUSTER, lambda items: owned_by(items, first["metadata"]["uid"]) or None,
                             "KubeRay creates the RayCluster of train-1", queues.namespace, 60)
    assert clusters[0]["spec"]["workerGroupSpecs"][0]["replicas"] == 4

    queues.submit(rayjob("llm-training", "train-2", "default"))
    pending = queues.wait_pending("train-2")
    message = condition(pending, "QuotaReserved")["message"]
    assert f"insufficient unused quota for cpu in flavor {queues.names.flavor('default')}" in message, message
    assert len(kube.list(*RAYCLUSTER, namespace=queues.namespace)) == 1, "no RayCluster for a job Kueue has not admitted"

    cq = queues.wait_cluster_queue("cluster-queue", lambda c: c.get("status", {}).get("admittedWorkloads") == 1
                                   and c["status"].get("pendingWorkloads") == 1, "1 admitted, 1 pending")
    assert queues.gpus(cq) == "4"
    assert queues.usage(cq, "default", "cpu") == "68"
    lq = queues.local_queue("default")
    assert lq["status"]["admittedWorkloads"] == 1 and lq["status"]["pendingWorkloads"] == 1

    # The first finishing (its RayJob goes away) frees the quota; Kueue admits the second.
    queues.delete("train-1")
    queues.wait_admitted("train-2")
    queues.wait_cluster_queue("cluster-queue", lambda c: c.get("status", {}).get("admittedWorkloads") == 1
                              and c["status"].get("pendingWorkloads") == 0, "1 admitted, 0 pending")
