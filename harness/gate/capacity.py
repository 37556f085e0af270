"""Capacity checks: the queues' declared quota against the node pools Terraform creates.

Kueue admits on declared quota, not on real nodes: a quota larger than the pools lets a
workload be admitted and then pend forever. The pools come from terraform/ (harness.gate.terraform)
and each cluster's tfvars, sized from harness/gate/sku.yaml (harness.gate.pools), and are compared
with the ResourceFlavors and ClusterQueues Flux applies on that cluster and with its sample RayJobs.

Decisions (see RULES):
- A flavor selects the user pools whose node labels include all of its nodeLabels and whose
  taints its tolerations tolerate (`pools.selects`); the tainted system pool never counts.
- Quota sums are compared with the pools' hardware (vCPU, memory, GPUs x nodes): above that,
  the quota cannot be met whatever runs on the nodes. One pod is compared with one node's
  allocatable (after the AKS reservation), because that is what the scheduler sees.
- A cluster in clusters/ without terraform/clusters/<name>.tfvars is a finding, not a skip:
  every cluster of this repository is provisioned by terraform/, and a missing file would
  silently switch the checks off.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from harness.core import format_quantity, parse_quantity
from harness.gate import workloads
from harness.gate.findings import Finding
from harness.gate.pools import Pool, cluster_pools, flavor_selector, selects
from harness.gate.render import ClusterRender
from harness.gate.sku import RESOURCES, SKU_FILE_REL
from harness.gate.sources import SourceError, Sources, as_list, as_map, as_maps, load_yaml, name_key, parse_yaml, resource_id
from harness.gate.terraform import TERRAFORM_DIR, TFVARS_DIR, TerraformConfig, TerraformError, load_tfvars

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

RULES = {
    "capacity-terraform": "terraform/ parses, and every cluster has terraform/clusters/<name>.tfvars naming it",
    "capacity-unknown-sku": f"every node pool's vm_size is in {SKU_FILE_REL}",
    "capacity-quota": "per flavor and resource, the sum of ClusterQueue nominal quotas <= the capacity of the user pools the flavor selects",
    "capacity-flavor-labels": "every flavor a ClusterQueue uses selects at least one user node pool (nodeLabels and taints)",
    "capacity-pod-fits-node": "every sample pod fits the allocatable of one node of a pool its flavors select",
}


# -- Quota against capacity ------------------------------------------------------------------------
@dataclass
class FlavorCapacity:
    """The nominal quotas declared against one flavor and resource, and the pools the flavor selects."""
    flavor: str
    resource: str
    quotas: list[tuple[dict, Decimal]] = field(default_factory=list)  # (ClusterQueue, nominal quota)
    pools: list[Pool] = field(default_factory=list)  # selected pools of a known SKU

    @property
    def nominal_total(self) -> Decimal:
        return sum((q for _, q in self.quotas), Decimal(0))

    @property
    def capacity(self) -> Decimal:
        return sum((p.capacity()[self.resource] for p in self.pools), Decimal(0))

    @property
    def headroom(self) -> Decimal:
        return self.capacity - self.nominal_total


def flavor_capacities(objects: list[dict], pools: list[Pool]) -> list[FlavorCapacity]:
    """Per flavor and resource (sorted), the ClusterQueues' nominal quotas among `objects` and the
    pools of a known SKU that the ResourceFlavor selects."""
    flavors = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ResourceFlavor"}
    declared: dict[tuple[str, str], list[tuple[dict, Decimal]]] = {}
    for cq in (o for o in objects if o.get("kind") == "ClusterQueue"):
        for g in as_maps(as_map(cq.get("spec")).get("resourceGroups")):
            for f in as_maps(g.get("flavors")):
                for r in as_maps(f.get("resources")):
                    q = _q(r.get("nominalQuota", 0))
                    if q is not None and r.get("name") in RESOURCES:
                        declared.setdefault((name_key(f.get("name")), r["name"]), []).append((cq, q))
    known = [p for p in pools if p.sku]
    out = []
    for (fname, res), entries in sorted(declared.items(), key=lambda kv: kv[0]):
        labels, tolerations = flavor_selector(flavors.get(fname))
        out.append(FlavorCapacity(fname, res, entries, [p for p in known if selects(p, labels, tolerations)]))
    return out


def _q(value) -> Decimal | None:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        return None


# -- Rules -------------------------------------------------------------------------------------------------
def capacity_findings(root: Path, clusters: list[ClusterRender], sources: Sources | None = None) -> list[Finding]:
    root = Path(root).resolve()
    out: list[Finding] = []
    if not (root / TERRAFORM_DIR).is_dir():
        return [Finding(TERRAFORM_DIR, None, "", "capacity-terraform", "no terraform/ directory: node pools are unknown, so no quota can be checked",
                        "restore terraform/ (AKS, node pools, Flux extension)")]
    try:
        cfg = TerraformConfig.load(root)
    except TerraformError as err:
        return [Finding(TERRAFORM_DIR, None, "", "capacity-terraform", str(err), "fix the HCL syntax; `terraform fmt` shows where")]
    sources = sources or Sources.load(root)
    names = {c.name for c in clusters}
    tfvars_dir = root / TFVARS_DIR
    for path in sorted(tfvars_dir.glob("*.tfvars")) if tfvars_dir.is_dir() else []:
        if path.stem not in names:
            out.append(Finding(path.relative_to(root).as_posix(), None, "", "capacity-terraform",
                               f"no cluster clusters/{path.stem} for this tfvars file", "rename the file after its cluster, or add clusters/<name>"))
    for cluster in clusters:
        out += _cluster_findings(root, cfg, sources, cluster)
    return out


def _cluster_findings(root: Path, cfg: TerraformConfig, sources: Sources, cluster: ClusterRender) -> list[Finding]:
    rel = f"{TFVARS_DIR}/{cluster.name}.tfvars"
    ctx = f"cluster {cluster.name}"
    path = root / rel
    if not path.exists():
        return [Finding(rel, None, f"cluster/{cluster.name}", "capacity-terraform",
                        f"cluster {cluster.name} has no {rel}: its node pools are unknown, so its quotas cannot be checked",
                        f"add {rel} with cluster_name = \"{cluster.name}\", gpu_vm_size and gpu_node_count", ctx)]
    try:
        tfvars = load_tfvars(path)
        if tfvars.get("cluster_name") != cluster.name:
            return [Finding(rel, None, f"cluster/{cluster.name}", "capacity-terraform",
                            f"cluster_name is {tfvars.get('cluster_name')!r}, not {cluster.name!r}: Flux would reconcile another folder",
                            f"set cluster_name = \"{cluster.name}\"", ctx)]
        pools = cluster_pools(cfg, tfvars)
    except TerraformError as err:
        return [Finding(rel, None, f"cluster/{cluster.name}", "capacity-terraform", str(err), "keep pool settings to var./local. references and literals", ctx)]

    out = []
    for p in pools:
        if p.sku is None:
            out.append(Finding(rel, None, f"cluster/{cluster.name}", "capacity-unknown-sku",
                               f"{p.where()}: vm_size {p.vm_size} is not in {SKU_FILE_REL}, so its capacity is unknown",
                               f"add {p.vm_size} (vCPU, memory, GPUs, allocatable) to {SKU_FILE_REL}, citing the Azure size page", ctx))
    known = [p for p in pools if p.sku]
    objects = [o for _, o in cluster.applied()]
    flavors = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ResourceFlavor"}
    cqs = [o for o in objects if o.get("kind") == "ClusterQueue"]

    def locate(obj):
        return sources.locate(obj, (f"clusters/{cluster.name}/", "overlays/", "base/", "components/"))

    # Flavors the queues rely on must select some user pool.
    used = sorted({name_key(f.get("name")) for cq in cqs for g in as_maps(as_map(cq.get("spec")).get("resourceGroups")) for f in as_maps(g.get("flavors"))} & set(flavors))
    for fname in used:
        labels, tolerations = flavor_selector(flavors[fname])
        if not any(selects(p, labels, tolerations) for p in known) and known:
            file, line = locate(flavors[fname])
            have = "; ".join(f"{p.name} has " + ", ".join(f"{k}={p.labels.get(k, '<absent>')}" for k in labels)
                             + (f", taints {', '.join(p.taints)}" if p.taints else "") for p in known) or "no pools"
            out.append(Finding(file, line, resource_id(flavors[fname]), "capacity-flavor-labels",
                               f"cluster {cluster.name}: flavor {fname} nodeLabels {labels or '{}'} select no user node pool in {rel} "
                               f"(pools: {have}); workloads admitted to it would pend forever",
                               "use labels the pools carry (AKS sets accelerator=nvidia on GPU nodes and agentpool=<name> on all), "
                               "or add node_labels to the pool in terraform/node_pools.tf", ctx))

    # Quota per flavor and resource against the pools the flavor selects.
    for fc in flavor_capacities(objects, known):
        if fc.nominal_total > fc.capacity:
            res = fc.resource
            per_queue = ", ".join(f"ClusterQueue {cq['metadata']['name']} {format_quantity(res, q)}" for cq, q in fc.quotas)
            pools_text = ("; ".join(f"{p.where()}: {format_quantity(res, p.capacity()[res])}" for p in fc.pools)
                          or f"no pool in {rel} matches the flavor")
            for cq, _ in fc.quotas:
                file, line = locate(cq)
                out.append(Finding(file, line, resource_id(cq), "capacity-quota",
                                   f"cluster {cluster.name}: ClusterQueue {cq['metadata']['name']} flavor {fc.flavor} {res}: declared nominal quota "
                                   f"{format_quantity(res, fc.nominal_total)} in total ({per_queue}) exceeds the real capacity "
                                   f"{format_quantity(res, fc.capacity)} of the pools the flavor selects "
                                   f"({pools_text}; tfvars {rel}); admitted workloads would pend forever",
                                   f"use the components/gpu-sku/<sku> component that matches gpu_vm_size in {rel} "
                                   f"(clusters/{cluster.name}/queues/kustomization.yaml), or grow the pool", ctx))

    out += _pod_fit_findings(root, cluster, known, flavors, objects, rel, ctx)
    return out


def _pod_fit_findings(root: Path, cluster: ClusterRender, pools: list[Pool], flavors: dict, objects: list[dict], rel: str, ctx: str) -> list[Finding]:
    out = []
    samples_path = root / "clusters" / cluster.name / "samples.yaml"
    if not samples_path.exists() or not pools:
        return out
    lqs = {(as_map(o.get("metadata")).get("namespace"), o["metadata"]["name"]): o for o in objects if o.get("kind") == "LocalQueue"}
    cqs = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ClusterQueue"}
    try:
        entries = load_yaml(samples_path, root) or []
    except SourceError:
        return out  # yaml-syntax reports it
    for entry in entries if isinstance(entries, list) else []:  # sample-render reports a non-list
        try:
            _sample, job = workloads.render_entry(entry, root)
        except workloads.WorkloadError:
            continue  # sample-render reports it
        meta = as_map(job.get("metadata"))
        lq = lqs.get((name_key(meta.get("namespace", "default")), name_key(as_map(meta.get("labels")).get(QUEUE_LABEL))))
        cq = cqs.get(name_key(as_map(as_map(lq).get("spec")).get("clusterQueue")))
        if cq is None:
            continue  # sample-queue reports it
        groups = as_maps(as_map(cq.get("spec")).get("resourceGroups"))
        wfile = f"{workloads.WORKLOADS_DIR}/{entry['sample']}.yaml"
        for set_name, count, requests in workloads.pod_sets(job):
            need = {r: q for r, q in requests.items() if q > 0}
            if count < 1 or not need:
                continue
            pod_tolerations = _pod_tolerations(job, set_name)
            relevant = [g for g in groups if set(map(str, as_list(g.get("coveredResources")))) & set(need)]
            choices = [[f.get("name") for f in as_maps(g.get("flavors"))] for g in relevant]
            best, fits = None, False
            for combo in itertools.product(*choices) if choices else [()]:
                labels, tolerations = {}, list(pod_tolerations)
                for fname in combo:
                    fl, ft = flavor_selector(flavors.get(name_key(fname)))
                    labels.update(fl)
                    tolerations += ft
                for p in pools:
                    if not selects(p, labels, tolerations):
                        continue
                    alloc = p.node_allocatable()
                    if all(need[r] <= alloc[r] for r in need if r in alloc):
                        fits = True
                        break
                    best = best or (p, alloc, combo)
                if fits:
                    break
            if fits:
                continue
            asked = ", ".join(f"{r} {format_quantity(r, q)}" for r, q in sorted(need.items()))
            if best:
                p, alloc, combo = best
                offer = (f"the largest it can get is one node of {p.where()} with allocatable "
                         + ", ".join(f"{r} {format_quantity(r, alloc[r])}" for r in sorted(need) if r in alloc)
                         + f" (flavors {', '.join(combo)})")
            else:
                offer = f"no node pool in {rel} is selected by its flavors ({', '.join(sorted({f for c in choices for f in c}))})"
            out.append(Finding(wfile, None, resource_id(job), "capacity-pod-fits-node",
                               f"cluster {cluster.name}: ClusterQueue {cq['metadata']['name']}: pod {set_name} of sample {entry['sample']} requests {asked}, "
                               f"but {offer}; Kueue would admit it and the pod would stay Pending",
                               "shrink the pod's requests, or pick a larger gpu_vm_size in the cluster's tfvars (with its gpu-sku component)",
                               f"{ctx}, sample {entry['sample']} on {entry['queue']}"))
    return out


def _pod_tolerations(job: dict, set_name: str) -> list[dict]:
    cluster = as_map(as_map(job.get("spec")).get("rayClusterSpec"))
    if set_name == "head":
        template = as_map(cluster.get("headGroupSpec")).get("template")
    elif set_name == "submitter":
        template = as_map(job.get("spec")).get("submitterPodTemplate")
    else:
        template = next((g.get("template") for g in as_maps(cluster.get("workerGroupSpecs")) if g.get("groupName") == set_name), None)
    return as_maps(as_map(as_map(template).get("spec")).get("tolerations"))
