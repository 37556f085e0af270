"""What kustomize-controller does with a Flux Kustomization beyond building it (tools/fluxbuild fluxapply.go): the
owner labels and spec.commonMetadata its apply sets on every object, the CEL of spec.healthCheckExprs it compiles
first, and SOPS decryption (spec.decryption) or its refusal of an encrypted Secret without it."""
from __future__ import annotations

import base64

import pytest

from harness.gate import render_repository
from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import PROD, TEAM_B, edit, health_check, sops_secret

pytestmark = pytest.mark.static

QUEUES = f"{PROD}/queues.yaml"
COMMON = "  commonMetadata:\n    labels:\n      ray-on-aks/tenant: ml\n    annotations:\n      ray-on-aks/owner: platform\n"


def _errors(report) -> list[str]:
    return [f.text() for f in report.findings if f.is_error]


@pytest.mark.parametrize("selector", ["ray-on-aks/tenant: ml", "kustomize.toolkit.fluxcd.io/name: queues",
                                      "kustomize.toolkit.fluxcd.io/namespace: flux-system"])
def test_a_namespace_selector_on_labels_flux_sets_is_clean(repo_copy, selector):
    """Namespace ray is applied by the queues layer: it carries the layer's commonMetadata labels and owner labels on the
    cluster, so team-b's ClusterQueue selecting them selects it."""
    edit(repo_copy, QUEUES, "  prune: true\n", "  prune: true\n" + COMMON)
    edit(repo_copy, TEAM_B, "  namespaceSelector: {}", f"  namespaceSelector: {{matchLabels: {{{selector}}}}}")
    report = validate_repository(repo_copy)
    assert not [f for f in report.findings if f.rule == "queue-namespace-selector"] and not _errors(report), _errors(report)


def test_a_namespace_selector_on_another_layers_owner_label_still_fails(repo_copy):
    edit(repo_copy, TEAM_B, "  namespaceSelector: {}", "  namespaceSelector: {matchLabels: {kustomize.toolkit.fluxcd.io/name: infra-controllers}}")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "queue-namespace-selector"]
    assert [f.file for f in found] == [TEAM_B], found


def test_rendered_objects_carry_the_owner_labels_then_common_metadata(repo_copy):
    """Every object of the layer, as the apply leaves it: owner labels first, then commonMetadata, which wins a key both set."""
    edit(repo_copy, QUEUES, "  prune: true\n", "  prune: true\n" + COMMON.replace("      ray-on-aks/tenant: ml\n",
                                                                               "      ray-on-aks/tenant: ml\n      kustomize.toolkit.fluxcd.io/namespace: ops\n"))
    _, clusters = render_repository(repo_copy)
    layer = next(b for c in clusters if c.name == "prod-eastus2" for b in c.flux if b.id.endswith("Kustomization/flux-system/queues"))
    assert layer.objects
    for o in layer.objects:
        meta = o["metadata"]
        assert {k: meta["labels"].get(k) for k in ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace", "ray-on-aks/tenant")} \
            == {"kustomize.toolkit.fluxcd.io/name": "queues", "kustomize.toolkit.fluxcd.io/namespace": "ops", "ray-on-aks/tenant": "ml"}, o
        assert meta["annotations"].get("ray-on-aks/owner") == "platform", o


@pytest.mark.parametrize("field,line", [("current", 30), ("inProgress", 31), ("failed", 31)])
def test_a_health_check_expression_that_does_not_compile_is_named_at_its_line(repo_copy, field, line):
    health_check(repo_copy, field, "status.conditions.exists(c, c.type == 'Active' && )")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "flux-health-check-expr"]
    assert [(f.file, f.line) for f in found] == [(QUEUES, line)], found
    assert "Syntax error" in found[0].message and "\n" not in found[0].message and found[0].is_error


def test_valid_health_check_expressions_are_clean(repo_copy):
    health_check(repo_copy, "failed", "status.conditions.exists(c, c.type == 'Active' && c.status == 'False')")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_sops_secret_in_a_layer_that_decrypts_is_checked_as_decrypted(repo_copy):
    sops_secret(repo_copy)
    edit(repo_copy, QUEUES, "  prune: true\n", "  prune: true\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n")
    report = validate_repository(repo_copy)
    assert not _errors(report), _errors(report)
    _, clusters = render_repository(repo_copy)
    secret = next(o for c in clusters if c.name == "prod-eastus2" for b in c.flux for o in b.objects if o["kind"] == "Secret")
    assert "sops" not in secret and base64.b64decode(secret["data"]["account-key"], validate=True)
    assert not secret["stringData"]["user"].startswith("ENC[")


def test_a_sops_secret_in_a_layer_without_decryption_fails_the_layer(repo_copy):
    sops_secret(repo_copy)
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found if f.is_error] == [("flux-decryption", QUEUES, 9)], [f.text() for f in found]
    assert "Secret/ray/storage-credentials is SOPS encrypted" in found[0].message and "spec.decryption" in found[0].hint
