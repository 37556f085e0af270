"""Node pool settings azurerm's schema or AKS refuse (harness/gate/azurerm_schema.py, node_settings.py): gpu_instance on a size
whose GPU has no MIG, upgrade_settings.max_surge on a Spot pool, values outside azurerm's case-sensitive enums and arguments
default_node_pool does not have; each at its own line, one finding per cause, and the valid forms clean."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from harness.gate import validate_repository
from harness.gate.azurerm_schema import refused_value
from harness.gate.pools import node_pools
from harness.gate.sku import mig_resources, sku_table
from tests.static.test_capacity import DEV_TFVARS, drop_gpu_upgrade_settings, line_of
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

POOLS = "terraform/node_pools.tf"
AKS = "terraform/aks.tf"
GPU_DRIVER = "  gpu_driver  = var.gpu_driver\n"
SPOT = '  priority        = "Spot"\n  eviction_policy = "Delete"\n'


def _settings(root: Path) -> list:
    return [f for f in validate_repository(root).findings if f.rule.startswith("capacity-node-settings") or f.rule.startswith("capacity-spot")]


def text(found) -> str:
    return "\n".join(f.text() for f in found)


@pytest.mark.parametrize("size,profile", [("Standard_NC8as_T4_v3", "MIG1g"), ("Standard_NV36ads_A10_v5", "MIG2g")])
def test_gpu_instance_on_a_gpu_without_mig_is_an_error_and_whole_gpus_are_counted(repo_copy: Path, size: str, profile: str):
    edit(repo_copy, POOLS, GPU_DRIVER, f'{GPU_DRIVER}  gpu_instance = "{profile}"\n')
    edit(repo_copy, DEV_TFVARS, "Standard_NC24ads_A100_v4", size)
    found = [f for f in validate_repository(repo_copy).findings if f.rule in ("capacity-node-settings", "capacity-gpu-mig")]
    dev = [f for f in found if "dev-westus3" in f.context]
    assert [(f.rule, f.severity, f.file, f.line) for f in dev] == [
        ("capacity-node-settings", "error", POOLS, line_of(repo_copy, POOLS, "gpu_instance"))], text(found)
    assert "has no MIG" in dev[0].message and size in dev[0].message and "remove gpu_instance" in dev[0].hint, dev[0].text()
    gpu = next(p for p in node_pools(repo_copy, "dev-westus3") if p.name == "gpupool")
    assert gpu.mig() == {} and gpu.node_allocatable()["nvidia.com/gpu"] == Decimal(1), gpu.node_allocatable()
    prod = [f for f in found if "prod-eastus2" in f.context]  # prod keeps its A100s: the MIG warning, not the error
    assert [f.rule for f in prod] == ["capacity-gpu-mig"], text(found)


def test_only_the_sizes_marked_mig_are_partitioned():
    skus = sku_table()[0]
    assert mig_resources(skus["Standard_NC24ads_A100_v4"], "MIG1g")["nvidia.com/mig-1g.10gb"] == Decimal(7)
    assert all(mig_resources(s, "MIG1g") == {} for s in skus.values() if "T4" in s.gpu or "A10 " in s.gpu or not s.gpus)
    assert {n for n, s in skus.items() if s.mig} == {n for n, s in skus.items() if "A100" in s.gpu or "H100" in s.gpu}


def _spot(root: Path) -> None:
    edit(root, POOLS, GPU_DRIVER, GPU_DRIVER + SPOT)
    edit(root, POOLS, "  node_taints = []\n", '  node_taints = ["kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]\n')


def test_a_spot_pool_with_max_surge_is_refused_at_the_max_surge_line(repo_copy: Path):
    _spot(repo_copy)
    found = _settings(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [("capacity-node-settings", POOLS, line_of(repo_copy, POOLS, "max_surge"))], text(found)
    assert "Spot pools can't set max surge" in found[0].message and "remove the upgrade_settings block" in found[0].hint, found[0].text()


def test_a_spot_pool_without_upgrade_settings_is_clean(repo_copy: Path):
    _spot(repo_copy)
    drop_gpu_upgrade_settings(repo_copy)
    assert _settings(repo_copy) == [], text(_settings(repo_copy))


@pytest.mark.parametrize("before,after,near", [
    ('eviction_policy = "Delete"', 'eviction_policy = "delete"', "Delete"),
    ('priority        = "Spot"', 'priority        = "spot"', "Spot"),
])
def test_a_case_variant_of_an_azurerm_enum_is_one_finding_at_its_line(repo_copy: Path, before: str, after: str, near: str):
    """priority = "spot" is the finding at priority's line, not a Spot-only eviction_policy on a Regular pool (a follow-on)."""
    _spot(repo_copy)
    drop_gpu_upgrade_settings(repo_copy)
    edit(repo_copy, POOLS, before, after)
    found = _settings(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [("capacity-node-settings", POOLS, line_of(repo_copy, POOLS, after))], text(found)
    assert f"did you mean {near}?" in found[0].hint and "case-sensitive" in found[0].message, found[0].text()


def test_kubelet_disk_type_in_the_wrong_case_on_the_default_pool(repo_copy: Path):
    edit(repo_copy, AKS, '    name                         = "system"\n', '    name                         = "system"\n    kubelet_disk_type = "os"\n')
    found = _settings(repo_copy)
    assert [(f.file, f.line) for f in found] == [(AKS, line_of(repo_copy, AKS, "kubelet_disk_type"))], text(found)
    assert "did you mean OS?" in found[0].hint, found[0].hint


@pytest.mark.parametrize("block,setting,near", [
    ("kubelet_config", 'cpu_manager_policy = "Static"', "static"),
    ("kubelet_config", 'topology_manager_policy = "Single-NUMA-Node"', "single-numa-node"),
    ("linux_os_config", 'transparent_huge_page_enabled = "Always"', "always"),
    ("linux_os_config", 'transparent_huge_page_defrag = "Madvise"', "madvise"),
])
def test_an_enum_of_a_nested_block_in_the_wrong_case_is_one_finding_at_its_line(repo_copy: Path, block: str, setting: str, near: str):
    """schemaNodePoolKubeletConfig / schemaNodePoolLinuxOSConfig validate in lower case: "Static" fails `terraform plan`; the same
    table and code reach the nested blocks of both pool kinds; the valid spelling (and a valid sibling) is clean."""
    edit(repo_copy, POOLS, "  node_taints = []\n", f"  node_taints = []\n\n  {block} {{\n    {setting}\n  }}\n")
    found = _settings(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [("capacity-node-settings", POOLS, line_of(repo_copy, POOLS, setting))], text(found)
    assert f"did you mean {near}?" in found[0].hint and f"expected {block}.0." in found[0].message, found[0].text()
    attr = setting.split(" = ")[0]
    edit(repo_copy, POOLS, setting, f'{attr} = "{near}"')
    assert _settings(repo_copy) == [], text(_settings(repo_copy))


def test_default_node_pool_type_in_the_wrong_case_and_its_nested_blocks(repo_copy: Path):
    name = '    name                         = "system"\n'
    edit(repo_copy, AKS, name, name + '    type = "virtualMachineScaleSets"\n    kubelet_config {\n      cpu_manager_policy = "None"\n    }\n')
    found = _settings(repo_copy)
    assert sorted((f.file, f.line) for f in found) == sorted([(AKS, line_of(repo_copy, AKS, "virtualMachineScaleSets")),
                                                              (AKS, line_of(repo_copy, AKS, "cpu_manager_policy"))]), text(found)
    assert any("expected default_node_pool.0.kubelet_config.0.cpu_manager_policy" in f.message for f in found), text(found)
    assert any("did you mean VirtualMachineScaleSets?" in f.hint for f in found), text(found)


def test_the_enum_table_refuses_unknown_values_only_where_the_set_is_closed():
    assert refused_value("mode", "system") == (("System", "User"), "System")
    assert refused_value("mode", "Spot") == (("System", "User"), None)
    assert refused_value("os_sku", "ubuntu")[1] == "Ubuntu"
    assert refused_value("os_sku", "Windows2025") is None  # os_sku's set grew during 4.x: no verdict on a value not listed
    assert refused_value("priority", "Spot") is None and refused_value("priority", None) is None


@pytest.mark.parametrize("argument", ['priority = "Spot"', 'mode = "User"', 'os_type = "Linux"'])
def test_an_argument_default_node_pool_lacks_is_one_finding_whose_fix_is_a_separate_pool(repo_copy: Path, argument: str):
    edit(repo_copy, AKS, '    name                         = "system"\n', f'    name                         = "system"\n    {argument}\n')
    found = _settings(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [("capacity-node-settings", AKS, line_of(repo_copy, AKS, argument))], text(found)
    assert "is not expected here" in found[0].message and "default_node_pool schema" in found[0].message, found[0].message
    assert "separate azurerm_kubernetes_cluster_node_pool" in found[0].hint and "set mode = \"User\" on the Spot pool" not in found[0].hint
