"""kueue-webhook-scope (harness/gate/kueue_webhooks.py): the webhooks the pinned Kueue chart renders with failurePolicy
Fail for the HelmRelease's manager configuration, against the namespaces the cluster's controllers run in (Q.md #4)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from tests.static.test_gate_corpus import KUEUE, append, edit

pytestmark = pytest.mark.static

FRAMEWORKS = "          frameworks:\n            - batch/job\n"


def _line(repo: Path, text: str) -> int:
    return next(i for i, line in enumerate((repo / KUEUE).read_text().splitlines(), 1) if line == text)


def _scope(repo: Path) -> list:
    return [f for f in validate_repository(repo).findings if f.rule == "kueue-webhook-scope"]


def test_the_shipped_configuration_queues_no_plain_pods():
    """Nothing submits a Pod, Deployment or StatefulSet to a queue: the shipped manager runs neither integration."""
    text = (Path(__file__).resolve().parents[2] / KUEUE).read_text()
    for framework in ("pod", "deployment", "statefulset"):
        assert f"            - {framework}\n" not in text, framework


def test_each_pod_creating_integration_is_one_warning_at_its_entry(repo_copy):
    edit(repo_copy, KUEUE, FRAMEWORKS, FRAMEWORKS + "            - pod\n            - deployment\n")
    found = _scope(repo_copy)
    assert sorted((f.file, f.line, f.severity) for f in found) == [
        (KUEUE, _line(repo_copy, "            - pod"), "warning"), (KUEUE, _line(repo_copy, "            - deployment"), "warning")], found
    pod = next(f for f in found if f.line == _line(repo_copy, "            - pod"))
    assert "mpod.kb.io" in pod.message and "vpod.kb.io" in pod.message and "mdeployment" not in pod.message, pod.text()
    assert "flux-system" in pod.message and "kuberay-system" in pod.message and "drop `- pod`" in pod.hint, pod.text()


def test_the_pod_integration_scoped_to_the_workload_namespace_is_clean(repo_copy):
    """managedJobsNamespaceSelector selecting only `ray`: the chart's pod webhook takes in no controller's namespace."""
    edit(repo_copy, KUEUE, "        integrations:\n", "        managedJobsNamespaceSelector:\n          matchLabels:\n"
         "            kubernetes.io/metadata.name: ray\n        integrations:\n")
    edit(repo_copy, KUEUE, FRAMEWORKS, FRAMEWORKS + "            - pod\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_configuration_kueue_refuses_is_only_kueue_config(repo_copy):
    """A selector that takes in Kueue's own namespace: the manager refuses it and never serves (one cause, one finding)."""
    edit(repo_copy, KUEUE, "        integrations:\n", "        managedJobsNamespaceSelector:\n          matchExpressions:\n"
         "            - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}\n        integrations:\n")
    edit(repo_copy, KUEUE, FRAMEWORKS, FRAMEWORKS + "            - pod\n")
    assert sorted({f.rule for f in validate_repository(repo_copy).findings}) == ["kueue-config"]


def test_a_job_in_flux_system_meets_the_job_webhook_whatever_the_integrations(repo_copy):
    """mjob.kb.io is Fail in the chart whatever integrations.frameworks says, over every namespace without
    managedJobsNamespaceSelector: at the configuration's integrations, the fix being the selector."""
    append(repo_copy, KUEUE, "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: cleanup\n  namespace: flux-system\nspec:\n"
           "  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - {name: c, image: \"busybox:1.36\"}\n")
    (found,) = _scope(repo_copy)
    assert (found.file, found.line) == (KUEUE, _line(repo_copy, "        integrations:")), found.text()
    assert "mjob.kb.io" in found.message and "managedJobsNamespaceSelector" in found.hint, found.text()


def test_the_charts_own_configuration_is_one_warning_at_the_values(repo_copy):
    text = (repo_copy / KUEUE).read_text()
    start, end = text.index("    managerConfig:\n"), text.index("FinishOrphanedWorkloads: false\n") + len("FinishOrphanedWorkloads: false\n")
    (repo_copy / KUEUE).write_text(text[:start] + text[end:])
    (found,) = _scope(repo_copy)
    assert (found.file, found.line) == (KUEUE, _line(repo_copy, "  values:")), found.text()
    assert "mpod.kb.io" in found.message and "mdeployment.kb.io" in found.message, found.text()


def test_with_manage_jobs_without_queue_name_the_pod_integration_is_that_rules_one_finding(repo_copy):
    """Kueue then gates the pods of flux-system for good (kueue-manage-without-queue-name): the outage warning folds."""
    edit(repo_copy, KUEUE, "        integrations:\n", "        manageJobsWithoutQueueName: true\n        integrations:\n")
    edit(repo_copy, KUEUE, FRAMEWORKS, FRAMEWORKS + "            - pod\n")
    found = validate_repository(repo_copy).findings
    assert sorted({f.rule for f in found}) == ["kueue-manage-without-queue-name"], "\n".join(f.text() for f in found)
