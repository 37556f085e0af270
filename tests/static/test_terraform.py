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
    """cluster_name naming no cluster: one cause, reported by capacity-terraform at the tfvars line that sets it (the
    Flux configuration's path follows cluster_name, so it is no second finding)."""
    from harness.gate import capacity, render_repository

    path = repo_copy / "terraform/clusters/dev-westus3.tfvars"
    path.write_text(path.read_text().replace('cluster_name          = "dev-westus3"', 'cluster_name          = "dev-westus9"'))
    assert not [f for f in terraform_checks.wiring_findings(repo_copy) if f.rule == "terraform-flux-configuration"]
    found = [f for f in capacity.capacity_findings(repo_copy, render_repository(repo_copy)[1]) if f.rule == "capacity-terraform"]
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.startswith("cluster_name"))
    assert [(f.file, f.line) for f in found] == [("terraform/clusters/dev-westus3.tfvars", line)] and "dev-westus9" in found[0].message, found


def _flux(repo: Path):
    return [f for f in terraform_checks.wiring_findings(repo) if f.rule == "terraform-flux-configuration"]


def test_a_hard_coded_flux_path_is_named_for_each_other_cluster_at_the_path_line(repo_copy: Path):
    """path = "./clusters/prod-eastus2" sends dev's Flux extension to prod's folder: one finding at the path line,
    naming dev-westus3 (prod's own path is right)."""
    flux = repo_copy / "terraform/flux.tf"
    flux.write_text(flux.read_text().replace('"./clusters/${var.cluster_name}"', '"./clusters/prod-eastus2"'))
    found = _flux(repo_copy)
    line = next(i for i, t in enumerate(flux.read_text().splitlines(), 1) if '"./clusters/prod-eastus2"' in t)
    assert [(f.file, f.line) for f in found] == [("terraform/flux.tf", line)], [f.text() for f in found]
    assert "dev-westus3" in found[0].message and "prod-eastus2.tfvars" not in found[0].message
    assert "${var.cluster_name}" in found[0].hint


EXTRA = """
  kustomizations {
    name = "infra"
    path = "./flux/infrastructure/PATH"
  }
"""


def _extra(repo: Path, path: str) -> int:
    flux = repo / "terraform/flux.tf"
    text = flux.read_text()
    anchor = "  # cluster-vars must exist before the queues layer first renders."
    flux.write_text(text.replace(anchor, EXTRA.replace("PATH", path) + "\n" + anchor))
    return next(i for i, t in enumerate(flux.read_text().splitlines(), 1) if f'"./flux/infrastructure/{path}"' in t)


def test_an_extra_kustomization_path_typo_is_one_finding_at_its_path_line(repo_copy: Path):
    line = _extra(repo_copy, "controller")
    found = _flux(repo_copy)
    assert [(f.file, f.line) for f in found] == [("terraform/flux.tf", line)], [f.text() for f in found]
    assert "dev-westus3.tfvars" in found[0].message and "prod-eastus2.tfvars" in found[0].message
    assert "clusters/<cluster_name>" not in found[0].hint and "flux/infrastructure/controllers" in found[0].hint


def test_an_entry_path_typo_is_one_finding_at_its_path_line(repo_copy: Path):
    flux = repo_copy / "terraform/flux.tf"
    flux.write_text(flux.read_text().replace('"./clusters/${var.cluster_name}"', '"./cluster/${var.cluster_name}"'))
    found = _flux(repo_copy)
    line = next(i for i, t in enumerate(flux.read_text().splitlines(), 1) if '"./cluster/${var.cluster_name}"' in t)
    assert [(f.file, f.line) for f in found] == [("terraform/flux.tf", line)], [f.text() for f in found]
    assert "dev-westus3" in found[0].message and "prod-eastus2" in found[0].message


def test_an_extra_kustomization_applying_a_layer_of_the_entry_point_is_an_object_collision(repo_copy: Path):
    """The extension's Flux Kustomization flux-system-infra would apply what infra-controllers applies: one
    object-collision at the block's path line, for both clusters."""
    from harness.gate import terraform_flux
    from harness.gate.render import render_repository

    line = _extra(repo_copy, "controllers")
    assert not _flux(repo_copy)
    builds, clusters = render_repository(repo_copy)
    found = terraform_flux.collision_findings(repo_copy, clusters, builds)
    assert [(f.rule, f.file, f.line, f.severity) for f in found] == [("object-collision", "terraform/flux.tf", line, "error")], found
    assert "infra-controllers" in found[0].message and "HelmRelease/kueue" in found[0].message
    assert "dev-westus3" in found[0].message and "prod-eastus2" in found[0].message


def test_an_extra_kustomization_of_its_own_directory_is_clean(repo_copy: Path):
    from harness.gate import terraform_flux
    from harness.gate.render import render_repository

    (repo_copy / "flux/extra").mkdir()
    (repo_copy / "flux/extra/cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n")
    flux = repo_copy / "terraform/flux.tf"
    flux.write_text(flux.read_text().replace("  # cluster-vars must exist", '  kustomizations {\n    name = "extra"\n    path = "./flux/extra"\n  }\n\n  # cluster-vars must exist'))
    builds, clusters = render_repository(repo_copy)
    assert not _flux(repo_copy) and not terraform_flux.collision_findings(repo_copy, clusters, builds)


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
