"""The operators' own pods on the cluster's node pools: the pod-owning workloads a HelmRelease's chart creates (the
Kueue chart's controller-manager Deployment, rendered by harness.gate.helm_values with Helm's engine and the
HelmRelease's values), their replicas placed by kube-scheduler's own framework on the Node objects of the
cluster's Terraform node pools (harness.gate.scheduling, tools/kubecheck `place`, the run the samples get).

A pod no node takes stays Pending: the operator never runs, helm-controller waits for the release's workloads
and never marks the HelmRelease Ready, every layer that dependsOn it waits (the queues are never applied, no job is
admitted). The finding is at the values line that decides it, traced through the chart by the rendered value:
the container request the pools' nodes cannot hold (when the pod may run on some pool), a toleration list (when
every pool it selects is tainted), the nodeSelector entry no pool's nodes carry; else the HelmRelease's values.

Only charts the gate renders offline are judged: KubeRay's chart is in no module the proxy serves, so the KubeRay
operator's pods are not placed. Not simulated: AKS's own system pods beside them, DaemonSets (their controller
creates pods only for nodes they may run on).
"""
from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

from harness.core import HarnessError, format_quantity, parse_quantity
from harness.gate import chart_values, scheduling
from harness.gate.helper import submit_kept
from harness.gate.schema_check import KUBERNETES_VERSION
from harness.gate.cluster_index import finding_at
from harness.gate.findings import Finding
from harness.gate.origin import entries, leaves, written_prefix
from harness.gate.matching import taint_text
from harness.gate.pools import Pool, cluster_pools, node_matches, untolerated
from harness.gate.sources import as_list, as_map, as_maps
from harness.gate.terraform import TerraformConfig, TerraformError, load_tfvars

RULES = {
    "operator-placement": "every pod of the workloads an operator's chart creates (the Kueue chart rendered with its HelmRelease's "
                          "values: the controller-manager Deployment's replicas) is placed on a node of the cluster's Terraform node "
                          "pools by kube-scheduler's own plugins; else the pod stays Pending, the operator never runs, the HelmRelease "
                          "never becomes Ready and the layers that dependsOn it wait",
}
POD_KINDS = {("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job"),
             ("batch/v1", "CronJob"), ("v1", "Pod")}
PROBE_TOLERATION = [{"key": "gate.invalid/probe", "operator": "Exists", "effect": "NoSchedule"}]
INSUFFICIENT = re.compile(r"Insufficient ([A-Za-z0-9./_-]*[A-Za-z0-9])")


class ProbeError(HarnessError, RuntimeError):
    pass


def placement_findings(ctx, root: Path, releases: list, answers: dict, problems: dict) -> list[Finding]:
    """operator-placement for `releases` ((ClusterIndex, build, HelmRelease, chart, request key) as helm_values renders
    them; `answers`: the rendered charts by key; `problems`: per key, the apiserver's verdict on each rendered object)."""
    out, per_cluster = [], {}
    for index, build, hr, pin, key in releases:
        answer = answers[key]
        if answer.get("error"):
            continue  # helm-values reports it
        request = json.loads(key)
        for item, problem in zip(answer.get("objects") or [], problems.get(key) or []):
            obj = item["object"]
            if (obj.get("apiVersion"), obj.get("kind")) not in POD_KINDS or (problem is not None and problem.rule != "schema-unknown-kind"):
                continue  # a refused object never exists: helm-values reports it
            meta = as_map(obj.get("metadata"))
            placed = {**obj, "metadata": {**meta, "namespace": meta.get("namespace") or request["namespace"]}}
            per_cluster.setdefault(id(index), (index, []))[1].append((build, hr, pin, answer.get("version"), request, item["template"], placed))
    for index, workloads in per_cluster.values():
        pools = _pools(ctx, root, index.cluster.name)
        if not pools:
            continue  # capacity-terraform / capacity-unknown-sku report why the pools are unknown
        answers_ = scheduling.unplaced(pools, [w[-1] for w in workloads], [{} for _ in workloads], [o for _, o in index.objects])
        for (build, hr, pin, version, request, template, obj), found in zip(workloads, answers_):
            for s in found or []:
                path, hint = _cause(request, obj, s, pools, index.cluster.name, ctx.config.tfvars_file(index.cluster.name, root))
                what = f"{obj['kind']} {obj['metadata'].get('name')} of the {pin} chart {version} ({template})"
                message = (f"{what}: kube-scheduler's own plugins place {s['pods']} of its {s['of']} pod(s) on no node of cluster "
                           f"{index.cluster.name}'s node pools ({', '.join(p.where() for p in pools if p.count > 0)}): \"{s['message']}\"; "
                           f"the pod stays Pending, so the {pin} operator never runs, helm-controller never marks the HelmRelease Ready "
                           "and every layer that dependsOn it waits" if s["role"] else f"{what}: {s['message']}")
                out.append(finding_at(ctx, root, hr, build, ["spec", "values", *path], "operator-placement", message, hint,
                                      cluster=index.cluster.name))
    return out


def _pools(ctx, root: Path, cluster: str) -> list[Pool]:
    """The cluster's node pools as capacity.py reads them; [] when they are unknown (its rules say why)."""
    rel = ctx.config.tfvars_file(cluster, root)
    if not ctx.config.terraform or not (root / rel).is_file():
        return []
    try:
        tfvars = load_tfvars(root / rel, root)
        if tfvars.get("cluster_name") != cluster:
            return []
        pools = cluster_pools(TerraformConfig.load(root), tfvars, rel)
    except TerraformError:
        return []
    return [] if any(p.sku is None for p in pools) else pools


def _cause(request: dict, obj: dict, s: dict, pools: list[Pool], cluster: str, tfvars: str) -> tuple[list, str]:
    """(the values path that decides it, the fix) for one unplaced pod set."""
    values, defaults = request["values"], chart_values.chart_defaults(request["chart"]) or {}
    spec = as_map(as_map(_at(obj, s["template"])).get("spec"))
    selector = {str(k): str(v) for k, v in as_map(spec.get("nodeSelector")).items()}
    affinity = as_map(as_map(as_map(spec.get("affinity")).get("nodeAffinity")).get("requiredDuringSchedulingIgnoredDuringExecution")) or None
    tolerations = as_maps(spec.get("tolerations"))
    live = [p for p in pools if p.count > 0 and p.linux]
    matched = [p for p in live if node_matches(p.labels, selector, affinity)]
    admitted = [p for p in matched if untolerated(p.node_taints(), tolerations) is None]
    message = s["message"]
    if message.startswith("schedulerName "):
        return _traced(values, defaults, "schedulerName", spec.get("schedulerName")), \
            "remove the schedulerName value: AKS runs only kube-scheduler (default-scheduler)"
    if admitted and s["pods"] < s["of"]:  # some replicas placed: the nodes hold fewer than the replicas asked for
        return _traced(values, defaults, "replicas", as_map(obj.get("spec")).get("replicas")), \
            (f"lower the replicas to what the nodes of pool(s) {_names(admitted)} hold, relax the chart's required (anti-)affinity "
             f"or spread, or add nodes to those pools (their node_count in {tfvars})")
    if admitted:
        wanted = INSUFFICIENT.findall(message) or ["cpu", "memory"]
        path, lines = [], []
        for resource in dict.fromkeys(wanted):
            need = _request(spec, resource)
            path = path or _resource_path(values, defaults, resource, spec)
            best = max(admitted, key=lambda p: p.node_allocatable().get(resource, Decimal(0)))
            have = best.node_allocatable().get(resource, Decimal(0))
            lines.append(f"{resource} {format_quantity(resource, need)} requested, {format_quantity(resource, have)} allocatable "
                         f"on a {best.vm_size} node of pool {best.name}")
        sized = next((p.vm_size_origin for p in admitted if p.vm_size_origin), None)
        return path, (f"lower the request at this line to fit a node with the cluster's own pods beside it ({'; '.join(lines)}), "
                      f"or give the pool a larger vm_size" + (f" ({sized.where()}: {sized.text}, set per cluster in {tfvars})" if sized else "")
                      + " or add a pool the pod may run on (terraform/node_pools.tf)")
    if matched:
        taints = sorted({taint_text(t) for p in matched for t in [untolerated(p.node_taints(), tolerations)] if t})
        path = _traced(values, defaults, "tolerations", spec.get("tolerations")) or []
        key = path if spec.get("tolerations") else _probed(request, obj, s["template"], defaults, "tolerations", PROBE_TOLERATION)
        path = path or written_prefix(values, key or [])
        where = ".".join(map(str, key)) if key else "the chart's tolerations value"
        return path, (f"tolerate the taint(s) {', '.join(taints)} of the pool(s) {_names(matched)} the pod selects (a toleration in "
                      f"{where}), or select a pool without them")
    missing = [k for k, v in selector.items() if not any(p.labels.get(k) == v for p in live)] or list(selector)
    path = next((p for k in missing for p in [_traced(values, defaults, k, selector[k], "nodeSelector")] if p), [])
    if not path and affinity:
        path = _traced(values, defaults, "affinity", spec.get("affinity"))
    carried = sorted({f"{k}={p.labels[k]}" for p in live for k in ("kubernetes.azure.com/mode", "kubernetes.azure.com/agentpool") if k in p.labels})
    return path, (f"select labels the pools' nodes carry ({', '.join(carried)}; AKS sets them on every node), or add node_labels "
                  "to the pool the operator should run on (terraform/node_pools.tf)")


def _probed(request: dict, obj: dict, template: str, defaults: dict, key: str, probe) -> list:
    """The chart's values path named `key` that the templates copy into the pod, traced with Helm's engine: each such
    path of the chart's values.yaml set to `probe`, the chart rendered, and the workload's pod spec looked at."""
    for path, _ in (e for e in entries(defaults) if e[0][-1] == key):
        probe_request = json.loads(json.dumps(request))
        node = probe_request["values"]
        for step in path[:-1]:
            if not isinstance(node.get(step), dict):
                node[step] = {}
            node = node[step]
        node[key] = probe
        answer = submit_kept("fluxbuild", "helm", ProbeError, helm=probe_request, kubernetes_version=KUBERNETES_VERSION).result()
        same = [i["object"] for i in answer.get("objects") or [] if i["object"].get("kind") == obj.get("kind")
                and as_map(i["object"].get("metadata")).get("name") == as_map(obj.get("metadata")).get("name")]
        if same and as_map(as_map(_at(same[0], template)).get("spec")).get(key) == probe:
            return path
    return []


def _names(pools: list[Pool]) -> str:
    return ", ".join(dict.fromkeys(p.name for p in pools))


def _at(obj: dict, dotted: str):
    node = obj
    for step in filter(None, dotted.split(".")):
        node = as_map(node).get(step)
    return node if dotted else obj


def _request(spec: dict, resource: str) -> Decimal:
    """The pod's request of `resource` as the scheduler counts it: the sum over its containers (a limit without a
    request is the request, as the apiserver defaults it), or the largest init container's when that is more."""
    def one(c: dict) -> Decimal:
        res = as_map(c.get("resources"))
        value = as_map(res.get("requests")).get(resource, as_map(res.get("limits")).get(resource))
        try:
            return parse_quantity(value) if value is not None else Decimal(0)
        except ValueError:
            return Decimal(0)
    return max([sum((one(c) for c in as_maps(spec.get("containers"))), Decimal(0)),
                *(one(c) for c in as_maps(spec.get("initContainers")))])


def _resource_path(values: dict, defaults: dict, resource: str, spec: dict) -> list:
    """The values entry of the request the scheduler counts: a requests.<resource> leaf (else a limits one) whose value
    a container of the pod carries."""
    rendered = set()
    for c in as_maps(spec.get("containers")) + as_maps(spec.get("initContainers")):
        res = as_map(c.get("resources"))
        for part in ("requests", "limits"):
            if resource in as_map(res.get(part)):
                rendered.add(str(as_map(res.get(part))[resource]))
    for part in ("requests", "limits"):
        for node in (values, defaults):
            found = [p for p, leaf in leaves(node) if len(p) >= 2 and p[-2:] == [part, resource] and str(leaf) in rendered]
            if found:
                return written_prefix(values, found[0])
    return []


def _traced(values: dict, defaults: dict, key: str, rendered, parent: str | None = None) -> list:
    """The values path whose last key is `key` (below `parent`) and whose value is the one rendered into the pod: the
    values' own entry, else the written part of the chart default's path."""
    if rendered is None:
        return []
    for node in (values, defaults):
        for path, leaf in entries(node):
            if path[-1] == key and (parent is None or (len(path) >= 2 and path[-2] == parent)) and _same(leaf, rendered):
                return written_prefix(values, path)
    return []


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str) or str(a) == str(b)
