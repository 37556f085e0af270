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
