"""What azurerm 4.x's schema says of a node pool's arguments, for the pool checks (harness.gate.pools reads the arguments,
harness.gate.node_settings reports them). The provider cannot be built here (versions.yaml `terraform-providers`), so its
schema is written down from its source, internal/services/containers/:

- ENUMS: the string arguments azurerm validates with `validation.StringInSlice([...], false)`: the `false` makes the match
  case-sensitive, so "spot" or "delete" fails `terraform plan` ("expected priority to be one of ["Regular" "Spot"], got spot")
  (kubernetes_cluster_node_pool_resource.go `resourceKubernetesClusterNodePoolSchema`; the default pool's, kubernetes_nodepool.go
  `SchemaDefaultNodePool`, share the values). `closed`: every other value is refused; os_sku's set grew during 4.x (Ubuntu2204,
  AzureLinux3, Windows2022...), so there only a case variant of a known value is reported, never an unknown one.
  An argument of a nested block is written as its path ("kubelet_config.cpu_manager_policy"): schemaNodePoolKubeletConfig and
  schemaNodePoolLinuxOSConfig, which both pool blocks use, validate their enums the same way, in lower case ("Static" fails:
  "expected kubelet_config.0.cpu_manager_policy to be one of ["none" "static"], got Static"). `type` is default_node_pool's
  (AvailabilitySet, VirtualMachineScaleSets); workload_runtime's set differs between the blocks and grew (WasmWasi, Kata...),
  so it is open.
- UNSUPPORTED: arguments a pool block's schema does not have (`terraform validate`: "Unsupported argument: An argument named
  "priority" is not expected here"), per block, with the fix. default_node_pool has no priority, eviction_policy,
  spot_max_price, mode, os_type or windows_profile: the default pool is the cluster's Linux System pool on Regular VMs (Spot for it
  is the open feature request hashicorp/terraform-provider-azurerm#6086); gpu_instance_profile is the ARM API's name, azurerm
  spells it gpu_instance.
"""
from __future__ import annotations

from harness.gate.sku import MIG_PROFILES

ENUMS: dict[str, tuple[tuple[str, ...], bool]] = {  # argument -> (values azurerm accepts, closed)
    "priority": (("Regular", "Spot"), True),
    "eviction_policy": (("Delete", "Deallocate"), True),
    "mode": (("System", "User"), True),
    "os_type": (("Linux", "Windows"), True),
    "kubelet_disk_type": (("OS", "Temporary"), True),
    "os_disk_type": (("Ephemeral", "Managed"), True),
    "scale_down_mode": (("Deallocate", "Delete"), True),
    "gpu_driver": (("Install", "None"), True),
    "gpu_instance": (tuple(MIG_PROFILES), True),
    "os_sku": (("AzureLinux", "AzureLinux3", "Ubuntu", "Ubuntu2204", "Ubuntu2404", "Windows2019", "Windows2022"), False),
    "type": (("AvailabilitySet", "VirtualMachineScaleSets"), True),
    "workload_runtime": (("OCIContainer", "WasmWasi", "KataMshvVmIsolation"), False),
    "kubelet_config.cpu_manager_policy": (("none", "static"), True),
    "kubelet_config.topology_manager_policy": (("none", "best-effort", "restricted", "single-numa-node"), True),
    "linux_os_config.transparent_huge_page_enabled": (("always", "madvise", "never"), True),
    "linux_os_config.transparent_huge_page": (("always", "madvise", "never"), True),
    "linux_os_config.transparent_huge_page_defrag": (("always", "defer", "defer+madvise", "madvise", "never"), True),
}

NODE_POOL, DEFAULT_POOL = "azurerm_kubernetes_cluster_node_pool", "default_node_pool"
_SPOT = ("remove {attr} from default_node_pool, and run Spot VMs in a separate azurerm_kubernetes_cluster_node_pool with priority = "
         "\"Spot\" (mode \"User\": AKS refuses Spot system pools); azurerm has no Spot default pool (terraform-provider-azurerm#6086)")
_WINDOWS = ("remove {attr} from default_node_pool (the default pool runs Linux), and add a separate azurerm_kubernetes_cluster_node_pool "
            "with os_type = \"Windows\" for Windows nodes")
UNSUPPORTED: dict[str, tuple[tuple[str, ...], str]] = {  # argument -> (the blocks whose schema lacks it, the fix)
    "gpu_instance_profile": ((NODE_POOL, DEFAULT_POOL), "rename it to gpu_instance"),
    "priority": ((DEFAULT_POOL,), _SPOT),
    "eviction_policy": ((DEFAULT_POOL,), _SPOT),
    "spot_max_price": ((DEFAULT_POOL,), _SPOT),
    "mode": ((DEFAULT_POOL,), "remove mode from default_node_pool (the default pool is always the cluster's System pool), and add a "
                              "separate azurerm_kubernetes_cluster_node_pool with mode = \"User\" for user workloads"),
    "os_type": ((DEFAULT_POOL,), _WINDOWS),
    "windows_profile": ((DEFAULT_POOL,), _WINDOWS),
}


def refused_value(attr: str, value: object) -> tuple[tuple[str, ...], str | None] | None:
    """(the values azurerm accepts, the one `value` differs from only in case) when azurerm's schema refuses `value` for `attr`;
    None when it accepts it, or cannot be known to refuse it."""
    if attr not in ENUMS or value is None or not isinstance(value, str):
        return None
    values, closed = ENUMS[attr]
    if value in values:
        return None
    near = next((v for v in values if v.lower() == value.lower()), None)
    return (values, near) if closed or near else None


def sdk_key(attr: str, default_pool: bool) -> str:
    """The key the plugin SDK names in its error: "default_node_pool.0.kubelet_config.0.cpu_manager_policy"."""
    return ".0.".join([*((DEFAULT_POOL,) if default_pool else ()), *attr.split(".")])


def unsupported(block: str, attrs) -> dict[str, str]:
    """The arguments among `attrs` that the schema of `block` (NODE_POOL or DEFAULT_POOL) does not have, with the fix of each."""
    return {a: fix.format(attr=a) for a in attrs if a in UNSUPPORTED and block in UNSUPPORTED[a][0] for fix in (UNSUPPORTED[a][1],)}
