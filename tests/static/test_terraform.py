"""Terraform hygiene: fmt, validate, checkov over terraform/ and over what Flux applies, and
the wiring between terraform/ and the manifests (cluster-vars keys, Flux configuration)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.gate import terraform_checks
from harness.gate.terraform import TerraformConfig
from harness.gate.render import render_repository
from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static


def _skip_or_assert(result: terraform_checks.ToolResult, what: str) -> None:
    if result.status == "skipped":
        pytest.skip(f"{what}: {result.detail}")
    assert result.status == "passed", f"{what} failed:\n{result.detail}\n" + "\n".join(
        f"{c['check_id']} {c['resource']} {c['file']}:{c['lines']} {c['name']}" for c in result.failed)


def test_terraform_fmt():
    _skip_or_assert(terraform_checks.terraform_fmt(REPO_ROOT), "terraform fmt -check")


def test_terraform_validate():
    _skip_or_assert(terraform_checks.terraform_validate(REPO_ROOT), "terraform validate")


def test_checkov_terraform():
    _skip_or_assert(terraform_checks.checkov_scan(REPO_ROOT, REPO_ROOT / "terraform", "terraform"), "checkov (terraform)")


def test_checkov_flux_manifests(tmp_path: Path):
    _, clusters = render_repository(REPO_ROOT)
    paths = terraform_checks.write_manifests(clusters, tmp_path / "manifests")
    assert {p.stem for p in paths} == {"prod-eastus2", "dev-westus3"}
    _skip_or_assert(terraform_checks.checkov_scan(REPO_ROOT, tmp_path / "manifests", "kubernetes"), "checkov (kubernetes)")


def test_checkov_skip_list_says_why():
    lines = (REPO_ROOT / terraform_checks.CHECKOV_CONFIG).read_text().splitlines()
    skips = yaml.safe_load("\n".join(lines))["skip-check"]
    assert len(skips) <= 10, "the skip list must stay short"
    for check in skips:
        i = next(n for n, line in enumerate(lines) if line.strip() == f"- {check}")
        assert lines[i - 1].strip().startswith("#"), f"{check} has no comment saying why it is skipped"


def test_cluster_vars_keys_equal_the_examples():
    _, keys = terraform_checks.cluster_vars_keys(TerraformConfig.load(REPO_ROOT))
    for example in sorted((REPO_ROOT / "clusters").glob("*/cluster-vars.example.yaml")):
        assert keys == set(yaml.safe_load(example.read_text())["data"]), example


def test_wiring_is_clean():
    found = terraform_checks.wiring_findings(REPO_ROOT)
    assert not found, "\n".join(f.text() for f in found)



def test_cluster_vars_key_missing(repo_copy: Path):
    path = repo_copy / "terraform/main.tf"
    path.write_text(path.read_text().replace("    AZURE_STORAGE_ACCOUNT_NAME  = azurerm_storage_account.this.name\n", ""))
    found = [f for f in terraform_checks.wiring_findings(repo_copy) if f.rule == "terraform-cluster-vars"]
    assert found and "missing ['AZURE_STORAGE_ACCOUNT_NAME']" in found[0].message


def test_flux_path_of_unknown_cluster(repo_copy: Path):
    path = repo_copy / "terraform/clusters/dev-westus3.tfvars"
    path.write_text(path.read_text().replace('cluster_name          = "dev-westus3"', 'cluster_name          = "dev-westus9"'))
    found = [f for f in terraform_checks.wiring_findings(repo_copy) if f.rule == "terraform-flux-configuration"]
    assert found and "clusters/dev-westus9" in found[0].message


def test_a_cluster_vars_example_written_as_a_list_is_named_as_the_cause(repo_copy):
    """The ConfigMap inside a YAML list is no ConfigMap for the gate (nor for kubectl apply of the real one): one finding
    at the list, saying what to write, beside the follow-on object-ref of the layer that substitutes from it."""
    rel = "clusters/prod-eastus2/cluster-vars.example.yaml"
    text = (repo_copy / rel).read_text()
    head, _, body = text.partition("apiVersion")
    (repo_copy / rel).write_text(head + "- " + ("apiVersion" + body).replace("\n", "\n  ").rstrip() + "\n")
    found = [f for f in terraform_checks.wiring_findings(repo_copy) if f.rule == "terraform-cluster-vars"]
    assert [(f.file, f.line) for f in found] == [(rel, 4)] and "holds a list" in found[0].message, found


def test_a_tfvars_file_of_no_cluster_folder_is_one_finding(repo_copy: Path):
    """terraform/clusters/staging.tfvars copied from prod with its name, and no clusters/staging: the cause is reported
    once (capacity-terraform, at the file), not again as the Flux configuration's path."""
    from harness.gate import validate_repository

    tfvars = (repo_copy / "terraform/clusters/prod-eastus2.tfvars").read_text().replace('"prod-eastus2"', '"staging"')
    (repo_copy / "terraform/clusters/staging.tfvars").write_text(tfvars)
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file) for f in found] == [("capacity-terraform", "terraform/clusters/staging.tfvars")], [f.text() for f in found]
