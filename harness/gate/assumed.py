"""What a cluster's nodes show that its Terraform does not say, and what the capacity checks assume of it. Each
assumption a flavor relies on is a `capacity-flavor-labels` warning at the flavor's nodeLabel, naming what is assumed:

- GPU Feature Discovery's labels. The NVIDIA GPU Operator runs GFD by default (its chart's `gfd.enabled`), as does a
  `gpu-feature-discovery` release, the device plugin's chart with `gfd.enabled: true`, or a DaemonSet running GFD's
  image; GFD labels every GPU node (NVIDIA/k8s-device-plugin, docs/gpu-feature-discovery "Generated Labels"; the
  operator adds nvidia.com/gpu.present=true). On a GPU pool of such a cluster the gate sets the labels it can know
  (nvidia.com/gpu.count: the size's GPUs, on a pool without MIG; gpu.present) and, for the others (gpu.product,
  gpu.memory, cuda.*, ...: the driver's report), assumes the value a flavor selects, unless it names another GPU model
  than the size's (sku.yaml `gpu`, e.g. a flavor for an H100 on an A100 pool), which is a mismatch it knows.
- The zones of a zonal pool's remainder nodes. Azure balances a scale set's zones to +-1 node ("Zone balancing in
  Virtual Machine Scale Sets") but does not say which zones get the remainder when the node count is no multiple of
  the zones; the gate gives it to the zones the flavors select (harness.gate.pools.by_zone's `prefer`).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.gate.cluster_index import ClusterIndex
from harness.gate.findings import Finding
from harness.gate.placement import flavors_of
from harness.gate.pod_refs import pod_templates
from harness.gate.pools import Pool, by_zone
from harness.gate.render import ClusterRender
from harness.gate.sources import as_map, as_maps, resource_id

ZONE_KEYS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
GFD_UNKNOWN = {f"nvidia.com/{k}" for k in (
    "gpu.product", "gpu.memory", "gpu.family", "gpu.machine", "gpu.compute.major", "gpu.compute.minor", "gpu.replicas",
    "gpu.sharing-strategy", "gpu.mode", "mig.capable", "mig.strategy", "mps.capable", "vgpu.present", "gfd.timestamp",
    "cuda.driver.major", "cuda.driver.minor", "cuda.driver.rev", "cuda.runtime.major", "cuda.runtime.minor",
    "cuda.driver-version.major", "cuda.driver-version.minor", "cuda.driver-version.revision", "cuda.driver-version.full",
    "cuda.runtime-version.major", "cuda.runtime-version.minor", "cuda.runtime-version.full")}
GFD_CHARTS = {"gpu-operator": True, "gpu-feature-discovery": True, "nvidia-device-plugin": False}  # chart -> gfd.enabled by default


def runs_gfd(index: ClusterIndex) -> str | None:
    """What runs GPU Feature Discovery on the cluster (a HelmRelease's chart, or a DaemonSet), None when nothing does."""
    for _, hr in index.of_kind("HelmRelease"):
        chart = index.chart_of(hr)
        if chart in GFD_CHARTS and as_map(as_map(as_map(hr.get("spec")).get("values")).get("gfd")).get("enabled", GFD_CHARTS[chart]) is not False:
            return f"HelmRelease {as_map(hr.get('metadata')).get('name')} of chart {chart}"
    for _, ds in index.of_kind("DaemonSet"):
        for _, pod in pod_templates(ds):
            if any("gpu-feature-discovery" in " ".join(map(str, [c.get("image", ""), *(c.get("command") or []), *(c.get("args") or [])]))
                   for c in as_maps(pod.get("containers"))):
                return f"DaemonSet {as_map(ds.get('metadata')).get('name')}"
    return None


def _model_fits(pool: Pool, value: str) -> bool:
    """Whether a gpu.product value may be the pool's GPU: it names every token of the size's model ("A100 80GB")."""
    tokens = set(re.split(r"[-_\s]+", value.upper()))
    return all(t in tokens for t in (pool.sku.gpu.upper().split() if pool.sku else []))


def apply(root: Path, cluster: ClusterRender, pools: list[Pool], locate: Callable, ctx: str) -> tuple[list[Pool], list[Finding]]:
    """The pools with GFD's labels and the remainder nodes' zones as assumed, and a warning per assumption a flavor relies on."""
    flavors = {o_name: (obj, fl) for _, obj in cluster.applied() if obj.get("kind") == "ResourceFlavor"
               for o_name, fl in flavors_of([obj]).items()}
    notes: list[Finding] = []

    def note(obj: dict, key: str, message: str, hint: str) -> None:
        file, line = locate(obj, f"spec.nodeLabels[{key}]")
        notes.append(Finding(file, line, resource_id(obj), "capacity-flavor-labels", f"cluster {cluster.name}: {message}", hint, ctx, severity="warning"))

    prefer = tuple(sorted({str(fl.labels[k]) for _, fl in flavors.values() for k in ZONE_KEYS if k in fl.labels}))
    whole: dict[str, list[Pool]] = {}
    for p in pools:
        whole.setdefault(p.address, []).append(p)
    out = []
    for groups in whole.values():
        p = replace(groups[0], count=sum(g.count for g in groups), first=0, zone=None,
                    min_count=None if groups[0].min_count is None else sum(g.min_count or 0 for g in groups))
        k = len(p.zones)
        uneven = k > 1 and (p.count % k or (p.min_count or 0) % k)
        regrouped = by_zone(p, prefer) if uneven else groups
        for name, (obj, fl) in flavors.items():
            zone = next((str(fl.labels[z]) for z in ZONE_KEYS if z in fl.labels), None)
            if uneven and zone in {g.zone for g in by_zone(p)} | {g.zone for g in regrouped}:
                n = sum(g.count for g in regrouped if g.zone == zone)
                note(obj, next(z for z in ZONE_KEYS if z in fl.labels),
                     f"flavor {name} selects zone {zone}, and {p.where()} spreads {p.count} node(s) over zones {', '.join(p.zones)}: Azure "
                     "balances them to +-1 node per zone but chooses which zones get the remainder, so the gate assumes "
                     f"{n} node(s) in {zone}; with fewer, workloads admitted to the flavor could pend",
                     f"make the pool's node count ({p.count_origin.text if p.count_origin else 'node_count'}) a multiple of its {k} zones, "
                     "or drop the zone from the flavor's nodeLabels")
        out += regrouped
    return _gfd(root, cluster, out, flavors, note), notes


def _gfd(root: Path, cluster: ClusterRender, pools: list[Pool], flavors: dict, note: Callable) -> list[Pool]:
    selected = {k for _, fl in flavors.values() for k in fl.labels if k.startswith("nvidia.com/")}
    gpu = [p for p in pools if p.sku and p.sku.gpus and p.linux]
    if not selected or not gpu:
        return pools
    index = ClusterIndex.build(root, cluster)
    runner = runs_gfd(index)
    if runner is None:
        return pools
    out = []
    for p in pools:
        if p not in gpu:
            out.append(p)
            continue
        labels = dict(p.labels)
        labels.setdefault("nvidia.com/gpu.present", "true")
        if not p.mig():
            labels.setdefault("nvidia.com/gpu.count", str(p.sku.gpus))
        for name, (obj, fl) in flavors.items():
            for key, value in fl.labels.items():
                if key in GFD_UNKNOWN and key not in p.labels and (key != "nvidia.com/gpu.product" or _model_fits(p, str(value))):
                    if labels.setdefault(key, str(value)) == str(value):
                        note(obj, key, f"flavor {name} selects {key}={value}, which GPU Feature Discovery ({runner}) sets on the nodes of "
                             f"{p.where()} from what the driver reports: the gate cannot know the value and assumes it matches",
                             f"check the value on a node of the pool (kubectl get node -l kubernetes.azure.com/agentpool={p.name} -L {key}), or select a label "
                             "the gate can check (AKS's kubernetes.azure.com/accelerator=nvidia, a node_labels entry of the pool)")
        out.append(replace(p, labels=labels))
    return out
