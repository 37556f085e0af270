"""GPU pools whose nodes would advertise no nvidia.com/gpu: no NVIDIA device plugin runs on them.

The kubelet reports nvidia.com/gpu only once the NVIDIA device plugin (a DaemonSet) registers the node's GPUs; until then
Kueue keeps admitting workloads against the GPU quota and every GPU pod stays Pending ("Insufficient nvidia.com/gpu")
while its job holds the quota. AKS does not install the plugin: azurerm's `gpu_driver = "Install"` installs the NVIDIA
driver only ("NVIDIA device plugin installation is required when using GPUs on AKS", learn.microsoft.com/azure/aks/
use-nvidia-gpu), and `gpu_driver = "None"` installs neither ("bring your own", e.g. the NVIDIA GPU Operator, which
installs the driver and the plugin). So, for a cluster whose queues cover nvidia.com/gpu, each GPU pool needs:

- the driver: `gpu_driver = "Install"`, or the GPU Operator (a HelmRelease of chart gpu-operator, or a DaemonSet of its
  or the driver container's image); else one finding at the line where gpu_driver gets its value, which also says
  when no device plugin runs there either;
- a device plugin whose pods land on the pool's nodes: the GPU Operator's, a DaemonSet of the k8s-device-plugin image in
  the cluster's rendered set, or the DaemonSet a HelmRelease of chart nvidia-device-plugin installs, rendered with its
  values (harness.gate.chart_render.chart_objects; a release the gate does not render is taken to reach every pool).
  Its nodeSelector, required node affinity and tolerations meet the pool's labels and taints as kube-scheduler and the
  DaemonSet controller meet them (placement.landing). None installed: one finding at the `path` of the Flux
  Kustomization that installs Kueue (layer 1, where this repository ships the plugin), else at gpu_driver; one that
  reaches no node of a GPU pool (a fork that taints the pool `sku=gpu:NoSchedule` without the toleration): one finding
  at the plugin's tolerations (when a taint of the pool is not tolerated) or node selection, naming the pools.

Reported once per pool (all its zones) and cluster.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.gate import chart_render, placement
from harness.gate.cluster_index import ClusterIndex
from harness.gate.findings import Finding
from harness.gate.matching import taint_text
from harness.gate.pod_refs import pod_templates
from harness.gate.pools import Pool, untolerated
from harness.gate.render import ClusterRender
from harness.gate.sources import as_list, as_map, as_maps, resource_id

RULES = {
    "capacity-gpu-driver": "every GPU pool of a cluster whose queues cover nvidia.com/gpu runs the NVIDIA driver (gpu_driver = "
                           "\"Install\", or the GPU Operator) and an NVIDIA device plugin whose pods land on its nodes (layer 1's "
                           "nvidia-device-plugin HelmRelease, rendered with its values, a device-plugin DaemonSet, or the GPU "
                           "Operator; AKS installs none); else its nodes advertise no nvidia.com/gpu and GPU jobs stay Pending",
}
GPU = "nvidia.com/gpu"
OPERATOR_CHARTS = {"gpu-operator"}
PLUGIN_CHART = "nvidia-device-plugin"
OPERATOR_IMAGES = ("gpu-operator", "nvidia/driver")  # the operator, or the driver container it (or a fork) runs
PLUGIN_IMAGE = "k8s-device-plugin"
PLUGIN_FILE = "flux/infrastructure/controllers/nvidia-device-plugin.yaml"
ADD_PLUGIN = (f"add the NVIDIA device plugin to the cluster's infrastructure layer as this repository ships it ({PLUGIN_FILE}: "
              f"a HelmRepository of https://nvidia.github.io/k8s-device-plugin and a HelmRelease of chart {PLUGIN_CHART}, "
              "pinned in versions.yaml, selecting kubernetes.azure.com/accelerator: nvidia; listed in the layer's kustomization.yaml), or the NVIDIA GPU Operator")


def _images(spec: dict) -> list[str]:
    """The images of a pod spec's containers and init containers."""
    return [str(c.get("image", "")) for c in as_maps(spec.get("containers")) + as_maps(spec.get("initContainers"))]


def _installed(config, root: Path, cluster: ClusterRender, index: ClusterIndex) -> tuple[bool, list[tuple[dict, str, dict]]]:
    """(whether the GPU Operator or a driver DaemonSet runs on the cluster; the device plugins as (the object a finding
    about its placement points at, the field path prefix of its pod's scheduling there, its pod spec or None when the
    gate cannot render it: it reaches every pool))."""
    operator, plugins = False, []
    charted = chart_render.chart_objects(config, root, cluster)
    for _, hr in index.of_kind("HelmRelease"):
        chart = index.chart_of(hr)
        operator |= chart in OPERATOR_CHARTS
        if chart == PLUGIN_CHART:
            made = [ds for owner, ds in charted if resource_id(owner) == resource_id(hr)]
            templates = [t for ds in made for _, t in pod_templates(ds) if any(PLUGIN_IMAGE in i for i in _images(t))]
            plugins += [(hr, "spec.values", t) for t in templates] if made else [(hr, "spec.values", None)]
    for _, ds in index.of_kind("DaemonSet"):
        for _, template in pod_templates(ds):
            operator |= any(hint in image for image in _images(template) for hint in OPERATOR_IMAGES)
            if any(PLUGIN_IMAGE in image for image in _images(template)):
                plugins.append((ds, "spec.template.spec", template))
    return operator, plugins


def gpu_driver_findings(root: Path, cluster: ClusterRender, pools: list[Pool], ctx: str, config=None,
                        locate: Callable[[dict, str | None], tuple[str, int | None]] | None = None) -> list[Finding]:
    """`pools`: the cluster's node pools (harness.gate.pools.cluster_pools); `config`: the gate configuration (the charts'
    CRDs); `locate(obj, field)`: where a field of a rendered object is written."""
    gpu_pools = list({p.address: p for p in pools if p.count > 0 and p.sku and p.sku.gpus > 0}.values())
    if not gpu_pools:
        return []
    index = ClusterIndex.build(root, cluster)
    queues = sorted(str(as_map(cq.get("metadata")).get("name")) for _, cq in index.of_kind("ClusterQueue")
                    if any(GPU in as_list(g.get("coveredResources")) for g in as_maps(as_map(cq.get("spec")).get("resourceGroups"))))
    if not index.complete or not queues:
        return []
    operator, plugins = _installed(config, root, cluster, index)
    if operator:
        return []
    objects = [o for _, o in index.objects]
    views = [(obj, at, placement.pod_view({"spec": t}, objects) if t is not None else None) for obj, at, t in plugins]
    reached = {p.address for p in gpu_pools for _, _, view in views if view is None or placement.landing(view, (), [p])}
    tail = f"advertise no {GPU}: Kueue admits workloads on the GPU quota of {', '.join(queues)} and their GPU pods stay Pending"
    out, unreached = [], [p for p in gpu_pools if p.address not in reached]
    for p in (p for p in gpu_pools if p.gpu_driver == "None" and p.gpu_driver_origin):
        plugin = "" if p.address in reached else ", nor does any NVIDIA device plugin run there"
        out.append(Finding(p.gpu_driver_origin.file, p.gpu_driver_origin.line, p.address, "capacity-gpu-driver",
                           f"cluster {cluster.name}: {p.gpu_driver_origin.text} on {_pool(p)}: AKS installs no NVIDIA driver there, "
                           f"and the cluster installs no GPU Operator{plugin}, so its nodes {tail}",
                           "set gpu_driver = \"Install\" for the cluster" + ("" if not plugin else f" and {ADD_PLUGIN.split(', or ')[0]}") +
                           ", or add the NVIDIA GPU Operator (driver and device plugin) to its infrastructure layer", ctx))
    unreached = [p for p in unreached if not (p.gpu_driver == "None" and p.gpu_driver_origin)]
    if not unreached:
        return out
    if not views:
        file, line, resource = _kueue_layer(index, locate) or (unreached[0].file, unreached[0].line, unreached[0].address)
        return out + [Finding(file, line, resource, "capacity-gpu-driver",
                              f"cluster {cluster.name} installs no NVIDIA device plugin or GPU Operator (AKS's gpu_driver = \"Install\" "
                              f"installs the NVIDIA driver, not the plugin), so the GPU nodes of {', '.join(_pool(p) for p in unreached)} "
                              f"{tail}", ADD_PLUGIN, ctx)]
    obj, at, view = views[0]
    taints = {taint_text(t) for p in unreached if (t := untolerated(p.node_taints(), view.tolerations))}
    field = f"{at}.tolerations" if taints else f"{at}.affinity" if view.affinity else f"{at}.nodeSelector"
    file, line = locate(obj, field) if locate else ("", None)
    why = (f"its tolerations do not tolerate the taint {', '.join(sorted(taints))}" if taints else
           "its nodeSelector and required node affinity select none of their nodes' labels")
    fix = (f"add a toleration of {', '.join(sorted(taints))} to {field} (keeping the chart's nvidia.com/gpu one)" if taints else
           f"make {field} select the GPU nodes (AKS labels them kubernetes.azure.com/accelerator: nvidia)")
    return out + [Finding(file, line, resource_id(obj), "capacity-gpu-driver",
                          f"cluster {cluster.name}: the NVIDIA device plugin ({resource_id(obj)}) runs no pod on the GPU nodes of "
                          f"{', '.join(_pool(p) for p in unreached)}: {why}, so those nodes {tail}", fix, ctx)]


def _pool(p: Pool) -> str:
    taints = p.written.get("node_taints")
    tainted = f", node_taints at {taints[1].where()}" if taints and p.taints else ""
    return f"{p.file}:{p.line} {p.address} (pool {p.name}{', zones ' + ', '.join(p.zones) if len(p.zones) > 1 else ''}{tainted})"


def _kueue_layer(index: ClusterIndex, locate) -> tuple[str, int | None, str] | None:
    """Where the Flux Kustomization that installs Kueue (layer 1) writes its path: where the device plugin belongs."""
    for build, hr in index.of_kind("HelmRelease"):
        layer = build.flux_kustomization
        if index.chart_of(hr) == "kueue" and layer and locate:
            file, line = locate(layer, "spec.path")
            return (file, line, resource_id(layer)) if file else None
    return None
