"""GPU pools whose nodes would advertise no nvidia.com/gpu.

With `gpu_driver = "None"` on an azurerm node pool, AKS installs neither the NVIDIA driver nor
its device plugin on the pool's nodes ("bring your own", e.g. the NVIDIA GPU Operator); until
something installs them the kubelet reports no nvidia.com/gpu, so every GPU pod stays Pending
while Kueue keeps admitting workloads against the GPU quota. Reported once per pool (all its zones) and cluster,
at the line where gpu_driver gets its value, when the cluster's queues cover nvidia.com/gpu and
its rendered set installs no GPU Operator or NVIDIA device plugin.
"""
from __future__ import annotations

from pathlib import Path

from harness.gate.cluster_index import ClusterIndex
from harness.gate.pod_refs import pod_templates
from harness.gate.findings import Finding
from harness.gate.pools import Pool
from harness.gate.render import ClusterRender
from harness.gate.sources import as_list, as_map, as_maps

RULES = {
    "capacity-gpu-driver": "a GPU pool with gpu_driver = \"None\" is on a cluster that installs the NVIDIA GPU Operator or device plugin "
                           "(a HelmRelease of its chart, or a device-plugin DaemonSet); else its nodes advertise no nvidia.com/gpu",
}
GPU = "nvidia.com/gpu"
DEVICE_PLUGIN_CHARTS = {"gpu-operator", "nvidia-device-plugin"}
DEVICE_PLUGIN_IMAGES = ("k8s-device-plugin", "gpu-operator")


def _installs_device_plugin(index: ClusterIndex) -> bool:
    if any(index.chart_of(hr) in DEVICE_PLUGIN_CHARTS for _, hr in index.of_kind("HelmRelease")):
        return True
    for _, ds in index.of_kind("DaemonSet"):
        for _, pod in pod_templates(ds):
            if any(hint in str(c.get("image", "")) for c in as_maps(pod.get("containers")) for hint in DEVICE_PLUGIN_IMAGES):
                return True
    return False


def gpu_driver_findings(root: Path, cluster: ClusterRender, pools: list[Pool], ctx: str) -> list[Finding]:
    """`pools`: the cluster's node pools (harness.gate.pools.cluster_pools)."""
    bare = list({p.address: p for p in pools if p.gpu_driver == "None" and p.count > 0 and p.sku and p.sku.gpus > 0 and p.gpu_driver_origin}.values())
    if not bare:
        return []
    index = ClusterIndex.build(root, cluster)
    queues = sorted(str(as_map(cq.get("metadata")).get("name")) for _, cq in index.of_kind("ClusterQueue")
                    if any(GPU in as_list(g.get("coveredResources")) for g in as_maps(as_map(cq.get("spec")).get("resourceGroups"))))
    if not index.complete or not queues or _installs_device_plugin(index):
        return []
    return [Finding(p.gpu_driver_origin.file, p.gpu_driver_origin.line, p.address, "capacity-gpu-driver",
                    f"cluster {cluster.name}: {p.gpu_driver_origin.text} on {p.file}:{p.line} {p.address} (pool {p.name}"
                    f"{', zones ' + ', '.join(p.zones) if len(p.zones) > 1 else ''}): AKS installs no NVIDIA driver or device plugin "
                    f"there, and the cluster installs no GPU Operator or NVIDIA device plugin, so its nodes advertise no {GPU}: "
                    f"Kueue admits workloads on the GPU quota of {', '.join(queues)} and their GPU pods stay Pending",
                    "set gpu_driver = \"Install\" for the cluster, or add the NVIDIA GPU Operator (HelmRelease) to its infrastructure layer",
                    ctx) for p in bare]
