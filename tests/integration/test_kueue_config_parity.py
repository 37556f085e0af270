"""The gate's kueue-config verdict against the real Kueue manager: for the production manager
configuration and broken variants of it, the pinned Kueue binary (built from its Go module) either
refuses the configuration at start, before it needs a cluster, or goes on to connect to one; the
gate's offline check (harness.gate.kueue_manager.refusals, in tools/fluxbuild) must say the same."""
from __future__ import annotations

import subprocess

import pytest

from harness import toolchain
from harness.cluster.operators import KUEUE_HELMRELEASE, helmrelease_values
from harness.gate.kueue_manager import refusals

pytestmark = pytest.mark.integration

# What cmd/kueue logs when it exits over its configuration (main.go), before any cluster is needed.
REFUSED = ("Unable to load the configuration", "conflicting feature gates detected", "Unable to set flag gates for known features")
NO_CLUSTER = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"

PRODUCTION = helmrelease_values(KUEUE_HELMRELEASE)["managerConfig"]["controllerManagerConfigYaml"]

# (case, the edit of the production text, whether the manager refuses it)
CASES = [
    ("production", ("", ""), False),
    ("unknown-framework", ("- batch/job\n", "- batch/jobs\n"), True),
    ("framework-twice", ("    - ray.io/rayjob\n", "    - ray.io/rayjob\n    - batch/job\n"), True),
    ("unknown-feature-gate", ("FinishOrphanedWorkloads: false", "FinishOrphanedWorkload: false"), True),
    ("unknown-field", ("integrations:\n", "integrationz:\n"), True),
    ("duration-with-words", ("integrations:\n", "waitForPodsReady:\n  timeout: 10 minutes\nintegrations:\n"), True),
    ("negative-timeout", ("integrations:\n", "waitForPodsReady:\n  timeout: -5m\nintegrations:\n"), True),
    ("yaml-error", ("healthProbeBindAddress: :8081", "healthProbeBindAddress: [:8081"), True),
    ("unknown-preemption-strategy", ("integrations:\n", "fairSharing:\n  preemptionStrategies: [Bogus]\nintegrations:\n"), True),
    ("wait-for-pods-ready", ("integrations:\n", "waitForPodsReady:\n  timeout: 10m\n  blockAdmission: true\nintegrations:\n"), False),
    ("older-config-version", ("config.kueue.x-k8s.io/v1beta2", "config.kueue.x-k8s.io/v1beta1"), False),
]


def _manager_refuses(binary, text: str, workdir) -> tuple[bool, str]:
    workdir.mkdir(parents=True)
    (workdir / "config.yaml").write_text(text)
    (workdir / "no-cluster.kubeconfig").write_text(NO_CLUSTER)
    proc = subprocess.run([str(binary), "--config=config.yaml", "--kubeconfig=no-cluster.kubeconfig"], capture_output=True,
                          text=True, timeout=60, cwd=workdir)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"Kueue ran without a cluster?\n{log[-2000:]}"  # it needs one after its configuration
    return any(reason in log for reason in REFUSED), log


@pytest.mark.parametrize("case,edit,refused", CASES, ids=[c[0] for c in CASES])
def test_gate_and_kueue_manager_agree_on_the_configuration(tmp_path, case, edit, refused):
    old, new = edit
    assert old in PRODUCTION, f"case {case} is stale: {old!r} is not in the production configuration"
    text = PRODUCTION.replace(old, new, 1)
    binary = toolchain.ensure("kueue")["kueue"].path()
    manager_refuses, log = _manager_refuses(binary, text, tmp_path / "kueue")
    assert manager_refuses == refused, f"{case}: the Kueue manager {'refused' if manager_refuses else 'accepted'} it:\n{log[-2000:]}"
    found = refusals(text)
    assert bool(found) == refused, f"{case}: the gate says {found or 'accepted'}, the Kueue manager {'refused' if refused else 'accepted'} it"
