"""The quota side of the capacity checks: per flavor and resource (every resource a quota names, judged against what the
pools' nodes advertise of it: none is 0), the nominal quotas the ClusterQueues and Cohorts
declare and the node pools the pods charged to it can land on (harness.gate.placement.flavor_reach), and the sets of
flavors whose quotas are compared together (capacity.py's rules)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from decimal import Decimal

from harness.core import parse_quantity
from harness.gate import placement
from harness.gate.pools import Pool
from harness.gate.sources import as_map, as_maps, name_key

MAX_SUBSET_FLAVORS = 8  # up to this many flavors per resource every set is checked; above, each flavor and each group sharing pools


# -- Quota against capacity ------------------------------------------------------------------------
@dataclass
class FlavorCapacity:
    """The nominal quotas declared against one flavor and resource, and the pools its pods can land on."""
    flavor: str
    resource: str
    quotas: list[tuple[dict, Decimal]] = field(default_factory=list)  # (ClusterQueue or Cohort, nominal quota)
    pools: list[Pool] = field(default_factory=list)  # reachable pools of a known SKU with nodes
    empty: list[Pool] = field(default_factory=list)  # reachable pools with 0 nodes
    via: dict[str, set[str]] = field(default_factory=dict)  # pool address -> partner flavors ("alone")

    @property
    def nominal_total(self) -> Decimal:
        return sum((q for _, q in self.quotas), Decimal(0))

    @property
    def capacity(self) -> Decimal:
        return sum((p.allocatable().get(self.resource, Decimal(0)) for p in self.pools), Decimal(0))

    @property
    def min_capacity(self) -> Decimal:
        return sum((p.allocatable(p.min_nodes).get(self.resource, Decimal(0)) for p in self.pools), Decimal(0))

    @property
    def headroom(self) -> Decimal:
        return self.capacity - self.nominal_total


def flavor_capacities(objects: list[dict], pools: list[Pool], pods: list = ()) -> list[FlavorCapacity]:
    """Per flavor and resource (sorted), the ClusterQueues' nominal quotas among `objects` and the
    pools of a known SKU that pods charged to the flavor can land on (`pods`: placement.pod_tolerations)."""
    return capacities(objects, pools, placement.flavor_reach(objects, [p for p in pools if p.sku], pods))


def capacities(objects: list[dict], pools: list[Pool], reach: dict) -> list[FlavorCapacity]:
    declared: dict[tuple[str, str], list[tuple[dict, Decimal]]] = {}
    # A Cohort's own resourceGroups (kueue.x-k8s.io/v1beta2) are quota its ClusterQueues borrow,
    # admitted against the same nodes: counted like a ClusterQueue's.
    for cq in (o for o in objects if o.get("kind") in ("ClusterQueue", "Cohort")):
        for g in as_maps(as_map(cq.get("spec")).get("resourceGroups")):
            for f in as_maps(g.get("flavors")):
                for r in as_maps(f.get("resources")):
                    q = _q(r.get("nominalQuota", 0))
                    if q is not None and isinstance(r.get("name"), str):  # every resource: a MIG instance, a device plugin's, pods
                        declared.setdefault((name_key(f.get("name")), r["name"]), []).append((cq, q))
    order = {p.address: i for i, p in enumerate(pools)}
    out = []
    for (fname, res), entries in sorted(declared.items(), key=lambda kv: kv[0]):
        hit = sorted(reach.get((fname, res), {}).values(), key=lambda pv: order.get(pv[0].address, len(order)))
        if any(res in p.unjudged for p, _ in hit):
            continue  # a pool whose amount of it the gate does not know (a temp disk of unknown size): no verdict
        out.append(FlavorCapacity(fname, res, entries, [p for p, _ in hit if p.count > 0 and p.sku], [p for p, _ in hit if p.count == 0],
                                  {p.address: via for p, via in hit}))
    return out


def quota_field(holder: dict, subset: list[FlavorCapacity], res: str) -> str | None:
    """The field path of the first nominalQuota of `res` that `holder` (a ClusterQueue or Cohort)
    declares on a flavor of `subset`, so the finding names the line that writes it (a component's patch)."""
    names = {fc.flavor for fc in subset}
    for gi, g in enumerate(as_maps(as_map(holder.get("spec")).get("resourceGroups"))):
        for fi, f in enumerate(as_maps(g.get("flavors"))):
            for ri, r in enumerate(as_maps(f.get("resources"))):
                if name_key(f.get("name")) in names and r.get("name") == res and "nominalQuota" in r:
                    return f"spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}].nominalQuota"
    return None


def _q(value) -> Decimal | None:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        return None


def subsets(items: list[FlavorCapacity]):
    """Every non-empty set of flavors, smallest first; with many flavors, each flavor and each
    group of flavors connected by shared pools."""
    if len(items) <= MAX_SUBSET_FLAVORS:
        for k in range(1, len(items) + 1):
            yield from (list(c) for c in itertools.combinations(items, k))
        return
    yield from ([fc] for fc in items)
    groups: list[list[FlavorCapacity]] = []
    for fc in items:
        mine = {p.address for p in fc.pools}
        joined = [g for g in groups if mine & {p.address for x in g for p in x.pools}]
        groups = [g for g in groups if g not in joined] + [[x for g in joined for x in g] + [fc]]
    yield from (g for g in groups if len(g) > 1)

