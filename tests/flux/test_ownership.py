"""Flux and Kueue do not fight: a reconcile (with prune) never reverts what Kueue writes, and
workloads users submit are no part of Flux's inventory, so they are never pruned."""
from __future__ import annotations

import pytest
import yaml

from harness.k8s import WORKLOAD
from harness.kueue import rayjob

pytestmark = pytest.mark.flux

SAMPLES = ("llm-training", "aurora-finetune", "batch-inference")  # workloads/, submitted by users, not by Flux


def _owners(obj: dict, *path: str) -> set[str]:
    """Managers whose managedFields (fieldsV1) contain the field at `path`."""
    out = set()
    for entry in obj["metadata"].get("managedFields") or []:
        fields = entry.get("fieldsV1") or {}
        for key in path:
            fields = fields.get(f"f:{key}") if isinstance(fields, dict) else None
        if fields is not None:
            out.add(entry["manager"])
    return out


def test_reconcile_keeps_kueue_writes_and_user_workloads(run, queues):
    fleet, kube = run.fleet, run.kube
    jobs = {}
    for i, sample in enumerate(SAMPLES):
        jobs[sample] = queues.submit(rayjob(sample, f"sample-{i}", "default"))
    admitted = queues.wait_admitted("sample-0")
    cq_before = queues.wait_cluster_queue("cluster-queue", lambda c: (c.get("status") or {}).get("admittedWorkloads", 0) >= 1,
                                          "at least one admitted workload")

    # A real change of the queue layer, so kustomize-controller applies and prunes this revision.
    rel = "overlays/single-queue/cluster-queue.yaml"
    docs = list(yaml.safe_load_all(fleet.wc.read(rel)))
    docs[1]["metadata"].setdefault("labels", {})["ray-on-aks/reviewed"] = "yes"
    fleet.wc.write(rel, yaml.safe_dump_all(docs, sort_keys=False))
    fleet.wait_ready(fleet.push("label the default LocalQueue"), names=("queues",))
    assert queues.local_queue("default")["metadata"]["labels"]["ray-on-aks/reviewed"] == "yes"

    for sample, submitted in jobs.items():
        live = queues.job(submitted["metadata"]["name"])
        assert live and live["metadata"]["uid"] == submitted["metadata"]["uid"], f"RayJob of sample {sample} pruned or replaced"
        assert "kustomize-controller" not in {m["manager"] for m in live["metadata"]["managedFields"]}, sample
    # Kueue unsuspended the admitted job (it drops spec.suspend, so the submitter no longer owns
    # that field); the reconcile did not put it back.
    job = queues.job("sample-0")
    assert job["spec"].get("suspend") is not True, job["spec"].get("suspend")
    assert not _owners(job, "spec", "suspend"), job["metadata"]["managedFields"]
    assert "kueue" in {m["manager"] for m in job["metadata"]["managedFields"]}, "no write of Kueue's on the RayJob"
    wl = kube.get(*WORKLOAD, name=admitted["metadata"]["name"], namespace="ray")
    assert wl["metadata"]["uid"] == admitted["metadata"]["uid"] and wl["status"]["admission"] == admitted["status"]["admission"]

    # Queue status is Kueue's (status subresource), spec is Flux's; neither owns the other's fields.
    cq = queues.cluster_queue("cluster-queue")
    assert _owners(cq, "status") == {"kueue"}, cq["metadata"]["managedFields"]
    assert "kueue" not in _owners(cq, "spec"), cq["metadata"]["managedFields"]
    assert _owners(cq, "spec", "resourceGroups") == {"kustomize-controller"}
    assert cq["status"]["admittedWorkloads"] == cq_before["status"]["admittedWorkloads"]
    assert cq["metadata"]["generation"] == cq_before["metadata"]["generation"], "the reconcile rewrote the ClusterQueue spec"
