"""The fix a `capacity-pod-fits-node` finding names, per cause: the pools a sample pod can land on are too small for one
of its pods. The cause is the one thing to change, named where it is written:

- the pod's own nodeSelector/affinity/tolerations, when without them it would land on a pool whose node fits it;
- the order of the ClusterQueue's flavors, when Kueue takes a flavor (the first with quota) whose pools are too small
  while a later flavor of the same resource group has pools that fit;
- the pool's size (its vm_size, where written: the tfvars line or a variable's default; the gpu-sku component only for a
  GPU pool), or for ephemeral-storage the disk the kubelet keeps it on: the OS disk (os_disk_size_gb), or with
  kubelet_disk_type = "Temporary" the VM size's temp disk.

And for `capacity-quota` (`tainted_out`): a pool the flavor selects by its labels but whose taint it does not tolerate;
`quota_hint`, lowering the quota where it is written. For both, `missing_resource`: a resource no node of the pools
advertises (a MIG profile the pool's gpu_instance does not give: the instances it does give).
"""
from __future__ import annotations

from decimal import Decimal

from harness.core import format_quantity
from harness.gate.matching import taint_text
from harness.gate.placement import Flavor, PodView, groups_of, landing
from harness.gate.pools import Pool, node_matches, untolerated
from harness.gate.sku import MIG_PROFILES, mig_resources


def fits(pool: Pool, need: dict[str, Decimal]) -> bool:
    """Whether one pod asking `need` fits one node of the pool (a resource the node lists not: it has none of it; one the
    gate cannot size, Pool.unjudged, is not judged)."""
    alloc = pool.node_allocatable()
    return all(need[r] <= alloc.get(r, 0) or r in pool.unjudged for r in need)


def fits_node_hint(pools: list[Pool], seen: list[Pool], need: dict[str, Decimal], short: str, pod: PodView, constraints: str | None,
                   combo: tuple[Flavor, ...], cq: dict, flavors: dict[str, Flavor], extra: str = "") -> str:
    """`seen`: the pools the pod lands on (none fits); `constraints`: where the pod's own nodeSelector/affinity/tolerations
    are written (file:line), None when it has none; `combo`: the flavors Kueue gives it; `extra`: a further option."""
    live = [p for p in pools if p.count > 0 and p.linux]
    if constraints and not pod.unconstrained:
        free = [p for p in landing(PodView({}, None, []), combo, live) if fits(p, need)]
        if free:
            return (f"change the pod's own nodeSelector/affinity/tolerations at {constraints}: they keep it off "
                    f"{', '.join(sorted({p.name for p in free}))}, whose node fits it, and onto {', '.join(sorted({p.name for p in seen}))}")
    names = {f.name for f in combo}
    for _, order in groups_of(cq):
        taken = [n for n in order if n in names]
        for later in order[order.index(taken[0]) + 1:] if taken else []:
            alt = tuple(flavors.get(later, f) if f.name == taken[0] else f for f in combo)
            if later in flavors and any(fits(p, need) for p in landing(pod, alt, live)):
                return (f"list flavor {later} before {taken[0]} in ClusterQueue {cq['metadata']['name']}'s resource group (Kueue takes the "
                        f"first flavor with free quota, not one whose nodes fit), or select flavor {later}'s nodeLabels "
                        f"{flavors[later].labels or '{}'} in the pod template (Kueue skips a flavor the pod's selector excludes)")
    if short == "ephemeral-storage":
        kinds = {p.kubelet_disk()[0] for p in seen}
        if "temp disk" in kinds:
            at = "; ".join(f"{o.text} at {o.where()}" for p in seen if (o := p.settings.get("kubelet_disk_type", (None, None))[1]))
            return (f"shrink the pod's ephemeral-storage request; its pool keeps the kubelet's storage on the VM's temp disk "
                    f"({at}), so pick a vm_size with a larger temp disk, or set kubelet_disk_type = \"OS\" and size os_disk_size_gb")
        return ("shrink the pod's ephemeral-storage request, or raise os_disk_size_gb of that pool in terraform/ (AKS's default OS "
                "disk is 128 GB; pods get 90% of it)")
    sizes = "; ".join(dict.fromkeys(f"{o.text} at {o.where()}" if (o := p.vm_size_origin) else f"vm_size of {p.address} at {p.file}:{p.line}"
                                    for p in seen))
    gpu = " (and the gpu-sku component that matches it)" if any(p.sku and p.sku.gpus for p in seen) else ""
    return f"shrink the pod's requests, or pick a larger vm_size for that pool ({sizes}){gpu}" + extra


def tainted_out(pools: list[Pool], counted: list[Pool], flavors: list[Flavor], res: str) -> str:
    """For `capacity-quota`: the pools with nodes that carry the labels the flavors select and would add `res`, but that
    their pods do not reach because of a taint the flavors do not tolerate (the quota's obvious repair: tolerate it)."""
    have = {p.address for p in counted}
    out = []
    for fl in flavors:
        for p in pools:
            taint = untolerated(p.node_taints(), list(fl.tolerations))
            if p.address not in have and p.count > 0 and p.linux and taint and p.allocatable().get(res) \
                    and node_matches(p.labels, fl.labels) and untolerated(p.node_taints(), [*fl.tolerations, _toleration(taint)]) is None:
                out.append(f"; or add a toleration of {taint_text(taint)} to flavor {fl.name}'s spec.tolerations: {p.where()} carries its "
                           f"labels and {format_quantity(res, p.allocatable()[res])} {res}, but its taint keeps the flavor's pods off it")
    return "".join(dict.fromkeys(out))


def _toleration(taint: dict) -> dict:
    return {"key": taint.get("key"), "operator": "Equal", "value": taint.get("value") or "", "effect": taint.get("effect")}


def quota_hint(res: str, cap: Decimal, rel: str, var: str | None = None, written: str = "") -> str:
    """For `capacity-quota`: lower the quota where it is written (the ${VAR} Flux substitutes, when it is one), or grow the pool."""
    pool = f"or grow the pool (its node count or max_count in {rel})"
    total = f"so that the {res} quotas total at most {format_quantity(res, cap)}"
    if var and written:
        return f"lower {var} here (Flux substitutes it for the ${{{var}}} of the {res} nominalQuota at {written}) {total}, {pool}"
    if var:
        return (f"lower the default of ${{{var}}} written here, which this cluster's layer does not set (or set {var} in its "
                f"spec.postBuild.substitute), {total}, {pool}")
    return f"lower the {res} nominalQuota values written here so that they total at most {format_quantity(res, cap)}, {pool}"


def missing_resource(res: str, pools: list[Pool], asked: str) -> str:
    """The fix when no node of `pools` advertises `res` (`asked`: "request" or "quota"): for a MIG instance, the MIG
    instances the pools do advertise, and the gpu_instance that would give `res`; else what advertises the resource."""
    mig = sorted({r for p in pools for r in p.node_allocatable() if r.startswith("nvidia.com/mig-")})
    profile = next((m for m in MIG_PROFILES if any(p.sku and res in mig_resources(p.sku, m) for p in pools)), None) \
        if res.startswith("nvidia.com/mig-") else None
    other = f"set gpu_instance = {profile} on the GPU pool (its nodes then advertise {res})" if profile else ""
    if mig:
        written = "; ".join(dict.fromkeys(f"{o.text} at {o.where()}" for p in pools if (o := p.settings.get("gpu_instance", (None, None))[1])))
        return f"{'declare the quota on' if asked == 'quota' else asked} {' or '.join(mig)} instead, the MIG instances the pools advertise ({written})" + (f", or {other}" if other else "")
    if other:
        return f"drop the {res} {asked}, or {other}"
    return (f"drop the {res} {asked}, or install what advertises it on the nodes ("
            + ("AKS node pools pre-allocate no huge pages)" if res.startswith("hugepages-") else "an extended resource needs its device plugin)"))
