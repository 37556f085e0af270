"""The gate on a fork's everyday edits (review F): findings at the document and line the user has to change."""
from __future__ import annotations

import pytest

from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import PROD, TEAM_A, TEAM_B, append, edit

pytestmark = pytest.mark.static


def _text(report) -> str:
    return "\n".join(f.text() for f in report.findings)


def test_a_local_queue_named_as_another_namespaces_is_found_at_its_own_document(repo_copy):
    """LocalQueue `default` in namespace ray and in namespace team-c: the finding of the team-c one is at its document."""
    append(repo_copy, TEAM_A, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: default, namespace: ray}\n"
                              "spec: {clusterQueue: team-a-cq}\n")
    append(repo_copy, TEAM_B, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-c\n---\napiVersion: kueue.x-k8s.io/v1beta2\n"
                              "kind: LocalQueue\nmetadata:\n  name: default\n  namespace: team-c\nspec:\n  clusterQueue: team-b-cq\n  stopPolicy: Hld\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("api-validation", TEAM_B, 54)], _text(report)
