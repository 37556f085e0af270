"""Where Kueue lets pods run: the node pools the flavors of a ClusterQueue, with the pods' own constraints,
let them land on.

- Which flavors a sample's pod sets get is Kueue's own flavor assigner's answer (harness.gate.kueue_fit,
  tools/fluxbuild kueueadmit.go): per resource group the pod set requests, the first flavor whose
  nodeTaints the pod tolerates and whose nodeLabels its node selection allows, with quota.
- On admission the assigned flavors' nodeLabels join the pod's nodeSelector and their
  tolerations are appended (nodeTaints are not: the pod must tolerate them itself). A pod set
  gets one flavor per group, so a GPU pod carries the `default` and the `gpu` flavor together.
- The kube-scheduler then needs every selector label on the node and every node taint tolerated
  (harness.gate.pools.selects).

For quota (`flavor_reach`) the pods charged to a flavor are modelled as pods with no constraints
of their own that tolerate the nodeTaints of the flavors they get: the flavor, alone or with any
flavor of each other resource group of the same ClusterQueue. The union of the pools reached that
way is what the flavor's quota can use. Ray's pods are Linux pods: a Windows pool's nodes never count.
Given the tolerations the repository's pods write themselves (`pod_tolerations`: the samples' and the applied Ray
objects' pod templates), the pods charged to a flavor may also carry those of a template that requests a resource of
its group: a pool tainted for pods that tolerate it in their templates, not through the flavor, counts too.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from harness.gate.findings import Finding
from harness.gate.pools import Pool, selects
from harness.gate.scheduling import admitted
from harness.gate.sources import RAY_CLUSTER_SPEC, as_list, as_map, as_maps, name_key, ray_cluster_spec

MAX_COMBINATIONS = 512  # flavor combinations tried per pod set or flavor; real queues have a handful


@dataclass(frozen=True)
class Flavor:
    """The scheduling fields of one ResourceFlavor."""
    name: str
    labels: dict
    taints: list  # spec.nodeTaints
    tolerations: list
    exists: bool = True


@dataclass(frozen=True)
class PodView:
    """A pod template's own placement constraints."""
    node_selector: dict
    affinity: dict | None  # requiredDuringSchedulingIgnoredDuringExecution
    tolerations: list

    @property
    def unconstrained(self) -> bool:
        return not (self.node_selector or self.affinity or self.tolerations)


@dataclass
class Problem:
    """Capacity findings that may follow from a root cause, and what to list under it."""
    findings: list[Finding]
    causes: frozenset = frozenset()  # ("pool", address) with 0 nodes, ("flavor", name) selecting no pool, ("scale", address)
    summary: str = ""  # e.g. "nvidia.com/gpu quota 8 of flavor gpu (...) has no capacity behind it"
    pod: str = ""  # for a sample pod set: "sample/pod set"
    flavor: str = ""  # for a flavor that selects only pools with 0 nodes


def flavors_of(objects: list[dict]) -> dict[str, Flavor]:
    out = {}
    for o in objects:
        if o.get("kind") == "ResourceFlavor":
            spec = as_map(o.get("spec"))
            name = name_key(as_map(o.get("metadata")).get("name"))
            out[name] = Flavor(name, {str(k): str(v) for k, v in as_map(spec.get("nodeLabels")).items()},
                               as_maps(spec.get("nodeTaints")), as_maps(spec.get("tolerations")))
    return out


def flavor(flavors: dict[str, Flavor], name) -> Flavor:
    return flavors.get(name_key(name)) or Flavor(name_key(name), {}, [], [], exists=False)


def groups_of(cq: dict) -> list[tuple[list[str], list[str]]]:
    """(coveredResources, flavor names in order) of each resource group of a ClusterQueue."""
    return [([str(r) for r in as_list(g.get("coveredResources"))], [name_key(f.get("name")) for f in as_maps(g.get("flavors"))])
            for g in as_maps(as_map(cq.get("spec")).get("resourceGroups"))]


def pod_view(template: dict | None, objects: list[dict] = ()) -> PodView:
    """The placement constraints of a pod of `template` as kube-scheduler sees it: after the RuntimeClass admission merged
    the scheduling of the RuntimeClass among the cluster's `objects` it names (harness.gate.scheduling.admitted)."""
    spec = as_map(as_map(admitted(template, objects)).get("spec"))
    required = as_map(as_map(as_map(spec.get("affinity")).get("nodeAffinity")).get("requiredDuringSchedulingIgnoredDuringExecution"))
    return PodView({str(k): str(v) for k, v in as_map(spec.get("nodeSelector")).items()}, required or None, as_maps(spec.get("tolerations")))


def _tolerating(combo) -> PodView:
    """A pod with no constraints of its own that tolerates the combination's nodeTaints exactly."""
    tolerations = [{"key": t.get("key"), "operator": "Equal", "value": t.get("value"), "effect": t.get("effect")}
                   if t.get("value") not in (None, "") else {"key": t.get("key"), "operator": "Exists", "effect": t.get("effect")}
                   for f in combo for t in f.taints]
    return PodView({}, None, tolerations)


def _with(pod: PodView, tolerations) -> PodView:
    return PodView(pod.node_selector, pod.affinity, [*pod.tolerations, *tolerations])


# -- The scheduler's view ------------------------------------------------------------------------------
def landing(pod: PodView, combo, pools: list[Pool]) -> list[Pool]:
    """The pools a pod lands on once Kueue assigned `combo` (one flavor per requested group)."""
    labels: dict[str, str] = {}
    for f in combo:
        labels.update(f.labels)
    if any(k in pod.node_selector and pod.node_selector[k] != v for k, v in labels.items()):
        return []  # Kueue cannot merge a conflicting nodeSelector into the pods: they never start
    tolerations = list(pod.tolerations) + [t for f in combo for t in f.tolerations]
    return [p for p in pools if selects(p, {**labels, **pod.node_selector}, tolerations, pod.affinity)]


def _partner_combos(others: list[list[Flavor]]):
    """Per subset of the other groups, every choice of one flavor in each."""
    for k in range(len(others) + 1):
        for subset in itertools.combinations(others, k):
            yield from itertools.product(*subset)


def ray_templates(obj: dict) -> list[dict]:
    """The pod templates of a RayJob, RayCluster or RayService (KubeRay's default submitter left out)."""
    return [t for t in pod_templates(obj) if isinstance(t, dict)] if obj.get("kind") in RAY_CLUSTER_SPEC else []


def pod_tolerations(objects: list[dict]) -> list[tuple[frozenset[str], tuple[dict, ...]]]:
    """Per distinct pod template of the Ray objects among `objects` whose pods have tolerations (written in the template, or
    merged from its RuntimeClass among `objects` by the RuntimeClass admission): (the resources its containers request or
    limit, its tolerations)."""
    out = []
    for template in (t for o in objects for t in ray_templates(o)):
        spec = as_map(as_map(admitted(template, objects)).get("spec"))
        resources = frozenset(str(r) for c in as_maps(spec.get("containers")) + as_maps(spec.get("initContainers"))
                              for part in ("requests", "limits") for r in as_map(as_map(c.get("resources")).get(part)))
        entry = (resources, tuple(as_maps(spec.get("tolerations"))))
        if entry[1] and entry not in out:
            out.append(entry)
    return out


def flavor_reach(objects: list[dict], pools: list[Pool], pods: list[tuple[frozenset[str], tuple[dict, ...]]] = ()
                 ) -> dict[tuple[str, str], dict[str, tuple[Pool, set[str]]]]:
    """Per (flavor, resource) of the ClusterQueues' groups: pool address -> (pool, the partner
    flavors with which pods reach it, "alone" for none). `pods`: pod_tolerations of the repository's pods."""
    flavors = flavors_of(objects)
    pools = [p for p in pools if p.linux]
    out: dict[tuple[str, str], dict[str, tuple[Pool, set[str]]]] = {}
    for cq in (o for o in objects if o.get("kind") == "ClusterQueue"):
        groups = [(covered, [flavor(flavors, n) for n in names]) for covered, names in groups_of(cq)]
        for gi, (covered, group) in enumerate(groups):
            others = [[f for f in g if f.exists] for j, (_, g) in enumerate(groups) if j != gi]
            own = [(), *(tolerations for resources, tolerations in pods if resources & set(covered))]
            for fl in group:
                if not fl.exists:
                    continue
                for partners in itertools.islice(_partner_combos(others), MAX_COMBINATIONS):
                    combo = (fl, *partners)
                    via = " + ".join(f"flavor {p.name}" for p in partners) or "alone"
                    for p in {p.address: p for extra in own for p in landing(_with(_tolerating(combo), extra), combo, pools)}.values():
                        for r in covered:
                            out.setdefault((fl.name, r), {}).setdefault(p.address, (p, set()))[1].add(via)
    return out


# -- Sample pod sets --------------------------------------------------------------------------------
def pod_templates(job: dict) -> list[dict | None]:
    """The pod templates of a RayJob (or RayCluster, RayService) in the order of workloads.pod_sets (None: KubeRay's default
    submitter)."""
    spec = as_map(job.get("spec"))
    cluster = ray_cluster_spec(job)[1]
    out = [as_map(cluster.get("headGroupSpec")).get("template")]
    out += [g.get("template") for g in as_maps(cluster.get("workerGroupSpecs"))]
    if job.get("kind", "RayJob") == "RayJob" and spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        out.append(spec.get("submitterPodTemplate"))
    return out


def one_per_line(found: list[Finding], shared: dict[Finding, tuple[str, str, str, str]]) -> list[Finding]:
    """An empty pool whose node count several clusters take from the same line (a variable's default) is one finding there,
    naming each cluster and what depends on the pool on it."""
    groups: dict[tuple, list[Finding]] = {}
    for f in found:
        if f in shared:
            groups.setdefault((f.file, f.line, f.resource, shared[f][1]), []).append(f)
    out = [f for f in found if f not in shared]
    for same in groups.values():
        if len(same) == 1:
            out += same
            continue
        names = [shared[f][0] for f in same]
        out.append(replace(same[0], message=f"clusters {', '.join(names)}: {shared[same[0]][1]}, but the queues rely on it: "
                           + "; ".join(f"on {shared[f][0]}, {shared[f][2]}" for f in same) + "; Kueue would admit workloads whose pods can "
                           "never run", hint=shared[same[0]][3], context="; ".join(f.context for f in same)))
    return out


def follow_ons(covered: list[Problem], pods_then: str = "would stay Pending") -> list[str]:
    """What a root cause brings about, sample pods in one item."""
    flavors, pods = [p.flavor for p in covered if p.flavor], [p.pod for p in covered if p.pod]
    return (([f"{flavors_named(flavors)} select{'s' if len(flavors) == 1 else ''} no other pool"] if flavors else [])
            + [p.summary for p in covered if p.summary] + ([f"sample pods {', '.join(pods)} {pods_then}"] if pods else []))


def flavors_named(names) -> str:
    names = sorted(names)
    return f"flavor {names[0]}" if len(names) == 1 else f"flavors {', '.join(names)}"
