"""Values azurerm's schema or AKS refuse of the node pools and the Flux configuration (harness/gate/azurerm_schema.py: the one
table of azurerm's checks; node_settings.py, pools.py, terraform_flux.py): pool names (validate.KubernetesAgentPoolName, 6
characters on Windows), two pools with one name, max_pods outside AKS's 10..250, and the Flux configuration's enums, names and
intervals; each one finding at the line that writes the value, and the valid forms clean."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from harness.gate import validate_repository
from harness.gate.pools import node_pools
from tests.static.test_capacity import DEV_TFVARS, PROD_TFVARS, line_of
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

POOLS, AKS, FLUX = "terraform/node_pools.tf", "terraform/aks.tf", "terraform/flux.tf"
GPU_NAME = "name                    = var.gpu_node_pool_name"
WINDOWS = '''
resource "azurerm_kubernetes_cluster_node_pool" "win" {
  name                  = "NAME"
  kubernetes_cluster_id = azurerm_kubernetes_cluster.this.id
  os_type               = "Windows"
  vm_size               = "Standard_D8ds_v6"
  node_count            = 1
  mode                  = "User"
  vnet_subnet_id        = azurerm_subnet.nodes.id
}
'''


def _errors(root: Path) -> list:
    return [f for f in validate_repository(root).findings if f.severity == "error"]


def text(found) -> str:
    return "\n".join(f.text() for f in found)


@pytest.mark.parametrize("rel,old,new,marker", [
    (POOLS, GPU_NAME, 'name                    = "gpu-a100"', '"gpu-a100"'),
    (POOLS, GPU_NAME, 'name                    = "1gpu"', '"1gpu"'),
    (AKS, '"systemtmp"', '"system-tmp"', "temporary_name_for_rotation"),
])
def test_a_pool_name_azurerm_refuses_is_one_error_at_its_line(repo_copy: Path, rel: str, old: str, new: str, marker: str):
    edit(repo_copy, rel, old, new)
    found = _errors(repo_copy)
    assert {(f.rule, f.file, f.line) for f in found} == {("capacity-node-settings", rel, line_of(repo_copy, rel, marker))}, text(found)
    assert "^[a-z][a-z0-9]{0,11}$" in found[0].message and "rename it" in found[0].hint, found[0].text()


def test_the_pool_name_variable_refuses_what_azurerm_refuses(repo_copy: Path):
    (repo_copy / DEV_TFVARS).write_text((repo_copy / DEV_TFVARS).read_text() + 'gpu_node_pool_name = "1gpu"\n')
    found = _errors(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [("terraform-expression", DEV_TFVARS, line_of(repo_copy, DEV_TFVARS, "1gpu"))], text(found)


@pytest.mark.parametrize("name,refused", [("winpool", True), ("win1", False)])
def test_a_windows_pool_name_over_six_characters_is_an_error(repo_copy: Path, name: str, refused: bool):
    (repo_copy / POOLS).write_text((repo_copy / POOLS).read_text() + WINDOWS.replace("NAME", name))
    found = [f for f in _errors(repo_copy) if f.rule == "capacity-node-settings"]
    want = {("capacity-node-settings", POOLS, line_of(repo_copy, POOLS, f'"{name}"'))} if refused else set()
    assert {(f.rule, f.file, f.line) for f in found} == want, text(found)


@pytest.mark.parametrize("name,other", [("system", "aks.tf:44"), ("gpupool", "variables.tf")])
def test_two_pools_with_one_name_are_one_error_and_no_follow_on(repo_copy: Path, name: str, other: str):
    (repo_copy / PROD_TFVARS).write_text((repo_copy / PROD_TFVARS).read_text() + f'cpu_node_count = 1\ncpu_node_pool_name = "{name}"\n')
    found = _errors(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [
        ("capacity-node-settings", PROD_TFVARS, line_of(repo_copy, PROD_TFVARS, "cpu_node_pool_name"))], text(found)
    assert other in found[0].message and "already exists" in found[0].message and "give" in found[0].hint, found[0].text()


def test_a_distinct_optional_pool_name_is_clean(repo_copy: Path):
    (repo_copy / PROD_TFVARS).write_text((repo_copy / PROD_TFVARS).read_text() + 'cpu_node_count = 1\ncpu_node_pool_name = "cpu2"\n')
    assert _errors(repo_copy) == [], text(_errors(repo_copy))


@pytest.mark.parametrize("pods,modelled", [(300, 250), (5, 10)])
def test_max_pods_outside_aks_range_is_an_error_and_never_modelled(repo_copy: Path, pods: int, modelled: int):
    edit(repo_copy, POOLS, "max_pods                = var.max_pods\n  host_encryption_enabled = var.host_encryption_enabled\n  # Set",
         f"max_pods                = {pods}\n  host_encryption_enabled = var.host_encryption_enabled\n  # Set")
    found = [f for f in _errors(repo_copy) if f.rule == "capacity-node-settings"]
    assert {(f.file, f.line) for f in found} == {(POOLS, line_of(repo_copy, POOLS, f"= {pods}"))}, text(found)
    assert "10 to 250" in found[0].message and "between 10 and 250" in found[0].hint, found[0].text()
    gpu = next(p for p in node_pools(repo_copy, "prod-eastus2") if p.name == "gpupool")
    assert gpu.max_pods == modelled and gpu.node_allocatable()["pods"] <= Decimal(modelled)


@pytest.mark.parametrize("old,new,marker", [
    ('reference_type           = "branch"', 'reference_type           = "Branch"', '"Branch"'),
    ('name                       = "cluster"', 'name                       = "cluster_entry"', "cluster_entry"),
    ("retry_interval_in_seconds  = 60", "retry_interval_in_seconds  = 0", "retry_interval_in_seconds"),
    ('scope      = "cluster"', 'scope      = "Cluster"', '"Cluster"'),
])
def test_a_flux_configuration_value_azurerm_refuses_is_one_error_at_its_line(repo_copy: Path, old: str, new: str, marker: str):
    edit(repo_copy, FLUX, old, new)
    found = _errors(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [("terraform-flux-configuration", FLUX, line_of(repo_copy, FLUX, marker))], text(found)
    assert "azurerm's schema" in found[0].message and "terraform plan" in found[0].message, found[0].text()


def test_valid_flux_configuration_values_are_clean(repo_copy: Path):
    edit(repo_copy, FLUX, 'name                       = "cluster"', 'name                       = "cluster-entry-2"')
    edit(repo_copy, FLUX, 'reference_type           = "branch"', 'reference_type           = "tag"')
    assert [f for f in _errors(repo_copy) if "azurerm's schema" in f.message] == []
