"""sample-fits at its cause when the cause is one value of the cluster's configuration, not the job: Kueue's flavor
assigner refusing every job that needs a topology-only flavor beside flavors without a topology (at that flavor's
topologyName), or a resource the manager configuration's resources.transformations make that the ClusterQueue has no
quota for (at that transformation's output). One finding per cluster and cause, for all the jobs it keeps out, instead
of one per sample at samples.yaml."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.gate import kueue_manager
from harness.gate.cluster_index import ClusterIndex
from harness.gate.findings import Finding
from harness.gate.kueue_fit import SHORT_QUOTA, overheads
from harness.gate.origin import dotted
from harness.gate.pod_refs import overhead_text
from harness.gate.render import ClusterRender
from harness.gate.sources import as_map, as_maps

_TAS_ONLY = re.compile(r'Flavor "([^"]+)" supports only TopologyAwareScheduling')
_UNAVAILABLE = re.compile(r"resource (\S+) unavailable in ClusterQueue")


def relocator(ctx, root: Path, cluster: ClusterRender, what_if: Callable | None = None) -> Callable:
    """fn(finding, candidate, answer) -> the finding at its cause in the cluster's configuration, or as it is. `what_if`:
    fn(candidate) -> the assigner's answer for a changed candidate (kueue_fit.Fits.what_if)."""
    index = ClusterIndex.build(root, cluster)

    def relocate(found: Finding, candidate, answer: dict) -> Finding:
        if overhead := _overhead_cause(ctx, candidate, what_if):
            return overhead
        reason = answer.get("message") or ""
        tas = _TAS_ONLY.search(reason)
        if tas and ("ResourceFlavor", None, tas[1]) in index.named:
            build, flavor = index.named[("ResourceFlavor", None, tas[1])]
            plain = sorted(str(fl.get("name")) for rg in as_maps(as_map(candidate.cq.get("spec")).get("resourceGroups"))
                           for fl in as_maps(rg.get("flavors"))
                           if not as_map(as_map(index.named.get(("ResourceFlavor", None, fl.get("name")), (None, {}))[1]).get("spec")).get("topologyName"))
            return ctx.finding(flavor, build, "sample-fits",
                               f"ResourceFlavor {tas[1]} has a topologyName while a ClusterQueue that uses it also has flavors without one "
                               f"({', '.join(plain) or 'none'}): Kueue's flavor assigner admits on {tas[1]} only pod sets that ask for a "
                               "topology, and refuses a pod set that asks for one on every flavor without a topology that covers what it "
                               f"requests, so no job that needs {tas[1]} there is ever admitted; they pend forever",
                               f"drop topologyName from ResourceFlavor {tas[1]}, or give every flavor of the ClusterQueues that use it a "
                               "topologyName (Kueue then places the pod sets that ask for none too); annotating the pod templates with a "
                               f"topology does not help while {', '.join(plain) or 'a flavor without one'} covers resources they request",
                               cluster=cluster.name, field="spec.topologyName")
        short = _UNAVAILABLE.search(reason)
        made = _transformation(index, short[1]) if short else None
        if made:
            (build, hr), i, source = made
            located, block = kueue_manager.locate(ctx, root, index, build, hr, "sample-fits")
            return Finding(located.file, block.line(["resources", "transformations", i, "outputs", short[1]]), located.resource,
                           "sample-fits", f"the Kueue manager configuration's resources.transformations[{i}] turns {source} into "
                           f"{short[1]}, which no resource group of the jobs' ClusterQueues covers: Kueue charges every job that requests "
                           f"{source} {short[1]} instead, and admits none of them; they pend forever",
                           f"add {short[1]} to a resource group of each ClusterQueue (with the quota the transformation needs), or "
                           "change or remove the transformation", located.context)
        return _quota_hint(ctx, index, found, candidate, reason)
    return relocate



def _overhead_cause(ctx, c, what_if: Callable | None) -> Finding | None:
    """A job Kueue would admit but for the pod overhead of the RuntimeClass its pods name (Kueue's AdjustResources charges
    it to every such pod): at the first runtimeClassName that names one, in the file the job is written in."""
    charged = overheads(c)
    if not charged or what_if is None:
        return None
    without = what_if(replace(c, limit_ranges=[o for o in c.limit_ranges if o.get("kind") != "RuntimeClass"]))
    if (without or {}).get("mode") not in ("Fit", "Preempt"):
        return None  # too big without it as well: the job is the cause (the finding names the overhead)
    path, charge = next(iter(charged.values()))
    name = charge[0]
    return ctx.finding(c.job, None, "sample-fits",
                       f"{dotted(path)} names RuntimeClass {name}: Kueue charges every pod of the template {overhead_text(charge)} on "
                       f"top of its requests, and with it the job's ClusterQueue never admits {c.what or f'{c.wfile} as submitted'}, "
                       "not even on an idle cluster (without it, it would); it would pend forever",
                       f"drop runtimeClassName, lower RuntimeClass {name}'s overhead.podFixed, or make room for it (smaller pods, or more "
                       "quota through the cluster's gpu-sku component)", file=c.wfile, context=c.where, field=dotted(path))


def _quota_hint(ctx, index: ClusterIndex, found: Finding, candidate, reason: str) -> Finding:
    """A quota the job outgrows: the hint names the line that writes the ClusterQueue's nominalQuota of that resource and
    flavor (the gpu-sku component's patch, or wherever else it is written)."""
    short = SHORT_QUOTA.search(reason)
    cq_name = as_map(candidate.cq.get("metadata")).get("name")
    entry = index.named.get(("ClusterQueue", None, cq_name)) if short else None
    if entry is None or "through the cluster's gpu-sku component" not in found.hint:
        return found
    path = next((f"spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}].nominalQuota"
                 for gi, g in enumerate(as_maps(as_map(entry[1].get("spec")).get("resourceGroups")))
                 for fi, f in enumerate(as_maps(g.get("flavors"))) if f.get("name") == short[2]
                 for ri, r in enumerate(as_maps(f.get("resources"))) if r.get("name") == short[1]), None)
    if path is None:
        return found
    at = ctx.finding(entry[1], entry[0], "", "", "", field=path).location()
    return replace(found, hint=found.hint.replace("through the cluster's gpu-sku component",
                                                  f"of ClusterQueue {cq_name} ({short[1]} in flavor {short[2]}, written at {at})"))


def _transformation(index: ClusterIndex, resource: str):
    """((build, HelmRelease), index, input) of the manager configuration's transformation that outputs `resource`."""
    for build, hr in index.of_kind("HelmRelease"):
        if index.chart_of(hr) != "kueue":
            continue
        config = kueue_manager.loaded(kueue_manager.manager_text(hr))
        for i, t in enumerate(as_maps(as_map(as_map(config).get("resources")).get("transformations"))):
            if resource in as_map(t.get("outputs")):
                return (build, hr), i, t.get("input")
    return None
