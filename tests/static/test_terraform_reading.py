"""terraform/ read as Terraform reads it: meta-arguments only at a resource's top level (a `depends_on` inside a
Flux configuration's `kustomizations` block is the provider's argument), `dynamic` blocks expanded with HCL's own
dynblock extension, and a pool written with for_each that a cluster's value empties reported at that value."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from harness.gate.terraform import TerraformConfig, load_tfvars
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

FLUX = "terraform/flux.tf"
POOLS = "terraform/node_pools.tf"
PROD_TFVARS = "terraform/clusters/prod-eastus2.tfvars"
KUSTOMIZATION = """  kustomizations {
    name                       = "cluster"
    path                       = "./clusters/${var.cluster_name}"
    sync_interval_in_seconds   = var.flux_sync_interval_seconds
    retry_interval_in_seconds  = 60
    timeout_in_seconds         = 600
    garbage_collection_enabled = true
    wait                       = true
  }
"""
DYNAMIC = """  dynamic "kustomizations" {
    for_each = { cluster = "./clusters/${var.cluster_name}" }
    content {
      name                       = kustomizations.key
      path                       = kustomizations.value
      sync_interval_in_seconds   = var.flux_sync_interval_seconds
      retry_interval_in_seconds  = 60
      timeout_in_seconds         = 600
      garbage_collection_enabled = true
      wait                       = true
    }
  }
"""


def line_of(root: Path, rel: str, marker: str) -> int:
    return next(i + 1 for i, text in enumerate((root / rel).read_text().splitlines()) if marker in text)


def flux_configuration(root: Path, tfvars: str = PROD_TFVARS):
    ev = TerraformConfig.load(root).evaluate(load_tfvars(root / tfvars, root))
    return ev.of_type("azurerm_kubernetes_flux_configuration")[0]


def test_depends_on_in_a_kustomizations_block_is_an_argument_not_a_meta_argument(repo_copy: Path):
    edit(repo_copy, FLUX, '    wait                       = true\n', '    wait                       = true\n    depends_on                 = ["infra"]\n')
    report = validate_repository(repo_copy)
    assert not report.findings, "\n".join(f.text() for f in report.findings)
    layer = flux_configuration(repo_copy).body.nested("kustomizations")[0]
    assert layer.get("depends_on").value == ["infra"]


def test_dynamic_blocks_are_expanded_as_terraform_expands_them(repo_copy: Path):
    edit(repo_copy, FLUX, KUSTOMIZATION, DYNAMIC)
    report = validate_repository(repo_copy)
    assert not report.findings, "\n".join(f.text() for f in report.findings)
    layers = flux_configuration(repo_copy).body.nested("kustomizations")
    generated = layers[0]
    assert (generated.get("name").value, generated.get("path").value) == ("cluster", "./clusters/prod-eastus2")
    assert generated.line == line_of(repo_copy, FLUX, 'dynamic "kustomizations"')
    assert generated.get("path").line == line_of(repo_copy, FLUX, "path                       = kustomizations.value")


def test_an_empty_dynamic_block_generates_nothing(repo_copy: Path):
    edit(repo_copy, FLUX, KUSTOMIZATION, DYNAMIC.replace('{ cluster = "./clusters/${var.cluster_name}" }', "{}"))
    assert flux_configuration(repo_copy).body.nested("kustomizations") == []
    rules = {f.rule for f in validate_repository(repo_copy).findings}
    assert "terraform-flux-configuration" in rules, rules


def test_for_each_pool_emptied_by_a_cluster_value_is_reported_at_that_value(repo_copy: Path):
    edit(repo_copy, POOLS, 'resource "azurerm_kubernetes_cluster_node_pool" "gpu" {\n  count = var.gpu_node_count > 0 ? 1 : 0\n\n'
         '  name                    = var.gpu_node_pool_name',
         'locals {\n  gpu_pools = var.gpu_node_count > 0 ? { (var.gpu_node_pool_name) = var.gpu_node_count } : {}\n}\n\n'
         'resource "azurerm_kubernetes_cluster_node_pool" "gpu" {\n  for_each = local.gpu_pools\n\n  name                    = each.key')
    edit(repo_copy, POOLS, "  node_count              = var.gpu_node_count", "  node_count              = each.value")
    clean = validate_repository(repo_copy)
    assert not clean.findings, "\n".join(f.text() for f in clean.findings)
    edit(repo_copy, PROD_TFVARS, "gpu_node_count = 1", "gpu_node_count = 0")
    report = validate_repository(repo_copy)
    assert len(report.findings) == 1, "\n".join(f.text() for f in report.findings)
    f = report.findings[0]
    assert (f.rule, f.file, f.line) == ("capacity-empty-pool", PROD_TFVARS, line_of(repo_copy, PROD_TFVARS, "gpu_node_count = 0"))
    assert f.resource == "azurerm_kubernetes_cluster_node_pool.gpu" and "gpu_node_count = 0" in f.message
