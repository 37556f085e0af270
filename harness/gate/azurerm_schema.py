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
- Check: one argument's ValidateFunc (`StringInSlice(values, false)`, `StringMatch(regexp, message)`, `IntBetween(lo, hi)`),
  with `refusal` giving azurerm's error and the fix. POOL_CHECKS: a pool block's (ENUMS, and `name`, default_node_pool's
  `temporary_name_for_rotation`: validate.KubernetesAgentPoolName, internal/services/containers/validate/kubernetes.go); beside
  it what AKS refuses of a pool (WINDOWS_NAME_MAX: azurerm's docs, "A Windows Node Pool cannot have a `name` longer than 6
  characters"; MAX_PODS: AKS's maxPods range for every network plugin, learn.microsoft.com/azure/aks/azure-cni-overview,
  "Maximum pods per node": 10..250). FLUX_CHECKS: azurerm_kubernetes_flux_configuration's, by argument path
  (kubernetes_flux_configuration_resource.go `Arguments`: scope, git_repository.reference_type and substitute_from.kind are
  case-sensitive enums, kustomizations' names and the namespace DNS-style patterns, the kustomizations' and
  the bucket's and blob_storage's intervals IntBetween(1, 35791394)).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

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
    """(the values azurerm accepts, the one `value` differs from only in case) when azurerm's enum for `attr` refuses `value`;
    None when it accepts it, or cannot be known to refuse it."""
    check = POOL_CHECKS.get(attr) if attr in ENUMS else None
    return (check.values, check.near(str(value))) if check and check.refusal(attr, value) else None


def sdk_key(attr: str, default_pool: bool) -> str:
    """The key the plugin SDK names in its error: "default_node_pool.0.kubelet_config.0.cpu_manager_policy"."""
    return ".0.".join([*((DEFAULT_POOL,) if default_pool else ()), *attr.split(".")])


def unsupported(block: str, attrs) -> dict[str, str]:
    """The arguments among `attrs` that the schema of `block` (NODE_POOL or DEFAULT_POOL) does not have, with the fix of each."""
    return {a: fix.format(attr=a) for a in attrs if a in UNSUPPORTED and block in UNSUPPORTED[a][0] for fix in (UNSUPPORTED[a][1],)}


@dataclass(frozen=True)
class Check:
    """One argument's ValidateFunc in azurerm's schema."""
    values: tuple[str, ...] = ()  # validation.StringInSlice(values, false): case-sensitive
    closed: bool = True  # every value outside `values` refused (else only a case variant of one is reported)
    pattern: str = ""  # validation.StringMatch(regexp.MustCompile(pattern), says)
    says: str = ""
    keep: str = ""  # the characters a name keeps when the fix suggests one ("-" where hyphens are allowed)
    limit: int = 0  # the pattern's longest name
    between: tuple[int, int] | None = None  # validation.IntBetween

    def suggest(self, value: str) -> str | None:
        """A name the pattern accepts, made from `value` (lowercased, other characters dropped or made hyphens); None if none."""
        name = re.sub(f"[^a-z0-9{self.keep}]+", self.keep, value.lower())
        for near in (name, name.lstrip("0123456789")):
            near = near.strip(self.keep)[:self.limit or None].strip(self.keep)
            if near and re.fullmatch(self.pattern, near):
                return near
        return None

    def near(self, value: str) -> str | None:
        """The accepted value `value` differs from only in case."""
        return next((v for v in self.values if v.lower() == value.lower()), None)

    def refusal(self, attr: str, value: object, key: str = "") -> tuple[str, str] | None:
        """(what `terraform plan` says, naming the argument as `key` (sdk_key) or `attr`; the fix) when azurerm refuses `value` for
        argument `attr`; None when it accepts it or cannot be known to refuse it (unknown, or of another type: Terraform's own
        conversion reports that)."""
        said = key or attr
        if self.values and isinstance(value, str) and value not in self.values:
            near = self.near(value)
            if self.closed or near:
                return (f"azurerm's schema accepts only {', '.join(self.values)} (case-sensitive), so `terraform plan` fails (\"expected "
                        f"{said} to be one of [{' '.join(chr(34) + v + chr(34) for v in self.values)}], got {value}\")",
                        f"set {attr} to one of {', '.join(self.values)}" + (f" (did you mean {near}?)" if near else ""))
        if self.pattern and isinstance(value, str) and not re.fullmatch(self.pattern, value):
            near = self.suggest(value)
            return (f"azurerm's schema requires ^{self.pattern}$, so `terraform plan` fails (\"invalid value for {said} ({self.says})\")",
                    f"rename it: {self.says}" + (f" (e.g. {attr} = \"{near}\")" if near else ""))
        if self.between and isinstance(value, int) and not isinstance(value, bool) and not self.between[0] <= value <= self.between[1]:
            return (f"azurerm's schema requires {self.between[0]}..{self.between[1]}, so `terraform plan` fails (\"expected {said} to "
                    f"be in the range ({self.between[0]} - {self.between[1]}), got {value}\")", f"set {attr} between {self.between[0]} and {self.between[1]}")
        return None


_AGENT_POOL_NAME = Check(pattern=r"[a-z][a-z0-9]{0,11}", limit=12, says="must begin with a lowercase letter, contain only lowercase letters and "
                         "numbers and be between 1 and 12 characters in length")  # validate.KubernetesAgentPoolName
POOL_CHECKS: dict[str, Check] = {**{a: Check(values=v, closed=c) for a, (v, c) in ENUMS.items()},
                                 "name": _AGENT_POOL_NAME, "temporary_name_for_rotation": _AGENT_POOL_NAME}
WINDOWS_NAME_MAX = 6  # AKS refuses a longer Windows pool name (azurerm docs of azurerm_kubernetes_cluster_node_pool `name`)
MAX_PODS = (10, 250)  # AKS's maxPods range per node (kubenet, Azure CNI, overlay, Cilium alike); the create fails outside it


def _dns(limit: int, what: str) -> Check:
    return Check(pattern=rf"[a-z\d]([-a-z\d]{{0,{limit - 2}}}[a-z\d])?", keep="-", limit=limit, says=f"`{what}` must be between 1 and {limit} characters. "
                 "It can contain only lowercase letters, numbers, and hyphens (-). It must start and end with a lowercase letter or number.")


_INTERVAL = Check(between=(1, 35791394))
FLUX_CHECKS: dict[str, Check] = {  # argument path in azurerm_kubernetes_flux_configuration -> its ValidateFunc
    "namespace": _dns(63, "name"), "scope": Check(values=("namespace", "cluster")),  # (and `name`, _dns(30): the gate asks for flux-system)
    "git_repository.reference_type": Check(values=("branch", "commit", "semver", "tag")),
    "kustomizations.name": _dns(30, "name` of `kustomizations"),
    "kustomizations.post_build.substitute_from.kind": Check(values=("ConfigMap", "Secret")),
    **{f"{block}.{attr}": _INTERVAL for block in ("kustomizations", "bucket", "blob_storage")
       for attr in ("timeout_in_seconds", "sync_interval_in_seconds", "retry_interval_in_seconds") if block == "kustomizations" or attr != "retry_interval_in_seconds"},
}
