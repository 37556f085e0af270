"""How a HelmRelease is wired into its cluster: whether the layers after it really wait for it (disableWait), and
whether the namespaces it installs into exist. (`flux bootstrap` files on an extension cluster: test_gate_flux_forms.py.)"""
from __future__ import annotations

import pytest

from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import KUEUE, PROD, edit

pytestmark = pytest.mark.static


def test_disable_wait_on_the_kueue_release_is_flux_layer_order_at_it(repo_copy):
    """helm-controller's HookOnlyStrategy: the HelmRelease is Ready before Kueue's webhook runs, so infra-controllers'
    wait: true does not hold the queues layer back."""
    edit(repo_copy, KUEUE, "  install:\n", "  install:\n    disableWait: true\n")
    found = [(f.rule, f.file, f.line, f.severity) for f in validate_repository(repo_copy).findings]
    assert found == [("flux-layer-order", KUEUE, 37, "warning")], found


def test_disable_wait_with_a_health_check_on_the_deployment_is_clean(repo_copy):
    edit(repo_copy, KUEUE, "  install:\n", "  install:\n    disableWait: true\n")
    for cluster in (PROD, "clusters/dev-westus3"):
        edit(repo_copy, f"{cluster}/infrastructure.yaml", "  wait: true\n", "  wait: true\n  healthChecks:\n    - apiVersion: apps/v1\n"
             "      kind: Deployment\n      name: kueue-controller-manager\n      namespace: kueue-system\n")
    assert [f.text() for f in validate_repository(repo_copy).findings] == []


def _rename_release_namespace(root) -> None:
    edit(root, KUEUE, "  targetNamespace: kueue-system\n", "  targetNamespace: kueue\n")
    edit(root, KUEUE, "  storageNamespace: kueue-system\n", "  storageNamespace: kueue\n")


def test_a_release_namespace_nothing_creates_is_namespace_missing_at_target_namespace(repo_copy):
    """Helm creates no namespace without install.createNamespace: the release record cannot be written, the install fails."""
    _rename_release_namespace(repo_copy)
    found = [f for f in validate_repository(repo_copy).findings]
    assert [(f.rule, f.file, f.line) for f in found] == [("namespace-missing", KUEUE, 28)], [f.text() for f in found]
    assert "install.createNamespace: true" in found[0].hint and "Namespace kueue-system is created but nothing is in it" in found[0].hint


def test_a_release_namespace_the_release_creates_is_clean(repo_copy):
    _rename_release_namespace(repo_copy)
    edit(repo_copy, KUEUE, "  install:\n", "  install:\n    createNamespace: true\n")
    assert [f.text() for f in validate_repository(repo_copy).findings] == []

