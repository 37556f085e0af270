"""A HelmRelease's spec.postRenderers applied to the chart's objects as helm-controller applies them (tools/fluxbuild
postrender.go): the checks of the rendered chart see the objects it installs."""
from __future__ import annotations

import pytest

from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import KUEUE

pytestmark = pytest.mark.static

def post_renderer(root, patch: str, target: str = "") -> None:
    """A kustomize post-renderer appended to the Kueue HelmRelease's postRenderers (the file ends with that list)."""
    block = "".join(f"              {line}\n" for line in patch.splitlines())
    text = (root / KUEUE).read_text()
    assert text.rstrip("\n").splitlines()[-1].startswith("                "), "the Kueue HelmRelease no longer ends with its postRenderers"
    (root / KUEUE).write_text(text + f"    - kustomize:\n        patches:\n          - {target}patch: |\n{block}")


def test_a_post_renderer_the_nodes_cannot_take_is_operator_placement(repo_copy):
    post_renderer(repo_copy, "- op: add\n  path: /spec/template/spec/nodeSelector\n  value: {agentpool: infra}",
                  "target:\n              kind: Deployment\n              name: kueue-controller-manager\n            ")
    found = {(f.rule, f.file, f.context.split(":")[0]) for f in validate_repository(repo_copy).findings}
    assert found == {("operator-placement", KUEUE, "cluster dev-westus3"), ("operator-placement", KUEUE, "cluster prod-eastus2")}, found


def test_a_post_renderer_patch_matching_no_object_fails_at_post_renderers(repo_copy):
    post_renderer(repo_copy, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: kueue-manager\n  namespace: kueue-system\n"
                             "spec:\n  replicas: 2")
    found = [(f.rule, f.file, f.line) for f in validate_repository(repo_copy).findings]
    line = (repo_copy / KUEUE).read_text().splitlines().index("  postRenderers:") + 1
    assert found == [("helm-values", KUEUE, line)], found


def test_a_post_renderer_patch_of_a_chart_object_is_clean(repo_copy):
    post_renderer(repo_copy, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: kueue-controller-manager\n"
                             "  namespace: kueue-system\nspec:\n  template:\n    metadata:\n      annotations:\n        team: ml")
    assert [f.text() for f in validate_repository(repo_copy).findings] == []
