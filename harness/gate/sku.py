"""The VM size table (harness/gate/sku.yaml): each size's vCPU, memory and GPUs, and a node's
allocatable after the AKS reservation. A checked repository adds sizes under `skus:` of its gate
configuration (.ray-kueue-gate.yaml, harness.gate.config), in the shape of the table's entries:
`repository_skus(root)`, which every reader of a repository's node pools uses."""
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


def sku_of(name: str, entry: dict) -> Sku:
    """A size from an entry of sku.yaml's `skus` (or of the gate configuration's, which has their shape)."""
    return Sku(name, int(entry["vcpu"]), int(entry["memory_gib"]), int(entry.get("gpus", 0)), str(entry.get("arch", "amd64")))


@lru_cache(maxsize=None)
def sku_table(path: Path = SKU_FILE) -> tuple[dict[str, Sku], dict]:
    doc = parse_yaml(path.read_text())
    return {name: sku_of(name, v) for name, v in doc["skus"].items()}, doc["aks_reservation"]


def repository_skus(root: Path) -> dict[str, Sku]:
    """The sizes a node pool of the repository at `root` may have: the table, with the `skus` of its gate configuration
    (.ray-kueue-gate.yaml) added over it."""
    from harness.gate.config import load  # the configuration reads the sources; the table alone needs neither

    return {**sku_table()[0], **{name: sku_of(name, v) for name, v in load(Path(root)).skus.items()}}


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
