"""`--base REF` (harness.gate.updates): a change the apiserver or Kueue refuses as an update of what the cluster holds
(the base ref's render) is `update-refused` at the line of the changed value; an ordinary change stays clean."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.gate.validate import main, validate_repository
from tests.static.test_gate_corpus import append, edit

pytestmark = pytest.mark.static

POD_PRIORITY = """---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: ray-pods
value: 1000
description: pods of Ray jobs
"""


def committed(root: Path) -> Path:
    """`root` made a git repository whose commit `base` holds its files as they are now."""
    git = ["git", "-C", str(root), "-c", "user.email=gate@test", "-c", "user.name=gate"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"], ["tag", "base"]):
        subprocess.run(git + args, check=True, capture_output=True)
    return root


def line_of(root: Path, rel: str, text: str) -> int:
    return next(i for i, line in enumerate((root / rel).read_text().splitlines(), 1) if text in line)


def refused(root: Path) -> list:
    return [f for f in validate_repository(root, base="base").findings if f.rule == "update-refused"]


def test_a_localqueue_pointed_at_another_clusterqueue_is_refused_as_an_update(repo_copy):
    """Renaming a ClusterQueue and its LocalQueue's clusterQueue (Kueue's CRD: `self == oldSelf`) passes as a create."""
    committed(repo_copy)
    (repo_copy / "overlays/team-queues/team-a.yaml").write_text((repo_copy / "overlays/team-queues/team-a.yaml").read_text()
                                                                .replace("team-a-cq", "research-cq"))
    found = refused(repo_copy)
    assert [(f.file, f.line, f.resource) for f in found] == [
        ("overlays/team-queues/team-a.yaml", line_of(repo_copy, "overlays/team-queues/team-a.yaml", "clusterQueue: research-cq"), "LocalQueue/ray/team-a")], found
    assert "field is immutable" in found[0].message and '"team-a-cq"' in found[0].message, found[0].message
    assert "force: true" in found[0].hint and "Kustomization flux-system/queues" in found[0].hint, found[0].hint
    assert not [f for f in validate_repository(repo_copy).findings if f.is_error]  # without --base: valid as a create


def test_a_pod_priority_class_value_changed_is_refused_as_an_update(repo_copy):
    append(repo_copy, "base/priority-classes.yaml", POD_PRIORITY)
    committed(repo_copy)
    edit(repo_copy, "base/priority-classes.yaml", "  name: ray-pods\nvalue: 1000\n", "  name: ray-pods\nvalue: 2000\n")
    found = refused(repo_copy)
    assert [(f.file, f.line, f.resource) for f in found] == [
        ("base/priority-classes.yaml", line_of(repo_copy, "base/priority-classes.yaml", "value: 2000"), "PriorityClass/ray-pods")], found
    assert "may not be changed in an update" in found[0].message, found[0].message


def test_an_ordinary_quota_change_and_mutable_fields_stay_clean(repo_copy):
    """A quota, a WorkloadPriorityClass's value and a PriorityClass's description are changed in place by the apiserver."""
    append(repo_copy, "base/priority-classes.yaml", POD_PRIORITY)
    committed(repo_copy)
    component = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
    edit(repo_copy, component, "nominalQuota, value: 768Gi}", "nominalQuota, value: 760Gi}")
    edit(repo_copy, "base/priority-classes.yaml", "value: 100\n", "value: 150\n")
    edit(repo_copy, "base/priority-classes.yaml", "description: pods of Ray jobs", "description: the pods of Ray jobs")
    report = validate_repository(repo_copy, base="base")
    assert [f for f in report.findings if f.is_error] == [], report.findings


def test_a_base_ref_that_does_not_exist_is_exit_2_with_one_line(repo_copy, capsys):
    committed(repo_copy)
    assert main([str(repo_copy), "--base", "no-such-ref"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--base no-such-ref: no such git ref" in err, err


LQ_META = "  name: team-a\n  namespace: ray\n"


def _repoint(root: Path) -> None:
    (root / "overlays/team-queues/team-a.yaml").write_text((root / "overlays/team-queues/team-a.yaml").read_text()
                                                           .replace("team-a-cq", "research-cq"))


def _annotate(root: Path, annotation: str) -> None:
    edit(root, "overlays/team-queues/team-a.yaml", LQ_META, f"{LQ_META}  annotations:\n    {annotation}\n")


@pytest.mark.parametrize("how", ["layer", "annotation", "held-annotation"])
def test_flux_force_recreates_the_object_a_warning_not_a_refusal(repo_copy, how):
    """fluxcd/pkg/ssa shouldForceApply: the layer's spec.force, or the force annotation on the new or the held object,
    makes kustomize-controller delete and recreate the object: a warning at the changed value, no update-refused."""
    if how == "held-annotation":
        _annotate(repo_copy, "kustomize.toolkit.fluxcd.io/force: enabled")
    committed(repo_copy)
    _repoint(repo_copy)
    if how == "layer":
        for cluster in ("prod-eastus2", "dev-westus3"):
            edit(repo_copy, f"clusters/{cluster}/queues.yaml", "  prune: true\n", "  prune: true\n  force: true\n")
    elif how == "annotation":
        _annotate(repo_copy, "kustomize.toolkit.fluxcd.io/force: Enabled")
    else:
        edit(repo_copy, "overlays/team-queues/team-a.yaml", "  annotations:\n    kustomize.toolkit.fluxcd.io/force: enabled\n", "")
    report = validate_repository(repo_copy, base="base")
    assert [f for f in report.findings if f.is_error] == [], report.findings
    warned = [f for f in report.findings if f.rule == "update-recreates"]
    assert [(f.file, f.line, f.resource, f.severity) for f in warned] == [
        ("overlays/team-queues/team-a.yaml", line_of(repo_copy, "overlays/team-queues/team-a.yaml", "clusterQueue: research-cq"),
         "LocalQueue/ray/team-a", "warning")], warned


@pytest.mark.parametrize("annotation", ["kustomize.toolkit.fluxcd.io/ssa: IfNotPresent", "kustomize.toolkit.fluxcd.io/ssa: Ignore",
                                        "kustomize.toolkit.fluxcd.io/reconcile: disabled"])
def test_an_object_flux_does_not_apply_when_held_is_not_updated(repo_copy, annotation):
    """ssa shouldSkipApply: IfNotPresent (the cluster holds the object), Ignore and reconcile: disabled skip it."""
    committed(repo_copy)
    _repoint(repo_copy)
    _annotate(repo_copy, annotation)
    report = validate_repository(repo_copy, base="base")
    assert [f for f in report.findings if f.rule.startswith("update-")] == [], report.findings


SERVICES = """---
apiVersion: v1
kind: Service
metadata:
  name: headless
  namespace: ray
spec:
  clusterIP: None
  selector:
    app: ray
  ports:
    - name: client
      port: 10001
---
apiVersion: v1
kind: Service
metadata:
  name: fixedip
  namespace: ray
spec:
  clusterIP: 10.0.0.50
  selector:
    app: ray
  ports:
    - port: 80
"""


def test_a_headless_service_is_created_and_keeps_its_cluster_ip_when_an_update_leaves_it_out(repo_copy):
    """The Service storage's BeginCreate / BeginUpdate (normalizeClusterIPs, patchAllocatedValues) run before validation:
    `clusterIP: None` alone is a valid create, and an update that no longer writes it keeps what the cluster holds."""
    append(repo_copy, "base/priority-classes.yaml", SERVICES)
    assert [f for f in validate_repository(repo_copy).findings if f.is_error] == []
    committed(repo_copy)
    edit(repo_copy, "base/priority-classes.yaml", "  clusterIP: None\n", "")
    edit(repo_copy, "base/priority-classes.yaml", "  clusterIP: 10.0.0.50\n", "")
    assert [f for f in validate_repository(repo_copy, base="base").findings if f.is_error] == []


def test_a_headless_service_given_a_cluster_ip_is_refused_as_an_update(repo_copy):
    append(repo_copy, "base/priority-classes.yaml", SERVICES)
    committed(repo_copy)
    edit(repo_copy, "base/priority-classes.yaml", "  clusterIP: None\n", "  clusterIP: 10.0.0.51\n")
    found = refused(repo_copy)
    assert [(f.line, f.resource) for f in found] == [
        (line_of(repo_copy, "base/priority-classes.yaml", "clusterIP: 10.0.0.51"), "Service/ray/headless")], found
