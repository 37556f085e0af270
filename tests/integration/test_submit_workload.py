"""scripts/submit-workload, as a user runs it against a cluster's kubeconfig."""
from __future__ import annotations

import os
import subprocess

import pytest

from harness.core import REPO_ROOT, timeouts

pytestmark = pytest.mark.integration


def test_submitted_sample_is_admitted_on_its_queue(layout, queues, backend, names):
    layout("overlays/team-queues")
    proc = subprocess.run(
        [str(REPO_ROOT / "scripts/submit-workload"), "batch-inference", "--queue", "team-b", "--namespace", names.namespace,
         "--set", "JOB_NAME=user-job"],
        capture_output=True, text=True, timeout=timeouts.SCRIPT, env={**os.environ, "KUBECONFIG": str(backend.kubeconfig)})
    assert proc.returncode == 0, proc.stderr
    assert "rayjob.ray.io/user-job created" in proc.stdout
    queues.wait_admitted("user-job")


def test_a_sample_whose_scripts_are_not_on_the_cluster_is_not_submitted(layout, queues, backend, names, kube):
    """Without its script ConfigMap (the queues layer not yet applied) the RayJob is refused before it is created: admitted,
    it would hold its quota with its pods ContainerCreating for good."""
    layout("overlays/team-queues")
    kube.delete("v1", "ConfigMap", "batch-inference-scripts", names.namespace)
    proc = subprocess.run(
        [str(REPO_ROOT / "scripts/submit-workload"), "batch-inference", "--queue", "team-b", "--namespace", names.namespace,
         "--set", "JOB_NAME=no-scripts"],
        capture_output=True, text=True, timeout=timeouts.SCRIPT, env={**os.environ, "KUBECONFIG": str(backend.kubeconfig)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mounts ConfigMap batch-inference-scripts" in proc.stderr and "base/scripts" in proc.stderr, proc.stderr
    assert queues.job("no-scripts") is None
