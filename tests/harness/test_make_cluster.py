"""`make cluster CLUSTER=<name>`: a local replica of one of clusters/ for a person: the cluster's
Terraform pools as nodes, its queue layer as Flux renders it, and a sample that runs on it with
scripts/submit-workload and nothing else."""
from __future__ import annotations

import os
import subprocess

import pytest

from harness.cluster import node_objects
from harness.core import REPO_ROOT, timeouts
from harness.gate import cluster_nodes
from harness.k8s import POD, Kube, is_true
from kubernetes import config

pytestmark = pytest.mark.harness

START = 180  # seed, start, nodes and the queue layer on a warm tool cache (~12 s)


def test_replica_has_the_pools_the_queues_and_runs_a_sample(spawn, tmp_path):
    child = spawn("-m", "harness.cluster", "--cluster", "dev-westus3", "--workdir", str(tmp_path / "run"))  # what scripts/cluster runs
    kubeconfig = child.wait_line(r"^KUBECONFIG=(\S+)", START).group(1)
    kube = Kube(config.new_client_from_config(kubeconfig))

    expected = {n["metadata"]["name"] for n in node_objects(cluster_nodes(REPO_ROOT, "dev-westus3"))}
    nodes = {n["metadata"]["name"]: n for n in kube.list("v1", "Node")}
    assert set(nodes) == expected and all(is_true(n, "Ready") for n in nodes.values()), sorted(nodes)
    gpu = [n for n in nodes.values() if n["status"]["allocatable"].get("nvidia.com/gpu") == "1"]
    assert len(gpu) == 1 and gpu[0]["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "Standard_NC24ads_A100_v4"
    assert [q["metadata"]["name"] for q in kube.list("kueue.x-k8s.io/v1beta2", "LocalQueue", "ray")] == ["default"]

    proc = subprocess.run([str(REPO_ROOT / "scripts/submit-workload"), "aurora-finetune", "--queue", "default"],
                          capture_output=True, text=True, timeout=timeouts.SCRIPT, env={**os.environ, "KUBECONFIG": kubeconfig})
    assert proc.returncode == 0, proc.stderr

    def running(items):
        pods = [p for p in items if p["metadata"]["name"].startswith("aurora-finetune-")]
        return pods if len(pods) >= 3 and all(p["spec"].get("nodeName") and is_true(p, "Ready") for p in pods) else None
    pods = kube.wait_for(*POD, running, "aurora-finetune's head, worker and submitter Running", "ray", timeouts.DECISION)
    worker = next(p for p in pods if "-gpu-workers-" in p["metadata"]["name"])
    assert worker["spec"]["nodeName"] == gpu[0]["metadata"]["name"]
