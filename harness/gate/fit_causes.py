"""sample-fits at its cause when the cause is one value of the cluster's configuration, not the job: Kueue's flavor
assigner refusing every job that needs a topology-only flavor beside flavors without a topology (at that flavor's
topologyName), or a resource the manager configuration's resources.transformations make that the ClusterQueue has no
quota for (at that transformation's output). One finding per cluster and cause, for all the jobs it keeps out, instead
of one per sample at samples.yaml."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from harness.gate import kueue_manager
from harness.gate.cluster_index import ClusterIndex
from harness.gate.findings import Finding
from harness.gate.render import ClusterRender
from harness.gate.sources import as_map, as_maps

_TAS_ONLY = re.compile(r'Flavor "([^"]+)" supports only TopologyAwareScheduling')
_UNAVAILABLE = re.compile(r"resource (\S+) unavailable in ClusterQueue")


def relocator(ctx, root: Path, cluster: ClusterRender) -> Callable:
    """fn(finding, candidate, answer) -> the finding at its cause in the cluster's configuration, or as it is."""
    index = ClusterIndex.build(root, cluster)

    def relocate(found: Finding, candidate, answer: dict) -> Finding:
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
        return found
    return relocate


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
