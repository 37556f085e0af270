"""Module calls of terraform/ (harness.gate.tf_modules, tools/tfeval modules.go): the gate reads the root module's
resources only, so a module block gets a terraform-module-unread warning, and when the module may create node pools of
the cluster the rules that need every pool claim nothing (no false capacity-flavor-labels / capacity-empty-pool)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate.terraform import TerraformConfig
from harness.gate.tf_modules import RULE, pool_modules
from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import edit, write

pytestmark = pytest.mark.static

RENAMES = [("var.gpu_node_count", "var.node_count"), ("var.gpu_node_pool_name", "var.name"), ("azurerm_kubernetes_cluster.this.id", "var.cluster_id"),
           ("var.gpu_vm_size", "var.vm_size"), ("var.gpu_os_sku", "var.os_sku"), ("var.gpu_zones", "var.zones"),
           ("azurerm_subnet.nodes.id", "var.subnet_id"), ("local.tags", "var.tags")]
INPUTS = {"cluster_id": "azurerm_kubernetes_cluster.this.id", "subnet_id": "azurerm_subnet.nodes.id", "name": "var.gpu_node_pool_name",
          "vm_size": "var.gpu_vm_size", "node_count": "var.gpu_node_count", "os_sku": "var.gpu_os_sku", "zones": "var.gpu_zones",
          "max_pods": "var.max_pods", "host_encryption_enabled": "var.host_encryption_enabled", "gpu_driver": "var.gpu_driver",
          "gpu_sku_label": "var.gpu_sku_label", "tags": "local.tags"}


def gpu_pool_in_a_module(root: Path) -> None:
    """N#2: the GPU pool moved unchanged into ./modules/gpu-pool (every var.* a module variable), called from node_pools.tf
    line 10 with the root variables; flux.tf and outputs.tf point at module.gpu_pool. Terraform plans the same pool."""
    pools = (root / "terraform/node_pools.tf").read_text()
    start, end = pools.index('resource "azurerm_kubernetes_cluster_node_pool" "gpu"'), pools.index('resource "azurerm_kubernetes_cluster_node_pool" "cpu"')
    body = pools[start:end].replace('"gpu"', '"this"')
    for old, new in RENAMES:
        body = body.replace(old, new)
    write(root, "terraform/modules/gpu-pool/main.tf", body + "".join(f'variable "{v}" {{}}\n' for v in INPUTS)
          + 'output "pools" {\n  value = { for p in azurerm_kubernetes_cluster_node_pool.this : p.name => p.vm_size }\n}\n')
    call = 'module "gpu_pool" {\n  source = "./modules/gpu-pool"\n' + "".join(f"  {k} = {v}\n" for k, v in INPUTS.items()) + "}\n\n"
    (root / "terraform/node_pools.tf").write_text(pools[:start] + call + pools[end:])
    edit(root, "terraform/flux.tf", "azurerm_kubernetes_cluster_node_pool.gpu,", "module.gpu_pool,")
    edit(root, "terraform/outputs.tf", "{ for p in azurerm_kubernetes_cluster_node_pool.gpu : p.name => { vm_size = p.vm_size, node_count = p.node_count } }",
         "{ for k, v in module.gpu_pool.pools : k => { vm_size = v, node_count = var.gpu_node_count } }")


def naming_module(root: Path) -> None:
    """A registry module used for names only (not given the cluster), feeding the VNet's name."""
    (root / "terraform/naming.tf").write_text('module "naming" {\n  source  = "Azure/naming/azurerm"\n  version = "0.4.2"\n'
                                              '  suffix  = [var.cluster_name]\n}\n')
    edit(root, "terraform/network.tf", 'name                = "vnet-${var.cluster_name}"', "name                = module.naming.virtual_network.name")


def test_tfeval_reports_module_calls_from_terraforms_loader(repo_copy):
    gpu_pool_in_a_module(repo_copy)
    naming_module(repo_copy)
    calls = {c["name"]: c for c in TerraformConfig.load(repo_copy).modules}
    assert {k: (c["file"], c["line"], c["source"], c["local"], c["loaded"], c["read"]) for k, c in calls.items()} == {
        "gpu_pool": ("terraform/node_pools.tf", 10, "./modules/gpu-pool", True, True, False),
        "naming": ("terraform/naming.tf", 1, "Azure/naming/azurerm", False, False, False)}
    assert calls["gpu_pool"]["types"] == ["azurerm_kubernetes_cluster_node_pool"]
    assert "azurerm_kubernetes_cluster.this" in calls["gpu_pool"]["refs"] and "local.tags" not in calls["gpu_pool"]["refs"]  # through locals
    assert [c["name"] for c in pool_modules(TerraformConfig.load(repo_copy))] == ["gpu_pool"]


def test_a_pool_in_a_local_module_is_no_false_capacity_error(repo_copy):
    """The reviewer's case: clean but for one warning at the module block (before: capacity-flavor-labels at base/ for both
    clusters and capacity-empty-pool, blaming flavors whose labels are right)."""
    gpu_pool_in_a_module(repo_copy)
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line, f.severity) for f in found] == [(RULE, "terraform/node_pools.tf", 10, "warning")], "\n".join(f.text() for f in found)
    assert "capacity-*" in found[0].message and "azurerm_kubernetes_cluster_node_pool" in found[0].hint


def test_a_registry_module_given_the_cluster_skips_the_pool_checks(repo_copy):
    """A registry module (not read offline) that gets the cluster's id may create pools: the checks skip, one warning."""
    edit(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia", "accelerator: nvidia-a100")  # wrong with the root pools alone
    (repo_copy / "terraform/extra_pools.tf").write_text('module "extra_pools" {\n  source  = "Azure/aks-node-pools/azurerm"\n'
                                                        "  cluster = { id = azurerm_kubernetes_cluster.this.id }\n}\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [(RULE, "terraform/extra_pools.tf", 1)], "\n".join(f.text() for f in found)
    assert "azurerm_kubernetes_cluster.this" in found[0].message


def test_a_module_without_pools_keeps_the_capacity_checks(repo_copy):
    """The control: a registry module for names only, and a local module given the cluster that declares no pool, are
    each one warning, and a flavor no pool carries is still reported."""
    naming_module(repo_copy)
    write(repo_copy, "terraform/modules/reader/main.tf", 'variable "scope" {}\nresource "azurerm_role_assignment" "this" {\n'
          '  scope                = var.scope\n  role_definition_name = "Reader"\n  principal_id         = "00000000-0000-0000-0000-000000000000"\n}\n')
    (repo_copy / "terraform/reader.tf").write_text('module "reader" {\n  source = "./modules/reader"\n  scope  = azurerm_kubernetes_cluster.this.id\n}\n')
    assert pool_modules(TerraformConfig.load(repo_copy)) == []
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line, f.severity) for f in found] == [
        (RULE, "terraform/naming.tf", 1, "warning"), (RULE, "terraform/reader.tf", 1, "warning")], "\n".join(f.text() for f in found)
    edit(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia", "accelerator: nvidia-a100")
    assert "capacity-flavor-labels" in {f.rule for f in validate_repository(repo_copy).findings}
