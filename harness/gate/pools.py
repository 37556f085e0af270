"""The node pools Terraform creates for one cluster, with the labels and taints their nodes
carry, and which pools a ResourceFlavor (nodeLabels and tolerations) selects.

AKS sets some labels itself (agentpool, mode, instance type, and accelerator=nvidia on GPU
sizes); those count. The system pool is tainted CriticalAddonsOnly=true:NoSchedule
(only_critical_addons_enabled), which no flavor here tolerates.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from harness.gate.sku import Sku, allocatable, sku_table
from harness.gate.sources import as_map, as_maps
from harness.gate.terraform import TFVARS_DIR, Block, Scope, TerraformConfig, load_tfvars

SYSTEM_TAINT = "CriticalAddonsOnly=true:NoSchedule"


@dataclass
class Pool:
    name: str
    address: str  # Terraform address, e.g. azurerm_kubernetes_cluster_node_pool.gpu
    file: str
    line: int | None
    vm_size: str
    count: int
    max_pods: int
    labels: dict[str, str]
    taints: list[str]
    system: bool
    sku: Sku | None = None

    def where(self) -> str:
        return f"{self.file}:{self.line} {self.address} (pool {self.name}, {self.count} x {self.vm_size})"

    def capacity(self) -> dict[str, Decimal]:
        return {k: v * self.count for k, v in self.sku.node_capacity().items()} if self.sku else {}

    def node_allocatable(self) -> dict[str, Decimal]:
        return allocatable(self.sku, self.max_pods) if self.sku else {}


def _aks_labels(name: str, vm_size: str, system: bool, sku: Sku | None) -> dict[str, str]:
    """Labels AKS puts on every node of a pool (the reserved accelerator label on GPU sizes)."""
    labels = {
        "agentpool": name,
        "kubernetes.azure.com/agentpool": name,
        "kubernetes.azure.com/mode": "system" if system else "user",
        "node.kubernetes.io/instance-type": vm_size,
        "beta.kubernetes.io/instance-type": vm_size,
        "kubernetes.io/os": "linux",
    }
    if sku and sku.gpus:
        labels["accelerator"] = "nvidia"
        labels["kubernetes.azure.com/accelerator"] = "nvidia"
    return labels


def cluster_pools(cfg: TerraformConfig, tfvars: dict) -> list[Pool]:
    """Node pools of one cluster: the AKS default pool plus every azurerm_kubernetes_cluster_node_pool whose count is not 0."""
    skus = sku_table()[0]
    scope = Scope(cfg, tfvars)
    pools = []

    def build(block: Block, body: dict, system: bool) -> Pool:
        name = str(scope.resolve(body.get("name")))
        vm_size = str(scope.resolve(body.get("vm_size")))
        count = int(scope.resolve(body.get("node_count", 1)) or 0)
        max_pods = int(scope.resolve(body.get("max_pods", sku_table()[1]["max_pods_assumed"])))
        sku = skus.get(vm_size)
        labels = {**{str(k): str(v) for k, v in (scope.resolve(body.get("node_labels")) or {}).items()},
                  **_aks_labels(name, vm_size, system, sku)}
        taints = [str(t) for t in scope.resolve(body.get("node_taints")) or []]
        if system and scope.resolve(body.get("only_critical_addons_enabled")) is True:
            taints.append(SYSTEM_TAINT)
        return Pool(name, block.address, block.file, block.line, vm_size, count, max_pods, labels, taints, system, sku)

    for block in cfg.of_type("azurerm_kubernetes_cluster"):
        for body in as_maps(block.body.get("default_node_pool")):
            pools.append(build(block, body, True))
    for block in cfg.of_type("azurerm_kubernetes_cluster_node_pool"):
        instances = int(scope.resolve(block.body["count"])) if "count" in block.body else 1
        if instances < 1:
            continue
        system = str(scope.resolve(block.body.get("mode", "User"))) == "System"
        pools.append(build(block, block.body, system))
    return pools


def node_pools(root: Path, cluster: str) -> list[Pool]:
    """The pools terraform/ creates for `cluster` (terraform/clusters/<cluster>.tfvars over the
    variable defaults); TerraformError when either cannot be read."""
    return cluster_pools(TerraformConfig.load(root), load_tfvars(Path(root) / TFVARS_DIR / f"{cluster}.tfvars"))


# -- Selection ------------------------------------------------------------------------------------------
def _taint(text: str) -> tuple[str, str | None, str]:
    kv, _, effect = text.partition(":")
    key, _, value = kv.partition("=")
    return key, (value or None), effect


def _tolerated(taint: str, tolerations: list[dict]) -> bool:
    key, value, effect = _taint(taint)
    if effect not in ("NoSchedule", "NoExecute"):
        return True
    for t in tolerations:
        if t.get("effect") and t["effect"] != effect:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == key):
            return True
        if t.get("key") == key and (t.get("value") or None) == value:
            return True
    return False


def selects(pool: Pool, node_labels: dict, tolerations: list[dict]) -> bool:
    """Whether the pool's nodes carry all of `node_labels` and every taint is tolerated."""
    return all(pool.labels.get(k) == str(v) for k, v in node_labels.items()) and all(_tolerated(t, tolerations) for t in pool.taints)


def flavor_selector(flavor: dict | None) -> tuple[dict, list[dict]]:
    """A ResourceFlavor's nodeLabels and tolerations (empty for a missing flavor)."""
    spec = as_map(as_map(flavor).get("spec"))
    return dict(as_map(spec.get("nodeLabels"))), list(as_maps(spec.get("tolerations")))
