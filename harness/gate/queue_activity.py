"""ClusterQueues that every object of the cluster accepts but Kueue never activates, and cohort
trees Kueue leaves out of scheduling: the queue admits nothing, so its jobs pend forever.

Kueue 0.17.1 keeps a ClusterQueue inactive (status condition Active=False) for the reasons of
`clusterQueue.inactiveReason` (pkg/cache/scheduler/clusterqueue.go). Stopped and FlavorNotFound
are the rules queue-stopped and clusterqueue-flavor; this module checks the others on the
cluster's rendered set:

- AdmissionCheckNotFound: an admission check the ClusterQueue names does not exist;
- AdmissionCheckInactive: it exists, but its controller would not set it Active. The built-in
  controllers set Active only when `spec.parameters` names an existing object of their
  configuration kind (ProvisioningRequestConfig, MultiKueueConfig: BadParametersRef/BadConfig),
  MultiKueue only when some MultiKueueCluster of the config exists; another controllerName needs
  a controller the repository does not show (a warning);
- MultipleMultiKueueAdmissionChecks, MultiKueueAdmissionCheckAppliedPerFlavor,
  MultiKueueWithProvisioningRequest;
- TopologyNotFound: a flavor of the ClusterQueue names a Topology (spec.topologyName) that does
  not exist, where the cluster's Kueue manager runs TopologyAwareScheduling (on by default since Kueue 0.14).

A Cohort whose spec.parentName chain loops is a cycle: the scheduler's snapshot leaves out every
ClusterQueue below it (pkg/cache/scheduler/snapshot.go), and the webhook does not refuse it.
Kueue also skips its provisioning controller where the apiserver serves no ProvisioningRequest
API (cluster-autoscaler's autoscaling.x-k8s.io); a cluster's set without that CRD gets a warning.
"""
from __future__ import annotations

from pathlib import Path

from harness.gate import kueue_manager
from harness.gate.cluster_index import ClusterIndex, finding_at
from harness.gate.render import ClusterRender
from harness.gate.sources import as_list, as_map, as_maps, name_key

RULES = {
    "clusterqueue-admission-check": "every AdmissionCheck a ClusterQueue names exists and would be Active (its controller's parameters "
                                    "name an existing config), with at most one MultiKueue check, not per flavor nor beside a "
                                    "ProvisioningRequest check; else Kueue keeps the ClusterQueue inactive",
    "clusterqueue-topology": "every Topology a ClusterQueue's flavor names (spec.topologyName) exists; else Kueue keeps the ClusterQueue inactive",
    "cohort-cycle": "Cohort spec.parentName chains have no cycle; Kueue schedules nothing below a cycle",
}
KUEUE_GROUP = "kueue.x-k8s.io"
PROVISIONING = "kueue.x-k8s.io/provisioning-request"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
CONFIG_KINDS = {PROVISIONING: "ProvisioningRequestConfig", MULTIKUEUE: "MultiKueueConfig"}
PROVISIONING_CRD = "provisioningrequests.autoscaling.x-k8s.io"
INACTIVE = "Kueue keeps ClusterQueue {cq} inactive ({reason}): it admits nothing and its jobs pend forever"


def _name(obj: dict):
    return as_map(obj.get("metadata")).get("name")


def _check_problems(index: ClusterIndex, build, ac: dict) -> tuple[str, str, str, tuple] | None:
    """(reason, what is wrong, severity, where it is written: (object, build, field path)) when AdmissionCheck `ac` (of
    `build`) would not become Active: the cause is the check's own spec, or its MultiKueueConfig's clusters, not the
    ClusterQueues that name it."""
    spec = as_map(ac.get("spec"))
    controller = spec.get("controllerName")
    config_kind = CONFIG_KINDS.get(controller) if isinstance(controller, str) else None
    if config_kind is None:
        return ("AdmissionCheckInactive", f"controllerName {controller!r} is no controller of Kueue 0.17 and nothing in the cluster's "
                "set shows one; until that controller sets its Active condition", "warning", (ac, build, ["spec", "controllerName"]))
    params = as_map(spec.get("parameters"))
    if (params.get("apiGroup"), params.get("kind")) != (KUEUE_GROUP, config_kind) or not params.get("name"):
        return ("AdmissionCheckInactive", f"spec.parameters must name a {KUEUE_GROUP} {config_kind} (BadParametersRef)", "error",
                (ac, build, ["spec", "parameters"] if "parameters" in spec else ["spec", "controllerName"]))
    if not index.has(config_kind, None, params["name"]):
        have = sorted(str(_name(o)) for _, o in index.of_kind(config_kind))
        return ("AdmissionCheckInactive", f"spec.parameters names {config_kind} {params['name']!r}, which the cluster does not have "
                f"(have: {', '.join(have) or 'none'})", "error", (ac, build, ["spec", "parameters", "name"]))
    if controller == MULTIKUEUE:
        config_build, config = index.named[(config_kind, None, name_key(params["name"]))]
        clusters = as_list(as_map(config.get("spec")).get("clusters"))
        if not any(index.has("MultiKueueCluster", None, c) for c in clusters):
            return ("AdmissionCheckInactive", f"none of the MultiKueueClusters of MultiKueueConfig {params['name']!r} "
                    f"({', '.join(map(str, clusters)) or 'none listed'}) exists (NoUsableClusters)", "error",
                    (config, config_build, ["spec", "clusters"]))
    return None


def _inactive_check(ctx, root: Path, cluster: str, name: str, controller, problem: tuple, cqs: list[str]):
    """One finding per AdmissionCheck that would stay inactive, where its cause is written, naming the ClusterQueues it
    keeps inactive."""
    reason, what, severity, (obj, build, path) = problem
    names = ", ".join(sorted(set(cqs)))
    hint = (f"point AdmissionCheck {name}'s spec.parameters at an existing config object of its controller (apiGroup "
            f"kueue.x-k8s.io), or remove the check from ClusterQueue(s) {names}") if controller in CONFIG_KINDS else \
           (f"deploy the controller {controller} to the cluster (it sets the check's Active condition), or remove the check "
            f"from ClusterQueue(s) {names}")
    if path[-1] == "clusters":
        hint = f"add the MultiKueueCluster(s) this MultiKueueConfig lists, or list existing ones; or remove check {name} from {names}"
    said = INACTIVE.format(cq=names, reason=reason)
    return finding_at(ctx, root, obj, build, path, "clusterqueue-admission-check",
                      f"AdmissionCheck {name!r} would stay inactive: {what}; "
                      + (said.replace("ClusterQueue ", "ClusterQueues ", 1).replace("it admits nothing and its", "they admit nothing and their")
                         if len(set(cqs)) > 1 else said),
                      hint, cluster=cluster, severity=severity)


def _admission_check_rules(ctx, root: Path, index: ClusterIndex) -> list:
    out, cluster = [], index.cluster.name
    checks = {name_key(_name(ac)): (b, ac) for b, ac in index.of_kind("AdmissionCheck")}
    inactive: dict[str, tuple] = {}  # check name -> (controller, problem, the ClusterQueues naming it)
    for build, cq in index.of_kind("ClusterQueue"):
        cq_name = _name(cq)
        rules = as_maps(as_map(as_map(cq.get("spec")).get("admissionChecksStrategy")).get("admissionChecks"))
        by_controller: dict[str, list[str]] = {}
        broken: set[str] = set()  # checks reported as errors: a follow-on warning about them is folded
        for i, rule in enumerate(rules):
            path = ["spec", "admissionChecksStrategy", "admissionChecks", i, "name"]
            ac_build, ac = checks.get(name_key(rule.get("name")), (None, None))
            if ac is None:
                out.append(finding_at(ctx, root, cq, build, path, "clusterqueue-admission-check",
                                      f"names AdmissionCheck {rule.get('name')!r}, which the cluster does not have (have: "
                                      f"{', '.join(sorted(checks)) or 'none'}); " + INACTIVE.format(cq=cq_name, reason="AdmissionCheckNotFound"),
                                      "add the AdmissionCheck (and its parameters object) to the layer, or remove the entry", cluster=cluster))
                continue
            controller = as_map(ac.get("spec")).get("controllerName")
            by_controller.setdefault(controller if isinstance(controller, str) else "", []).append(str(rule.get("name")))
            if controller == MULTIKUEUE and as_list(rule.get("onFlavors")):
                out.append(finding_at(ctx, root, cq, build, path[:-1] + ["onFlavors"], "clusterqueue-admission-check",
                                      f"MultiKueue AdmissionCheck {rule.get('name')!r} is applied per flavor; "
                                      + INACTIVE.format(cq=cq_name, reason="MultiKueueAdmissionCheckAppliedPerFlavor"),
                                      "drop onFlavors from the MultiKueue check: it applies to the whole ClusterQueue", cluster=cluster))
            problem = _check_problems(index, ac_build, ac)
            if problem is not None:
                if problem[2] == "error":
                    broken.add(str(rule.get("name")))
                inactive.setdefault(str(_name(ac)), (controller, problem, []))[2].append(str(cq_name))
        multi, provisioning = by_controller.get(MULTIKUEUE, []), by_controller.get(PROVISIONING, [])
        if len(multi) > 1 or (multi and provisioning):
            reason, what = (("MultipleMultiKueueAdmissionChecks", f"names {len(multi)} MultiKueue checks ({', '.join(multi)})") if len(multi) > 1
                            else ("MultiKueueWithProvisioningRequest",
                                  f"names MultiKueue check {multi[0]} beside ProvisioningRequest check(s) {', '.join(provisioning)}"))
            out.append(finding_at(ctx, root, cq, build, ["spec", "admissionChecksStrategy", "admissionChecks"], "clusterqueue-admission-check",
                                  f"{what}; " + INACTIVE.format(cq=cq_name, reason=reason),
                                  "keep one MultiKueue check per ClusterQueue and no ProvisioningRequest check beside it", cluster=cluster))
        if set(provisioning) - broken and not index.has("CustomResourceDefinition", None, PROVISIONING_CRD):
            out.append(finding_at(ctx, root, cq, build, ["spec", "admissionChecksStrategy", "admissionChecks"], "clusterqueue-admission-check",
                                  f"uses ProvisioningRequest check(s) {', '.join(provisioning)}, but the cluster's set has no {PROVISIONING_CRD} "
                                  "CRD; Kueue skips its provisioning controller where the apiserver does not serve it, and then "
                                  + INACTIVE.format(cq=cq_name, reason="AdmissionCheckInactive"),
                                  "make sure the cluster autoscaler serves ProvisioningRequest (or add its CRD to the layer), or drop the check",
                                  cluster=cluster, severity="warning"))
    return out + [_inactive_check(ctx, root, cluster, name, controller, problem, cqs) for name, (controller, problem, cqs) in inactive.items()]




def _topology_rules(ctx, root: Path, index: ClusterIndex) -> list:
    """Reported once per flavor, where topologyName is written, with the ClusterQueues it stops."""
    out, users = [], {}
    tas = kueue_manager.feature_enabled(kueue_manager.manager_of(index), "TopologyAwareScheduling")
    for _, cq in index.of_kind("ClusterQueue"):
        for group in as_maps(as_map(cq.get("spec")).get("resourceGroups")):
            for ref in as_maps(group.get("flavors")):
                users.setdefault(name_key(ref.get("name")), []).append(str(_name(cq)))
    for build, flavor in index.of_kind("ResourceFlavor"):
        topology, cqs = as_map(flavor.get("spec")).get("topologyName"), sorted(set(users.get(name_key(_name(flavor)), [])))
        if topology and cqs and not index.has("Topology", None, topology) and tas:
            out.append(finding_at(ctx, root, flavor, build, ["spec", "topologyName"], "clusterqueue-topology",
                                  f"names Topology {topology!r}, which the cluster does not have; Kueue keeps the ClusterQueue(s) using "
                                  f"this flavor ({', '.join(cqs)}) inactive (TopologyNotFound): they admit nothing and their jobs pend forever",
                                  f"add a Topology {topology} (kueue.x-k8s.io/v1beta2, its levels as node labels) or drop topologyName",
                                  cluster=index.cluster.name))
    return out


def _cycle_rules(ctx, root: Path, index: ClusterIndex) -> list:
    out = []
    parents = {name_key(_name(c)): (b, c) for b, c in index.of_kind("Cohort")}
    reported: set[str] = set()
    for start in parents:
        path, node = [], start
        while node in parents and node not in path:
            path.append(node)
            node = name_key(as_map(parents[node][1].get("spec")).get("parentName"))
        if node in path and node not in reported:
            loop = path[path.index(node):]
            reported.update(loop)
            build, cohort = parents[node]
            out.append(finding_at(ctx, root, cohort, build, ["spec", "parentName"], "cohort-cycle",
                                  f"Cohort parents loop: {' -> '.join([*loop, node])}; Kueue schedules no ClusterQueue below a cycle",
                                  "make one Cohort of the loop the root (drop its spec.parentName)", cluster=index.cluster.name))
    return out


def queue_activity_rules(ctx, root: Path, cluster: ClusterRender) -> list:
    """Inactive ClusterQueues and cohort cycles on one cluster's rendered set (`ctx`: rules.Context)."""
    index = ClusterIndex.build(root, cluster)
    if not index.complete:  # a layer did not render: what exists is unknown, and a missing object would be a guess
        return []
    return _admission_check_rules(ctx, root, index) + _topology_rules(ctx, root, index) + _cycle_rules(ctx, root, index)
