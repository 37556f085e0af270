"""The rendered DaemonSets' pods on the node pools: what they take of each node the capacity checks count.

kube-scheduler's NodeResourcesFit subtracts the requests of every pod bound to a node, a DaemonSet's included, from its
allocatable; the DaemonSet controller puts one pod on every node its pod template may run on (nodeSelector, required
node affinity, tolerations: the pools `placement.landing` gives a pod with no flavor). The DaemonSets are the cluster's
rendered set's and those the charts the gate renders install with their HelmRelease's values (harness.gate.chart_render
.chart_objects: layer 1's NVIDIA device plugin), which capacity.py passes in. So each rendered DaemonSet (an
operator's, the NVIDIA device plugin's, GPU feature discovery's) leaves a node of a pool it lands on its requests
less, and one pod slot (`pods`) less: `on_pools` gives each pool those per-node requests (Pool.daemons), which
Pool.node_allocatable subtracts for capacity-quota, capacity-pod-fits-node, capacity-pod-set-nodes and the simulated
nodes of capacity-pods-scheduled. A pod's requests are the pinned Kueue's reading of them (harness.gate.workloads
.pod_requests: the larger of the biggest init container and the containers plus sidecars, the namespace's LimitRange
defaults, limits standing in for missing requests, plus the pod overhead), the same rule the scheduler's resource
accounting follows. The controller's own tolerations (node.kubernetes.io/not-ready, unreachable, disk-pressure,
memory-pressure, pid-pressure, unschedulable, network-unavailable) tolerate none of the taints AKS or terraform/ give a
pool, so they change no landing here.

AKS's own add-on DaemonSets (kube-proxy, azure-cns, cloud-node-manager, the CSI node drivers...) are not in the
repository and not subtracted: their requests are AKS's, and kube-reserved does not cover pods (README's capacity notes).
"""
from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from harness.gate import placement
from harness.gate.pools import Pool
from harness.gate.sources import POD_ADMISSION_KINDS, as_map, in_namespace_of
from harness.gate.workloads import pod_requests


def on_pools(objects: list[dict], pools: list[Pool]) -> list[Pool]:
    """`pools` with the per-node requests of the DaemonSets among `objects` whose pods land on each."""
    taken: dict[str, dict[str, Decimal]] = {}
    names: dict[str, list[str]] = {}
    for ds in (o for o in objects if o.get("kind") == "DaemonSet" and str(o.get("apiVersion", "")).startswith("apps/")):
        template = as_map(as_map(ds.get("spec")).get("template"))
        need = {**pod_requests(template, in_namespace_of(ds, objects, POD_ADMISSION_KINDS)), "pods": Decimal(1)}
        for pool in placement.landing(placement.pod_view(template, objects), (), pools):
            per_node = taken.setdefault(pool.address + f"@{pool.zone}", {})
            for r, q in need.items():
                per_node[r] = per_node.get(r, Decimal(0)) + q
            names.setdefault(pool.address + f"@{pool.zone}", []).append(str(as_map(ds.get("metadata")).get("name")))
    return [replace(p, daemons=taken[k], daemon_names=tuple(names[k])) if (k := p.address + f"@{p.zone}") in taken else p for p in pools]
