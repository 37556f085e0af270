"""The Kueue HelmRelease's manager configuration against what the pinned Kueue chart and the cluster around it
wire, once the pinned Kueue manager has loaded it (harness.gate.kueue_manager.loaded: Kueue's own loader, with
its defaults). The configuration replaces the chart's as a whole, and the chart hard-codes what it must agree
with (charts/kueue of sigs.k8s.io/kueue at the pinned version, which the MCR chart of versions.yaml packages;
tests/static/test_kueue_wiring.py reads the pinned chart and fails when these facts drift):

- kueue-chart-wiring: the webhook Service sends the apiserver's calls to targetPort 9443 (values
  webhookService.ports), where the manager must listen (webhook.port); the kubelet's liveness and readiness
  probes ask port 8081 (health.healthProbeBindAddress); the webhook server needs a certificate, from Kueue's
  internal certificate management or, with values.enableCertManager, from cert-manager; and
  values.controllerManager.replicas must not be 0. Otherwise Kueue's webhooks (failurePolicy Fail) have no
  endpoint: the apiserver refuses every Kueue object and job the cluster creates, and nothing is admitted.
- kueue-manage-without-queue-name: with manageJobsWithoutQueueName, Kueue gates every pod (pod integration)
  and suspends every Job (batch/job) without a queue in the namespaces managedJobsNamespaceSelector selects,
  unless an ancestor is a job Kueue manages or the namespace has a LocalQueue "default" (pod_webhook.go
  Default). The Flux controllers in flux-system, the operators the HelmReleases install and the layers' own
  Deployments and Jobs then never start again once their pods are replaced.
- kueue-namespace-unmanaged: with ManagedJobsNamespaceSelectorAlwaysRespected (on by default), a namespace with a
  LocalQueue or queued Ray objects that managedJobsNamespaceSelector leaves out: Kueue ignores its jobs, which its
  webhook created suspended, so they never run (with or without manageJobsWithoutQueueName).
- kueue-excluded-resource: resources.excludeResourcePrefixes, or a transformation with strategy Replace and no outputs,
  drops a resource from every workload's requests, so a ClusterQueue quota on it limits nothing: Kueue admits jobs
  beyond what the nodes have. One finding per value (entry or transformation), whatever the clusters.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from harness.gate import kueue_manager, matching
from harness.gate.cluster_index import ClusterIndex, finding_at
from harness.gate.findings import Finding
from harness.gate.kueue_manager import locate, loaded, manager_text
from harness.gate.sources import QUEUE_LABEL, as_list, as_map, as_maps, name_key, parse_yaml

RULES = {
    "kueue-chart-wiring": "the Kueue HelmRelease's manager configuration and values agree with what the chart wires: the webhook port "
                          "(webhookService targetPort), the probe port 8081, a certificate for the webhook server, replicas above 0",
    "kueue-manage-without-queue-name": "with manageJobsWithoutQueueName, managedJobsNamespaceSelector leaves out the namespaces whose pods "
                                       "and Jobs have no queue (flux-system, the operators' namespaces, the layers' Deployments and Jobs)",
    "kueue-namespace-unmanaged": "managedJobsNamespaceSelector of the Kueue manager configuration selects every namespace with a "
                                 "LocalQueue or a queued Ray object (Kueue ignores the jobs of the others, which stay suspended)",
    "kueue-excluded-resource": "resources.excludeResourcePrefixes of the Kueue manager configuration, or a transformation with "
                               "strategy Replace and no outputs, drops no resource a ClusterQueue has quota for",
}
# What charts/kueue of the pinned Kueue writes (test_kueue_wiring.py checks them against the chart).
CHART_WEBHOOK_TARGET_PORT = 9443  # values.yaml webhookService.ports[0].targetPort
CHART_CONTAINER_PORTS = {"webhook-server": 9443, "metrics": 8443, "visibility": 8082}  # templates/manager/manager.yaml
CHART_PROBE_PORT = 8081  # templates/manager/manager.yaml livenessProbe and readinessProbe, written as a number
POD_FRAMEWORKS = ("pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")
POD_OWNERS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Pod")
JOB_KINDS = ("Job", "CronJob")
UNREACHABLE = ("so Kueue's webhooks (failurePolicy Fail) have no endpoint: the apiserver refuses every ClusterQueue, LocalQueue and "
               "RayJob the cluster creates, and nothing is admitted")


def wiring_rules(ctx, root: Path, index: ClusterIndex) -> list[Finding]:
    out = []
    for build, hr in index.of_kind("HelmRelease"):
        if index.chart_of(hr) != "kueue":
            continue
        values = as_map(as_map(hr.get("spec")).get("values"))
        replicas = as_map(values.get("controllerManager")).get("replicas")
        if replicas == 0:
            out.append(finding_at(ctx, root, hr, build, ["spec", "values", "controllerManager", "replicas"], "kueue-chart-wiring",
                                  f"values.controllerManager.replicas is 0: no Kueue manager runs, {UNREACHABLE}",
                                  "set controllerManager.replicas to 1 (2 or more elect a leader)", cluster=index.cluster.name))
        text = manager_text(hr)
        config = loaded(text) if text is not None else None
        if config is None:
            continue  # the chart's own configuration, or one the manager refuses (kueue-config)
        located, block = locate(ctx, root, index, build, hr, "kueue-chart-wiring")

        def at(path: list[str], rule: str, message: str, hint: str, severity: str = "error") -> Finding:
            return Finding(located.file, block.line(path), located.resource, rule, f"values.managerConfig.controllerManagerConfigYaml {message}",
                           hint, located.context, severity=severity)

        out += _chart_wiring(ctx, root, index, build, hr, values, config, at)
        out += _unmanaged_namespaces(index, config, text, at)
        out += _excluded(index, config, at)
        out += _unselected_queues(ctx, index, config, text, at)
    return out


def _port(address) -> int | None:
    """The port of a Go listen address (":8081", "0.0.0.0:8081", "[::]:8081")."""
    port = str(address or "").rpartition(":")[2]
    return int(port) if port.isdigit() else None


def _chart_wiring(ctx, root: Path, index: ClusterIndex, build, hr: dict, values: dict, config: dict, at) -> list[Finding]:
    out = []
    listen = as_map(config.get("webhook")).get("port")
    targets = [as_map(p).get("targetPort") for p in as_list(as_map(values.get("webhookService")).get("ports"))] or [CHART_WEBHOOK_TARGET_PORT]
    sent = {CHART_CONTAINER_PORTS.get(t, t) if isinstance(t, str) else t for t in targets}
    if listen not in sent:
        out.append(at(["webhook", "port"], "kueue-chart-wiring",
                      f"has the webhook server listen on port {listen}, but the chart's webhook Service sends the apiserver's calls to "
                      f"port {', '.join(map(str, sorted(sent, key=str)))} (values webhookService.ports targetPort), {UNREACHABLE}",
                      f"set webhook.port: {CHART_WEBHOOK_TARGET_PORT} (or leave it out), or give webhookService.ports the same targetPort"))
    probe = _port(as_map(config.get("health")).get("healthProbeBindAddress"))
    if probe != CHART_PROBE_PORT:
        out.append(at(["health", "healthProbeBindAddress"], "kueue-chart-wiring",
                      f"serves /healthz and /readyz on port {probe}, but the chart's liveness and readiness probes ask port "
                      f"{CHART_PROBE_PORT}: the kubelet restarts the manager forever (CrashLoopBackOff), {UNREACHABLE}",
                      f"set health.healthProbeBindAddress: :{CHART_PROBE_PORT} (or leave it out)"))
    if as_map(config.get("internalCertManagement")).get("enable") is False and values.get("enableCertManager") is not True:
        out.append(at(["internalCertManagement", "enable"], "kueue-chart-wiring",
                      "turns Kueue's internal certificate management off while values.enableCertManager is not true: nothing issues "
                      f"the webhook server's certificate, {UNREACHABLE}",
                      "leave internalCertManagement out (the chart enables it), or set values.enableCertManager: true with cert-manager installed"))
    if values.get("enableCertManager") is True and not _has_cert_manager(index):
        out.append(finding_at(ctx, root, hr, build, ["spec", "values", "enableCertManager"], "kueue-chart-wiring",
                              "values.enableCertManager is true, but the cluster's layers install no cert-manager (no cert-manager.io "
                              "CustomResourceDefinition, no HelmRelease of the cert-manager chart): the chart's Certificate and Issuer "
                              "fail to apply and the release does not install, unless cert-manager comes from outside this repository",
                              "install cert-manager in the infrastructure layer (and dependsOn it), or drop enableCertManager",
                              cluster=index.cluster.name, severity="warning"))
    return out


def _has_cert_manager(index: ClusterIndex) -> bool:
    return (any(str(as_map(crd.get("spec")).get("group")) == "cert-manager.io" for _, crd in index.of_kind("CustomResourceDefinition"))
            or any(index.chart_of(hr) == "cert-manager" for _, hr in index.of_kind("HelmRelease")))


def _unmanaged_namespaces(index: ClusterIndex, config: dict, written: str, at) -> list[Finding]:
    if config.get("manageJobsWithoutQueueName") is not True:
        return []
    frameworks = {str(f) for f in as_list(as_map(config.get("integrations")).get("frameworks"))}
    pods, jobs = bool(frameworks & set(POD_FRAMEWORKS)), "batch/job" in frameworks
    runs: dict[str, list[str]] = {}  # namespace -> what runs there without a queue
    if pods:
        runs.setdefault("flux-system", []).append("the Flux controllers")
        for _, hr in index.of_kind("HelmRelease"):
            spec, meta = as_map(hr.get("spec")), as_map(hr.get("metadata"))
            runs.setdefault(str(spec.get("targetNamespace") or meta.get("namespace")), []).append(
                f"the {index.chart_of(hr) or meta.get('name')} chart's pods")
    for _, o in index.objects:
        meta = as_map(o.get("metadata"))
        if QUEUE_LABEL in as_map(meta.get("labels")) or not (pods and o.get("kind") in POD_OWNERS or jobs and o.get("kind") in JOB_KINDS):
            continue
        runs.setdefault(str(meta.get("namespace") or "default"), []).append(f"{o.get('kind')}/{meta.get('name')}")
    defaulted = {name_key(as_map(lq.get("metadata")).get("namespace")) for _, lq in index.of_kind("LocalQueue")
                 if name_key(as_map(lq.get("metadata")).get("name")) == "default"}  # LocalQueueDefaulting gives them a queue
    selector = config.get("managedJobsNamespaceSelector")
    held = {ns: what for ns, what in runs.items() if ns not in defaulted
            and matching.selector_matches(selector, index.namespaces.get(ns) or {"kubernetes.io/metadata.name": ns})[0]}
    if not held:
        return []
    listed = "; ".join(f"{ns}: {', '.join(what[:3])}{' and more' if len(what) > 3 else ''}" for ns, what in sorted(held.items()))
    default = "" if "managedJobsNamespaceSelector" in as_map(_parsed(written)) else " (by default every namespace but kube-system and Kueue's)"
    return [at(["manageJobsWithoutQueueName"], "kueue-manage-without-queue-name",
               f"sets manageJobsWithoutQueueName, and managedJobsNamespaceSelector{default} selects namespaces whose pods and Jobs have no queue "
               f"({listed}): Kueue gates each such pod and suspends each such Job, and no queue ever admits them, so these stop "
               "running once their pods are replaced",
               "leave manageJobsWithoutQueueName out, or set managedJobsNamespaceSelector to select only the teams' namespaces "
               "(e.g. matchLabels {kueue-managed: \"true\"})")]


def _unselected_queues(ctx, index: ClusterIndex, config: dict, written: str, at) -> list[Finding]:
    """kueue-namespace-unmanaged: with ManagedJobsNamespaceSelectorAlwaysRespected (Beta, on by default), Kueue's job
    reconciler returns before doing anything for a job in a namespace managedJobsNamespaceSelector does not select
    (jobframework/reconciler.go ReconcileGenericJob, "Namespace not opted in"), while its webhook still creates every
    queued RayJob suspended (jobframework/defaults.go): the jobs of a LocalQueue there never get a Workload. One finding
    per namespace (its LocalQueues and the layers' queued Ray objects there named in the context)."""
    if not kueue_manager.feature_enabled(kueue_manager.manager_of(index), "ManagedJobsNamespaceSelectorAlwaysRespected"):
        return []
    selector = config.get("managedJobsNamespaceSelector")
    queued: dict[str, list[str]] = {}  # namespace -> its LocalQueues and queued Ray objects
    for _, o in [*index.of_kind("LocalQueue"), *((b, o) for b, o in index.objects if str(o.get("apiVersion", "")).startswith("ray.io/")
                                                  and QUEUE_LABEL in as_map(as_map(o.get("metadata")).get("labels")))]:
        meta = as_map(o.get("metadata"))
        queued.setdefault(str(meta.get("namespace") or "default"), []).append(f"{o.get('kind')} {meta.get('name')}")
    out = []
    for ns, what in sorted(queued.items()):
        labels = index.namespaces.get(ns) or {"kubernetes.io/metadata.name": ns}
        if selector is None or matching.selector_matches(selector, labels)[0]:
            continue  # (null: Kueue skips the check; an invalid selector is kueue-config)
        default = "" if "managedJobsNamespaceSelector" in as_map(_parsed(written)) else " (Kueue's default)"
        wanted = as_map(as_map(selector).get("matchLabels"))
        entry = index.named.get(("Namespace", None, ns))
        place = f" ({ctx.finding(entry[1], entry[0], '', '', '').file})" if entry else ""
        found = at(["managedJobsNamespaceSelector"], "kueue-namespace-unmanaged",
                   f"has a managedJobsNamespaceSelector{default} that does not select namespace {ns} (labels "
                   f"{dict(sorted(labels.items()))}), where the samples and queued Ray objects of its LocalQueues run: with "
                   "ManagedJobsNamespaceSelectorAlwaysRespected (on by default) Kueue's job reconciler ignores them, while its "
                   "webhook creates each queued RayJob suspended, so they never get a Workload and stay suspended forever",
                   (f"label Namespace {ns} {', '.join(f'{k}={v}' for k, v in wanted.items())}{place}, or widen the selector"
                    if wanted and not as_map(selector).get("matchExpressions") else
                    f"make managedJobsNamespaceSelector select namespace {ns} (or label Namespace {ns}{place} so that it does)"))
        out.append(replace(found, context=f"{found.context} ({', '.join(what)})"))
    return out


def _parsed(text: str):
    try:
        return parse_yaml(text)
    except yaml.YAMLError:
        return None  # the manager loaded it, so this does not happen


def _excluded(index: ClusterIndex, config: dict, at) -> list[Finding]:
    """kueue-excluded-resource at each value that drops a resource a ClusterQueue has quota for: an excludeResourcePrefixes
    entry (Kueue matches by prefix, workload.go dropExcludedResources), or a transformation with strategy Replace and no
    outputs ("causes the Input resource to be ignored by Kueue", configuration_types.go). One finding per value: the
    ClusterQueues (which differ by cluster) are in its context, so keep_once joins the clusters' findings."""
    resources = as_map(config.get("resources"))
    prefixes = [str(p) for p in as_list(resources.get("excludeResourcePrefixes"))]
    causes = [(["resources", "excludeResourcePrefixes", i], f"excludes {p} from every workload's requests", (lambda r, p=p: r.startswith(p))) for i, p in enumerate(prefixes)]
    causes += [(["resources", "transformations", i, "input"], f"has transformations[{i}] replace {t.get('input')} by no output "
                "(strategy Replace without outputs), so Kueue ignores it in every workload's requests", (lambda r, t=t: r == str(t.get("input"))))
               for i, t in enumerate(as_maps(resources.get("transformations")))
               if t.get("strategy") == "Replace" and not as_map(t.get("outputs"))]
    out = []
    for path, what, drops in causes:
        dropped: dict[str, set[str]] = {}  # resource -> the ClusterQueues with quota for it
        for _, cq in index.of_kind("ClusterQueue"):
            for group in as_maps(as_map(cq.get("spec")).get("resourceGroups")):
                for resource in as_list(group.get("coveredResources")):
                    if drops(str(resource)):
                        dropped.setdefault(str(resource), set()).add(str(as_map(cq.get("metadata")).get("name")))
        if not dropped:
            continue
        found = at(path, "kueue-excluded-resource",
                   f"{what}, but ClusterQueues have quota for {', '.join(sorted(dropped))}: that quota limits nothing, so Kueue "
                   "admits jobs beyond what the nodes have and their pods pend",
                   "remove the prefix from resources.excludeResourcePrefixes, or the resource from the ClusterQueues' coveredResources"
                   if path[1] == "excludeResourcePrefixes" else
                   "give the transformation outputs, use strategy Retain, or drop the quota on the resource from the ClusterQueues")
        listed = "; ".join(f"{r}: ClusterQueue {', '.join(sorted(cqs))}" for r, cqs in sorted(dropped.items()))
        out.append(replace(found, context=f"{found.context} ({listed})" if found.context else listed))
    return out
