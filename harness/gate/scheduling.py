"""kube-scheduler's own plugins on a cluster's nodes, offline: the Node objects of its Terraform node pools
(as AKS registers them) and tools/kubecheck's `place`, which runs the scheduler framework of the pinned
Kubernetes (its default profile) over them for the pods KubeRay would create for a job.

The embedded control plane creates the same Node objects for KWOK (harness.cluster.nodes), so the
real kube-scheduler there and this offline run see one cluster.
"""
from __future__ import annotations

import json
from decimal import Decimal

from harness.core import HarnessError
from harness.gate.helper import submit_kept
from harness.gate.pools import NodeSpec, Pool
from harness.gate.sources import POD_ADMISSION_KINDS, as_map, in_namespace_of


def node_name(pool: str, index: int) -> str:
    """AKS's node names: aks-<pool>-<vmss id>-vmss<instance>."""
    return f"aks-{pool}-00000000-vmss{index:06d}"


def _quantity(resource: str, value: Decimal) -> str:
    """A Node status quantity: CPU in millicores, memory in bytes, counts as integers."""
    if resource == "cpu":
        return f"{int(value * 1000)}m"
    return str(int(value))


def node_objects(specs: list[NodeSpec]) -> list[dict]:
    """One Node per pool node (autoscaling pools at max_count), as AKS registers them."""
    nodes = []
    for spec in specs:
        if not spec.allocatable:
            raise ValueError(f"pool {spec.pool}: VM size {spec.vm_size} is neither in sku.yaml nor under skus: of the gate configuration, so its nodes cannot be sized")
        pods = str(spec.max_pods)
        # A node without GPUs has no nvidia.com/gpu at all (the device plugin registers it).
        capacity = {**{k: _quantity(k, v) for k, v in spec.capacity.items() if v}, "pods": pods}
        allocatable = {**{k: _quantity(k, v) for k, v in spec.allocatable.items() if v}, "pods": pods}
        for i in range(spec.first, spec.first + spec.max_count):
            name = node_name(spec.pool, i)
            nodes.append({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {**spec.labels, "kubernetes.io/hostname": name}},
                "spec": {"taints": [{k: v for k, v in t.items() if v not in (None, "")} for t in spec.taints]},
                # Ready, as a node AKS registers becomes: Kueue's TAS cache keeps only Ready nodes (tas_nodes_cache.go)
                "status": {"capacity": capacity, "allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]},
            })
    return nodes


class SchedulingError(HarnessError):
    pass


def unplaced(pools: list[Pool], jobs: list[dict], assigns: list[dict[str, dict]], objects: list[dict] = ()) -> list[list[dict]]:
    """Per job, its pod sets with pods kube-scheduler places on no node of `pools` (each job alone on the
    nodes, its pods one after another, with the defaults of the LimitRanges among the cluster's `objects` in
    its namespace; Windows pools left out): {role, template, pods, of, message}, the message the scheduler's own ("0/N nodes are
    available: ..."). `assigns`: per job, what Kueue adds to each pod set's pods on admission
    ({role: {nodeSelector, tolerations}}; roles "head", "worker NAME", "submitter")."""
    if not jobs:
        return []
    nodes = node_objects([p.node_spec() for p in pools if p.count > 0 and p.linux])  # Ray's pods are Linux pods
    related = [in_namespace_of(job, objects, POD_ADMISSION_KINDS) for job in jobs]
    return submit_kept("kubecheck", "place", SchedulingError, objects=jobs, nodes=nodes, assign=assigns, related=related).result()


_ADMITTED: dict[str, dict] = {}


def admitted(template: dict | None, objects: list[dict] = ()) -> dict | None:
    """`template` as its pods reach kube-scheduler: with the nodeSelector and tolerations the RuntimeClass admission
    merges into every pod from the RuntimeClass it names (tools/kubecheck `admitted`: the apiserver's plugin, its
    setScheduling). `objects`: the cluster's objects (their RuntimeClasses count). The template itself when it names no
    RuntimeClass with a `scheduling` among them, or when the plugin refuses the pod (the pod check reports that)."""
    spec = as_map(as_map(template).get("spec"))
    name = spec.get("runtimeClassName")
    classes = [o for o in objects if isinstance(o, dict) and o.get("kind") == "RuntimeClass"] if name else []
    if not any(as_map(o.get("metadata")).get("name") == name and as_map(o.get("scheduling")) for o in classes):
        return template
    key = json.dumps([template, classes], sort_keys=True, default=str)
    if key not in _ADMITTED:
        _ADMITTED[key] = submit_kept("kubecheck", "admitted", SchedulingError, objects=[template], related=[classes]).result()[0]
    answer = _ADMITTED[key]
    if answer.get("error"):
        return template
    return {**as_map(template), "spec": {**spec, "nodeSelector": answer.get("nodeSelector"), "tolerations": answer.get("tolerations")}}
