"""Whether the pinned Kueue could ever admit a sample in its ClusterQueue (`sample-fits`), decided by
Kueue's own scheduler code in the gate's Go helper (tools/fluxbuild kueueadmit.go): the cluster's
ResourceFlavors, Topologies, Cohorts and ClusterQueues in Kueue's scheduler cache (its AdmissionChecks as active: Kueue
reserves quota before they run, and the queue-activity rules judge whether they can be), the Workload Kueue's
Ray integration for its kind builds of the RayJob, RayCluster or RayService (a sample, or a queued one a layer applies; with its
namespace's LimitRange defaults and the pod overhead of its RuntimeClass, and the manager
configuration's resource transformations and excluded prefixes), and Kueue's flavor assigner on the
idle cluster. What it cannot fit there (one flavor per resource group and pod set, nominal quota plus
what the cohort tree lends, the pods resource, TAS-only flavors) it never admits: the job pends forever.
"""
from __future__ import annotations

import copy
import json
import re
from decimal import Decimal
from dataclasses import dataclass, replace
from pathlib import Path

from harness.core import HarnessError, format_quantity, parse_quantity
from harness.gate.cluster_index import ClusterIndex, cohort_ancestors, cohort_lenders
from harness.gate.config import GateConfig
from harness.gate.findings import Finding
from harness.gate.helper import submit_kept
from harness.gate.kueue_manager import manager_of
from harness.gate.pod_refs import charged_overhead, overhead_text, pod_templates
from harness.gate.pools import cluster_pools
from harness.gate.render import ClusterRender
from harness.gate.scheduling import node_objects
from harness.gate.sources import as_map, as_maps, reachable_dirs, resource_id
from harness.gate.terraform import TerraformConfig, TerraformError, load_tfvars

KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUEUE_KINDS = {"ResourceFlavor", "Topology", "AdmissionCheck", "Cohort", "ClusterQueue"}  # AdmissionChecks go in as active (kueueadmit.go)


class AdmitError(HarnessError):
    pass


@dataclass
class Candidate:
    """One sample submitted on a cluster, or a queued Ray object a layer applies: its RayJob (RayCluster, RayService), the
    ClusterQueue its LocalQueue points at, its namespace's LimitRanges and the cluster's RuntimeClasses (`limit_ranges`),
    and where a finding about it points (`what`: how the message names it, by default "<wfile> as submitted")."""

    job: dict
    cq: dict
    limit_ranges: list[dict]
    samples_file: str
    line: int | None
    wfile: str
    where: str
    index: int = -1  # of its entry in the samples file (-1: a layer's object)
    what: str = ""


class Fits:
    """Kueue's flavor assigner's answers for one cluster's samples, asked when made (the helper answers while the caller
    goes on): `findings` gives sample-fits, `answer` what it says of one samples-file entry (the flavors it gives each
    pod set), for the placement rules (harness.gate.podsets)."""

    def __init__(self, candidates: list[Candidate] = (), pending=None, nodes: list[dict] | None = (), lenders: tuple[str, ...] = (),
                 queue_objects: list[dict] = (), ask=None):
        self._candidates, self._pending, self._nodes, self._lenders = list(candidates), pending, nodes, lenders
        self._queue_objects = list(queue_objects)
        self._ask = ask  # fn(queue objects, candidate): the assigner's answer for it on those (a what-if, for the hint)
        self.relocate = None  # fn(finding, candidate, answer): a finding at its cause in the configuration (fit_causes)
        self.locate = None  # fn(queue object, field path) -> "file:line" where the cluster writes it, or None (fit_causes)

    def _answers(self) -> list[dict]:
        return self._pending.result() if self._pending is not None else []

    def answer(self, index: int) -> dict | None:
        """The assigner's answer for the samples-file entry `index`; None when it was not asked (no ClusterQueue known)."""
        return next((a for c, a in zip(self._candidates, self._answers()) if c.index == index), None)

    def without(self, c: Candidate, kind: str) -> dict | None:
        """The assigner's answer for `c` with its related objects of `kind` left out (what the namespace's LimitRange
        defaults, or the RuntimeClasses' pod overhead, cost it); None when it cannot be asked."""
        if self._ask is None:
            return None
        return self._ask(self._queue_objects, replace(c, limit_ranges=[o for o in c.limit_ranges if o.get("kind") != kind]))

    def under(self, c: Candidate, config: str) -> dict | None:
        """The assigner's answer for `c` with the Kueue manager running configuration text `config` (what a setting of the
        cluster's configuration costs it); None when it cannot be asked."""
        return self._ask(self._queue_objects, c, config) if self._ask is not None else None

    def findings(self) -> list[tuple[Finding, tuple[str, ...]]]:
        """sample-fits for each candidate it cannot fit: (the finding, presuming its RayJob, its ClusterQueue and those
        that may lend to it accepted; when its every reason is where the pods may land, the flavors named)."""
        return [(replace(self.relocate(found, c, answer) if self.relocate else found,
                         presumes=(found.resource, resource_id(c.cq), *(self._lenders if as_map(c.cq.get("spec")).get("cohortName") else ()))),
                 placement_only(answer)) for c, answer, found in _judged(self._candidates, self._answers(), self._nodes, self._queue_objects, self._ask,
                                                                    self.locate)]


def manager_ref(root: Path, cluster: ClusterRender) -> dict:
    """The Kueue manager the cluster runs (kueue_manager.manager_of)."""
    return manager_of(ClusterIndex.build(root, cluster))


def managers(root: Path, clusters: list[ClusterRender]):
    """The Kueue manager (manager_ref) whose code judges the objects of a build: its cluster's; for a plain build (no one
    cluster's), the one the clusters whose Flux Kustomizations build its directory (or include it) share, else the one all
    clusters share; None (Kueue's defaults) when those differ."""
    of = {c.name: manager_ref(root, c) for c in clusters}
    users: dict[str, set[str]] = {}
    for c in clusters:
        for fb in c.flux:
            for d in reachable_dirs(root, root / fb.dir):
                users.setdefault(d.relative_to(root.resolve()).as_posix() if d.is_relative_to(root.resolve()) else str(d), set()).add(c.name)

    plain: dict[str, dict | None] = {}  # per plain build's directory, decided once (every object of a build asks)

    def manager_for(build) -> dict | None:
        if build.cluster in of:
            return of[build.cluster]
        if build.dir not in plain:
            found = {json.dumps(of[n], sort_keys=True) for n in users.get(build.dir) or of}
            plain[build.dir] = json.loads(found.pop()) if len(found) == 1 else None
        return plain[build.dir]
    return manager_for


def verdicts(checker, queue_objects: list[dict], jobs: list[tuple[dict, str, list[dict]]], manager: dict | None = None,
             nodes: list[dict] = ()) -> list[dict]:
    """Per (RayJob, ClusterQueue name, its namespace's LimitRanges) of `jobs`, Kueue's flavor assigner's answer on the
    idle cluster of `queue_objects` (ResourceFlavors, Topologies, AdmissionChecks, Cohorts, ClusterQueues) and `nodes`, with the Kueue
    manager `manager` (manager_ref; None: the chart's configuration and feature gates): {"mode": "Fit"|"Preempt"|"NoFit", "message", "pod_sets": [{"name",
    "count", "requests", "flavors", "reasons"}]}, or {"mode": "", "skipped": why} when not judged."""
    return submit(checker, queue_objects, jobs, manager, nodes).result()


def submit(checker, queue_objects: list[dict], jobs: list[tuple[dict, str, list[dict]]], manager: dict | None = None,
           nodes: list[dict] = ()):
    """`verdicts`, sent now: the returned future's result() waits for them."""
    return submit_kept("fluxbuild", "admit", AdmitError, admit={
        "kueue": queue_objects, "config": (manager or {}).get("config"), "nodes": list(nodes),
        "jobs": [{"object": job, "cluster_queue": cq, "related": related} for job, cq, related in jobs],
    }, kueue_manager=manager, **checker.schema_request())


def _tas_nodes(root: Path, cluster: ClusterRender, gate_config: GateConfig) -> list[dict] | None:
    """The cluster's Node objects from its Terraform node pools (as AKS registers them), which Kueue's TAS cache
    holds; None when the pools cannot be read (the capacity rules say why)."""
    if not gate_config.terraform:
        return None
    rel = gate_config.tfvars_file(cluster.name, root)
    try:
        pools = cluster_pools(TerraformConfig.load(root), load_tfvars(root / rel, root), rel)
        return node_objects([p.node_spec() for p in pools if p.count > 0])
    except (TerraformError, ValueError, OSError):
        return None


def fits(checker, root: Path, cluster: ClusterRender, candidates: list[Candidate], gate_config: GateConfig) -> Fits:
    """Sends the candidates to Kueue's flavor assigner now, on the idle cluster of their ClusterQueues. `checker`: the
    run's schema_check.Checker (its CRDs default the objects as the apiserver stores them). Topology-aware flavors are
    judged on the cluster's nodes."""
    if not candidates:
        return Fits()
    queue_objects = [o for _, o in cluster.applied() if o.get("kind") in QUEUE_KINDS and o.get("apiVersion") == KUEUE_API]
    tas = any(o.get("kind") == "ResourceFlavor" and as_map(o.get("spec")).get("topologyName") for o in queue_objects)
    nodes = _tas_nodes(root, cluster, gate_config) if tas else []
    manager = manager_ref(root, cluster)
    pending = submit(checker, queue_objects, [(c.job, as_map(c.cq.get("metadata")).get("name"), c.limit_ranges) for c in candidates],
                     manager, nodes or [])
    # What a sample's verdict presumes the cluster has: its ClusterQueue, and with a cohort every queue object that may
    # lend to it (a refused peer lends nothing: that refusal is the cause, not the sample).
    lenders = tuple(resource_id(o) for o in queue_objects if o.get("kind") in ("Cohort", "ClusterQueue"))  # (one it should name may not)

    def ask(objects: list[dict], c: Candidate, config: str | None = None) -> dict:
        run = manager if config is None else {**manager, "config": config}
        return verdicts(checker, objects, [(c.job, as_map(c.cq.get("metadata")).get("name"), c.limit_ranges)], run, nodes or [])[0]
    return Fits(candidates, pending, nodes, lenders, queue_objects, ask)


def _judged(candidates: list[Candidate], answers: list[dict], nodes: list[dict] | None,
            queue_objects: list[dict] = (), ask=None, locate=None) -> list[tuple[Candidate, dict, Finding]]:
    out = []
    for c, answer in zip(candidates, answers):
        if answer.get("mode") in (None, "", "Fit"):
            continue  # admitted on the idle cluster, or not judged (its own finding says why: an invalid Workload, a refused queue)
        if nodes is None and any(w in (answer.get("message") or "") for w in ("opology", "TAS")):
            continue  # the nodes a topology-aware flavor needs are unknown (the capacity rules say why): not judged
        out.append((c, answer, _finding(c, answer, queue_objects, ask, locate)))
    return out


# Kueue's flavor assigner's reasons (flavorassigner.go checkFlavorForPodSets) for a flavor the pods may not land on.
_PLACEMENT = re.compile(r"^(?:untolerated taint .* in flavor (\S+)|flavor (\S+) doesn't match node affinity)$")


def placement_reasons(pod_set: dict) -> list[tuple[str, str]] | None:
    """(reason, flavor) of each reason the assigner gives for not fitting `pod_set` (an answer's pod set), when every
    one is where its pods may land (a flavor's taints they do not tolerate, node labels their affinity excludes); None
    when a reason is something else (quota), or there is none."""
    reasons = [r.strip() for r in (pod_set.get("reasons") or "").split(", ") if r.strip()]
    matched = [(r, _PLACEMENT.match(r)) for r in reasons]
    if not matched or not all(m for _, m in matched):
        return None
    return [(r, m.group(1) or m.group(2)) for r, m in matched]


def placement_only(answer: dict) -> tuple[str, ...]:
    """When every reason the assigner gives for the pod sets it cannot fit is where their pods may land, the flavors
    those reasons name (the capacity-pod-placement rules name that line, at the pod or at the flavor); else ()."""
    failed = [placement_reasons(ps) for ps in answer.get("pod_sets") or [] if ps.get("reasons")]
    return tuple(dict.fromkeys(fl for reasons in failed for _, fl in reasons)) if failed and all(failed) else ()


SHORT_QUOTA = re.compile(r"insufficient quota for (\S+) in flavor ([^,\s]+)")  # Kueue's reason: (resource, flavor)


def _capping_limits(queue_objects: list[dict], cq: dict, reason: str, unlimited=None, locate=None) -> list[str]:
    """The limits that cap what `cq` may borrow of the resource and flavor Kueue found short (`reason`), each with where it
    is written (`locate`, fn(object, field path) -> "file:line" or None): of every limit of the cohort tree that can cap it
    (a borrowingLimit of the queue or of a Cohort above it, which caps what that node takes from its parent; a lendingLimit
    of the tree's others, which caps what they lend up towards it), those that bind: `unlimited`, fn(limits) -> the
    assigner's answer with those limits dropped, admits the job or gives a larger maximum without it (without any one of
    them, or, when none binds alone, without all of them together)."""
    short = SHORT_QUOTA.search(reason)
    lenders = [o for o in cohort_lenders(queue_objects, cq) if _key(o) != _key(cq)] if short else []
    if not lenders or unlimited is None:
        return []  # nothing to borrow from (cohort-alone says so when it has a cohort)
    cohorts = {as_map(o.get("metadata")).get("name"): o for o in queue_objects if o.get("kind") == "Cohort"}
    path = [cq, *(cohorts[n] for n in cohort_ancestors(queue_objects, cq) if n in cohorts)]
    written = [(o, which, field, value) for o, which in [*((o, "borrowingLimit") for o in path), *((o, "lendingLimit") for o in lenders)]
               for field, value in _limits(o, short[1], short[2], which)]
    maximum = re.search(r"maximum capacity \(([^)]*)\)", reason)
    maximum = _sum(maximum[1]) if maximum else None
    binding = [w for w in written if _grows(unlimited([w]), short, maximum)]
    if not binding and len(written) > 1 and _grows(unlimited(written), short, maximum):
        binding = written  # they bind together: dropping any one leaves another as tight

    def text(o: dict, which: str, field: str, value) -> str:
        at = locate(o, field) if locate else None
        owner = "its" if _key(o) == _key(cq) else f"{o.get('kind')} {as_map(o.get('metadata')).get('name')}'s"
        return f"{owner} {which} {value} ({short[1]} in {short[2]}{f', written at {at}' if at else ''})"
    return [text(*w) for w in binding]


def _key(obj: dict) -> tuple:
    return obj.get("kind"), as_map(obj.get("metadata")).get("name")


def _limits(obj: dict, resource: str, flavor: str, which: str) -> list[tuple[str, object]]:
    """(field path, value) of `obj`'s `which` limit of `resource` in `flavor`, when written."""
    return [(f"spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}].{which}", r[which])
            for gi, rg in enumerate(as_maps(as_map(obj.get("spec")).get("resourceGroups")))
            for fi, fl in enumerate(as_maps(rg.get("flavors"))) if fl.get("name") == flavor
            for ri, r in enumerate(as_maps(fl.get("resources"))) if r.get("name") == resource and which in r]


def _grows(answer: dict, short: re.Match, maximum: Decimal | None) -> bool:
    """Whether the assigner's `answer` (without some limits) admits the job, or gives a larger maximum for the same
    resource and flavor."""
    if answer.get("mode") in ("Fit", "Preempt"):
        return True
    reason = answer.get("message") or ""
    found = re.search(rf"insufficient quota for {re.escape(short[1])} in flavor {re.escape(short[2])}\b[^;]*?maximum capacity \(([^)]*)\)", reason)
    return found is None or maximum is None or (_sum(found[1]) or 0) > maximum


def _without_limits(queue_objects: list[dict], dropped: list[tuple]) -> list[dict]:
    """`queue_objects` with the limits `dropped` ((object, which, field path, value) of _capping_limits) left out."""
    out = copy.deepcopy(queue_objects)
    for o, which, field, _ in dropped:
        twin = next((x for x in out if _key(x) == _key(o)), None)
        if twin is None:
            continue
        gi, fi, ri = map(int, re.findall(r"\[(\d+)\]", field))
        twin["spec"]["resourceGroups"][gi]["flavors"][fi]["resources"][ri].pop(which, None)
    return out


def _sum(*values) -> Decimal | None:
    try:
        return sum((parse_quantity(str(v)) for v in values), Decimal(0))
    except (ValueError, TypeError):
        return None


def _finding(c: Candidate, answer: dict, queue_objects: list[dict] = (), ask=None, locate=None) -> Finding:
    cq = as_map(c.cq.get("metadata")).get("name")
    named = ", ".join(sorted(resource_id(lr) for lr in c.limit_ranges if lr.get("kind") == "LimitRange"))
    defaults = f", its containers with the defaults of {named}" if named else ""
    overhead = "; ".join(overhead_text(found) for _, found in overheads(c).values())
    defaults += f", with {overhead} on each pod that names it" if overhead else ""
    sets = "; ".join(f"{ps['name']} {ps['count']} pod(s): " + (", ".join(f"{r} {_quantity(r, q)}" for r, q in sorted(ps["requests"].items()))
                                                                  or "no requests") for ps in answer.get("pod_sets") or [])
    reason = answer.get("message") or "no flavor fits"
    if "unavailable in ClusterQueue" in reason or "doesn't have quota for" in reason:
        hint = f"add the resource to a resource group of ClusterQueue {cq} (through the cluster's gpu-sku component), or drop the request"
    elif "supports only TopologyAwareScheduling" in reason:
        hint = (f"a flavor with topologyName takes only pod sets that ask for a topology while ClusterQueue {cq} has flavors without "
                "one: drop topologyName from that flavor, give every flavor of the ClusterQueue one (Kueue then places the pod sets "
                "that ask for none too), or annotate the pod templates with kueue.x-k8s.io/podset-preferred-topology")
    elif any(w in reason for w in ("opology", "TAS")):
        hint = (f"give ClusterQueue {cq} a flavor for the pod sets that do not ask for a topology (or one with topologyName for those "
                "that do), or remove the topology request")
    else:
        hint = "shrink the job (fewer workers, smaller pods) or raise the quota through the cluster's gpu-sku component"
        hint += " (Kueue charges the RuntimeClass's overhead too: lower it, or drop runtimeClassName)" if overhead else ""
        unlimited = (lambda dropped: ask(_without_limits(queue_objects, dropped), c)) if ask else None
        capping = _capping_limits(queue_objects, c.cq, reason, unlimited, locate)
        if capping:
            hint = f"what it may borrow is capped by {', '.join(capping)}: raise or drop {'those limits' if len(capping) > 1 else 'it'}, or {hint}"
    return Finding(c.samples_file, c.line, resource_id(c.job), "sample-fits",
                   f"{c.what or f'{c.wfile} as submitted'} ({sets}{defaults}) is never admitted by ClusterQueue {cq}, not even on an idle cluster: "
                   f"Kueue's flavor assigner says \"{reason}\"; it would pend forever", hint, c.where)


def overheads(c: Candidate) -> dict[str, tuple[list, tuple[str, dict]]]:
    """Per RuntimeClass among the candidate's related objects whose pod overhead Kueue charges (AdjustResources: one a pod
    template of the job names, with an overhead.podFixed), the field path of the first runtimeClassName that names it and
    pod_refs.charged_overhead's answer."""
    out = {}
    for path, spec in pod_templates(c.job):
        if (found := charged_overhead(spec, c.limit_ranges)) and found[0] not in out:
            out[found[0]] = ([*path, "runtimeClassName"], found)
    return out


def _quantity(resource: str, value: str) -> str:
    try:
        return format_quantity(resource, parse_quantity(value))
    except (ValueError, TypeError):
        return value
