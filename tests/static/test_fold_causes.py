"""One cause gives one finding (F.md #11): the same missing namespace on every cluster, and a deleted workload
ServiceAccount that every workload names (findings.keep_once across clusters, folding.fold across rules)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from harness.gate.findings import Finding, keep_once
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static


def test_one_deleted_namespace_is_one_finding_naming_every_cluster(repo_copy: Path):
    (repo_copy / "base/namespace.yaml").unlink()
    edit(repo_copy, "base/kustomization.yaml", "  - namespace.yaml\n", "")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.file, f.rule) for f in found] == [("base/service-account.yaml", "namespace-missing")], found
    assert "cluster dev-westus3" in found[0].context and "cluster prod-eastus2" in found[0].context
    assert "LocalQueue default" in found[0].context and "LocalQueue team-a" in found[0].context  # what each cluster has in it


def test_one_deleted_service_account_is_one_finding(repo_copy: Path):
    """Not one terraform-federated-subject plus an object-ref per workload that names it."""
    (repo_copy / "base/service-account.yaml").write_text((repo_copy / "base/service-account.yaml").read_text().split("---\n", 1)[1])
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [f.rule for f in found] == ["terraform-federated-subject"], found


def test_the_same_message_on_two_clusters_but_for_its_name_is_one_finding():
    unique: dict = {}
    dev = Finding("f.yaml", 3, "X/a", "r", "pods of cluster dev-westus3 stay Pending", "fix it", "cluster dev-westus3: Kustomization/x")
    prod = Finding("f.yaml", 3, "X/a", "r", "pods of cluster prod-eastus2 stay Pending", "fix it", "cluster prod-eastus2: Kustomization/x")
    assert keep_once(unique, dev) and not keep_once(unique, prod)
    (kept,) = unique.values()
    assert kept.message == "pods of cluster dev-westus3, prod-eastus2 stay Pending", kept
    # a fix naming each cluster's own file stays apart
    other = Finding("f.yaml", 3, "X/a", "r", "pods of cluster prod-eastus2 stay Pending", "edit prod-eastus2.tfvars", "cluster prod-eastus2: K")
    assert keep_once({}, other) and keep_once({**unique}, other)


@pytest.mark.parametrize("change,line,said", [
    (("azure.workload.identity/client-id:", "azure.workload.identity/client_id:"), 8, "did you mean azure.workload.identity/client-id"),
    (('    azure.workload.identity/client-id: "${WORKLOAD_IDENTITY_CLIENT_ID}"\n', ""), 4, "has no annotation azure.workload.identity/client-id")])
def test_the_client_id_key_of_the_trusted_service_account_is_one_finding_at_the_account(repo_copy: Path, change, line, said):
    """Q.md #6: the ServiceAccount the federated credential trusts is still there, without the key the workload identity
    webhook reads: at its key (or its metadata), not at terraform/identity.tf with a hint to restore it."""
    edit(repo_copy, "base/service-account.yaml", *change)
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("terraform-federated-subject", "base/service-account.yaml", line)], found
    assert said in found[0].message and "azure.workload.identity/client-id" in found[0].hint, found[0].text()
