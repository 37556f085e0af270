"""The VM size table (harness/gate/sku.yaml): each size's vCPU, memory and GPUs, and a node's
allocatable after the AKS reservation. A checked repository adds sizes under `skus:` of its gate
configuration (.ray-kueue-gate.yaml, harness.gate.config), in the shape of the table's entries:
`repository_skus(root)`, which every reader of a repository's node pools uses."""
from __future__ import annotations

import re

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
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
    gpu: str = ""  # the GPU model as sku.yaml writes it ("A100 80GB"): its memory names the MIG instances
    temp_disk_gib: int | None = None  # the VM's temporary disk (kubelet_disk_type = "Temporary" puts the kubelet there); None: unknown
    mig: bool = False  # its GPUs can be partitioned with MIG (gpu_instance): A100 / H100-class sizes only (sku.yaml `mig`)

    def node_capacity(self) -> dict[str, Decimal]:
        return {"cpu": Decimal(self.vcpu), "memory": Decimal(self.memory_gib) * 2**30, "nvidia.com/gpu": Decimal(self.gpus)}


def sku_of(name: str, entry: dict) -> Sku:
    """A size from an entry of sku.yaml's `skus` (or of the gate configuration's, which has their shape)."""
    return Sku(name, int(entry["vcpu"]), int(entry["memory_gib"]), int(entry.get("gpus", 0)), str(entry.get("arch", "amd64")),
               str(entry.get("gpu", "")), None if entry.get("temp_disk_gib") is None else int(entry["temp_disk_gib"]), entry.get("mig") is True)


@lru_cache(maxsize=None)
def sku_table(path: Path = SKU_FILE) -> tuple[dict[str, Sku], dict]:
    doc = parse_yaml(path.read_text(encoding="utf-8"))
    return {name: sku_of(name, v) for name, v in doc["skus"].items()}, doc["aks_reservation"]


def repository_skus(root: Path) -> dict[str, Sku]:
    """The sizes a node pool of the repository at `root` may have: the table, with the `skus` of its gate configuration
    (.ray-kueue-gate.yaml) added over it."""
    from harness.gate.config import load  # the configuration reads the sources; the table alone needs neither

    return {**sku_table()[0], **{name: sku_of(name, v) for name, v in load(Path(root)).skus.items()}}


# azurerm gpu_instance (AKS's gpuInstanceProfile) -> (compute slices, instances per GPU, eighths of the GPU's memory per instance),
# NVIDIA's MIG profiles 1g/2g/3g/4g/7g (MIG user guide "Supported MIG Profiles"; AKS "Create a multi-instance GPU node pool").
MIG_PROFILES = {"MIG1g": (1, 7, 1), "MIG2g": (2, 3, 2), "MIG3g": (3, 2, 4), "MIG4g": (4, 1, 4), "MIG7g": (7, 1, 8)}


def mig_resources(sku: Sku, profile: str) -> dict[str, Decimal]:
    """What the NVIDIA device plugin advertises on a node of `sku` whose GPUs AKS partitions with `profile`: every
    instance as nvidia.com/gpu under the MIG strategy `single`, as nvidia.com/mig-<g>g.<memory>gb under `mixed`. The
    gate cannot see which strategy the plugin runs with (AKS's, the GPU Operator's or a chart's setting), so it offers
    both: a quota or request of either counts instances, never whole GPUs. {} for a profile or size it cannot size, and for a
    size whose GPUs have no MIG (`sku.mig` false: a T4 or A10 is whole GPUs, or none; capacity-node-settings reports the gpu_instance)."""
    if profile not in MIG_PROFILES or not sku.gpus or not sku.mig:
        return {}
    slices, per_gpu, eighths = MIG_PROFILES[profile]
    out = {"nvidia.com/gpu": Decimal(sku.gpus * per_gpu)}
    memory = re.search(r"(\d+)\s*GB", sku.gpu)
    if memory:
        gb = (Decimal(memory.group(1)) * eighths / 8).to_integral_value(ROUND_HALF_UP)
        out[f"nvidia.com/mig-{slices}g.{gb}gb"] = Decimal(sku.gpus * per_gpu)
    return out


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
