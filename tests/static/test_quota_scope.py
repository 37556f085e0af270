"""A ResourceQuota that allows none (hard 0) of what the jobs' pods use in its scope keeps every job out: one finding at
the quota's hard limit, naming the samples of every cluster, with a hint that names its scope (harness.gate.quota_scope)."""
from __future__ import annotations

import pytest

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static

SAMPLES = ("RayJob/ray/aurora-finetune (clusters/dev-westus3/samples.yaml:3)", "RayJob/ray/llm-training (clusters/prod-eastus2/samples.yaml:7)",
           "RayJob/ray/batch-inference (clusters/prod-eastus2/samples.yaml:10)")


def _quota(root, scope: str, hard: str = 'pods: "0"') -> None:
    (root / "base/quota.yaml").write_text(f"apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: scoped\n  namespace: ray\n"
                                          f"spec:\n  hard: {{{hard}}}\n{scope}")
    kustomization = root / "base/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("resources:\n", "resources:\n  - quota.yaml\n", 1))


@pytest.mark.parametrize("scope,leave", [
    ("  scopeSelector:\n    matchExpressions:\n      - {scopeName: PriorityClass, operator: DoesNotExist}\n", "give the pod templates a priorityClassName"),
    ("  scopes: [NotTerminating]\n", "set activeDeadlineSeconds"),
    ("", "")])
def test_a_quota_of_zero_pods_is_one_finding_at_it(repo_copy, scope, leave):
    _quota(repo_copy, scope)
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("resource-quota", "base/quota.yaml", 7)], "\n".join(f.text() for f in found)
    assert all(s in found[0].message for s in SAMPLES), found[0].text()
    assert "dev-westus3" in found[0].context and "prod-eastus2" in found[0].context, found[0].text()
    assert "spec.hard pods" in found[0].hint and leave in found[0].hint and "shrink" not in found[0].hint, found[0].text()


def test_a_quota_the_pods_fall_outside_of_is_clean(repo_copy):
    """PriorityClass Exists: the samples' pods name no priorityClassName, so the quota does not count them."""
    _quota(repo_copy, "  scopeSelector:\n    matchExpressions:\n      - {scopeName: PriorityClass, operator: Exists}\n")
    found = validate_repository(repo_copy).findings
    assert found == [], "\n".join(f.text() for f in found)


def test_a_quota_above_zero_stays_at_the_job(repo_copy):
    """A quota a big job exceeds but a small one fits: the job's size is the cause, at its samples entry."""
    _quota(repo_copy, "", 'pods: "4"')
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file) for f in found] == [("resource-quota", "clusters/prod-eastus2/samples.yaml")], "\n".join(f.text() for f in found)
