"""The VM size table (harness/gate/sku.yaml): each size's vCPU, memory and GPUs, and a node's
allocatable after the AKS reservation."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

from harness.gate.sources import parse_yaml

SKU_FILE = Path(__file__).with_name("sku.yaml")
SKU_FILE_REL = "harness/gate/sku.yaml"
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")  # what the SKU table knows


@dataclass(frozen=True)
class Sku:
    name: str
    vcpu: int
    memory_gib: int
    gpus: int
    arch: str = "amd64"  # kubernetes.io/arch of its nodes (an Arm size, the "p" of Dpsv5, is arm64)

    def node_capacity(self) -> dict[str, Decimal]:
        return {"cpu": Decimal(self.vcpu), "memory": Decimal(self.memory_gib) * 2**30, "nvidia.com/gpu": Decimal(self.gpus)}


@lru_cache(maxsize=None)
def sku_table(path: Path = SKU_FILE) -> tuple[dict[str, Sku], dict]:
    doc = parse_yaml(path.read_text())
    skus = {name: Sku(name, int(v["vcpu"]), int(v["memory_gib"]), int(v.get("gpus", 0)), str(v.get("arch", "amd64")))
            for name, v in doc["skus"].items()}
    return skus, doc["aks_reservation"]


def allocatable(sku: Sku, max_pods: int, reservation: dict | None = None) -> dict[str, Decimal]:
    """Node allocatable on AKS (Kubernetes 1.29+): capacity minus kube-reserved and hard eviction."""
    r = reservation or sku_table()[1]
    c = r["cpu_millicores"]
    n = sku.vcpu
    reserved_m = c["first"] + (c["second"] if n >= 2 else 0) + c["third_fourth_each"] * max(0, min(n, 4) - 2) \
        + c["above_four_each"] * max(0, n - 4)
    total_mib = Decimal(sku.memory_gib) * 1024
    kube_mib = min(Decimal(r["memory_per_pod_mib"] * max_pods + r["memory_base_mib"]), total_mib * Decimal(str(r["memory_max_fraction"])))
    mem_mib = total_mib - kube_mib - r["eviction_hard_mib"]
    return {"cpu": (Decimal(n * 1000 - reserved_m) / 1000), "memory": mem_mib * 2**20, "nvidia.com/gpu": Decimal(sku.gpus)}
