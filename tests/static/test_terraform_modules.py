"""Module calls of terraform/ (harness.gate.tf_modules, tools/tfeval modules.go): a local module called once is read with
its inputs (its pools checked like the root's, findings at the module's lines or, through the call's arguments, at the
tfvars line); any other module block gets a terraform-module-unread warning, and when it may create node pools of the
cluster the rules that need every pool claim nothing (no false capacity-flavor-labels / capacity-empty-pool)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.gate.pools import node_pools
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
        "gpu_pool": ("terraform/node_pools.tf", 10, "./modules/gpu-pool", True, True, True),
        "naming": ("terraform/naming.tf", 1, "Azure/naming/azurerm", False, False, False)}
    assert calls["gpu_pool"]["types"] == ["azurerm_kubernetes_cluster_node_pool"]
    assert "azurerm_kubernetes_cluster.this" in calls["gpu_pool"]["refs"] and "local.tags" not in calls["gpu_pool"]["refs"]  # through locals
    assert pool_modules(TerraformConfig.load(repo_copy)) == []  # the local one is read, the registry one is not given the cluster


def test_a_pool_in_a_local_module_is_read_like_a_root_pool(repo_copy):
    """The reviewer's case is clean (before: capacity-flavor-labels at base/ for both clusters and capacity-empty-pool,
    blaming flavors whose labels are right); the pool is the module's, its settings traced to the tfvars lines."""
    gpu_pool_in_a_module(repo_copy)
    found = validate_repository(repo_copy).findings
    assert found == [], "\n".join(f.text() for f in found)
    gpu = next(p for p in node_pools(repo_copy, "prod-eastus2") if p.name == "gpupool")
    assert (gpu.address, gpu.file, gpu.count) == ("module.gpu_pool.azurerm_kubernetes_cluster_node_pool.this", "terraform/modules/gpu-pool/main.tf", 1)
    assert (gpu.count_origin.where(), gpu.vm_size_origin.where()) == ("terraform/clusters/prod-eastus2.tfvars:12", "terraform/clusters/prod-eastus2.tfvars:11")


def _placed(findings) -> list[tuple]:
    return sorted((f.rule, f.file, f.line) for f in findings if f.is_error)


@pytest.mark.parametrize("case", ["tfvars-empties-the-pool", "tainted-in-the-module"])
def test_a_broken_pool_in_a_module_is_reported_where_it_is_written(repo_copy, tmp_path, case):
    """The same break gives the same findings as with the pool in the root module: at the tfvars line the value comes from
    through the call's argument, or at the module's own line."""
    root = tmp_path / "root"
    shutil.copytree(repo_copy, root)
    gpu_pool_in_a_module(repo_copy)
    for r, rel in ((root, "terraform/node_pools.tf"), (repo_copy, "terraform/modules/gpu-pool/main.tf")):
        if case == "tfvars-empties-the-pool":
            edit(r, "terraform/clusters/prod-eastus2.tfvars", "gpu_node_count = 1", "gpu_node_count = 0")
        else:
            edit(r, rel, "  node_taints = []\n", '  node_taints = ["sku=gpu:NoSchedule"]\n')
    want = _placed(validate_repository(root).findings)
    assert want, "the break is no break"
    moved = {("terraform/node_pools.tf", 26): ("terraform/modules/gpu-pool/main.tf", 17)}  # node_taints' line, root -> module
    assert _placed(validate_repository(repo_copy).findings) == sorted((rule, *moved.get((f, ln), (f, ln))) for rule, f, ln in want)


def test_a_local_module_called_with_count_is_not_read_and_no_false_error(repo_copy):
    """A module call with count (not read): one warning at the block, the pool checks claim nothing."""
    gpu_pool_in_a_module(repo_copy)
    edit(repo_copy, "terraform/node_pools.tf", 'source = "./modules/gpu-pool"\n', 'source = "./modules/gpu-pool"\n  count  = 1\n')
    edit(repo_copy, "terraform/flux.tf", "module.gpu_pool,", "module.gpu_pool[0],")
    edit(repo_copy, "terraform/outputs.tf", "module.gpu_pool.pools", "module.gpu_pool[0].pools")
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
    """The control: a registry module for names only is one warning, a local module given the cluster that declares no
    pool is read (no warning, its resource addressed in the module), and a flavor no pool carries is still reported."""
    naming_module(repo_copy)
    write(repo_copy, "terraform/modules/reader/main.tf", 'variable "scope" {}\nresource "azurerm_role_assignment" "this" {\n'
          '  scope                = var.scope\n  role_definition_name = "Reader"\n  principal_id         = "00000000-0000-0000-0000-000000000000"\n}\n')
    (repo_copy / "terraform/reader.tf").write_text('module "reader" {\n  source = "./modules/reader"\n  scope  = azurerm_kubernetes_cluster.this.id\n}\n')
    assert pool_modules(TerraformConfig.load(repo_copy)) == []
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line, f.severity) for f in found] == [(RULE, "terraform/naming.tf", 1, "warning")], "\n".join(f.text() for f in found)
    assert [b.address for b in TerraformConfig.load(repo_copy).of_type("azurerm_role_assignment") if b.module] == [
        "module.reader.azurerm_role_assignment.this"]
    edit(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia", "accelerator: nvidia-a100")
    assert "capacity-flavor-labels" in {f.rule for f in validate_repository(repo_copy).findings}


def test_an_undeclared_reference_in_a_read_module_is_reported_at_its_line(repo_copy):
    gpu_pool_in_a_module(repo_copy)
    edit(repo_copy, "terraform/modules/gpu-pool/main.tf", "  tags = var.tags\n", "  tags = azurerm_resource_group.this.tags\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file) for f in found] == [("terraform-expression", "terraform/modules/gpu-pool/main.tf")], "\n".join(f.text() for f in found)
    assert "module.gpu_pool" in found[0].message
