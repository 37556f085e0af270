"""kueue-webhook-scope: the webhooks the Kueue chart renders for the HelmRelease's values (harness.gate.helm_values
renders it with Helm's engine) against the namespaces the cluster's own controllers run in.

The chart (charts/kueue/templates/webhook/manifests.yaml of the pinned Kueue) writes `failurePolicy: Fail` on the
pod, deployment and statefulset webhooks exactly when the manager configuration lists that integration in
integrations.frameworks (`Ignore` otherwise), and gives them, without managedJobsNamespaceSelector, a namespaceSelector
that leaves out only kube-system and the release's namespace. The other job webhooks (mjob.kb.io for batch Jobs ...)
are Fail whatever the integrations, with no namespaceSelector unless managedJobsNamespaceSelector is set. The chart runs
one replica. While Kueue is down or not yet serving its certificate (first install, a node drain, a crash-looping
manager) the apiserver refuses every object such a webhook intercepts: no pod of flux-system (the Flux controllers that
would roll a fix out), of the operators the HelmReleases install, or of Kueue itself where the selector takes in its
namespace, can be created. Nothing in those namespaces is queued, so the webhook only couples them to Kueue.

The finding (a warning) is at the integrations.frameworks entry that makes the webhooks Fail there, found by rendering
the chart again without that entry (one finding per entry, naming its webhooks and the namespaces); a webhook that is
Fail whatever the frameworks say is at managedJobsNamespaceSelector (or integrations, where none is written). With
manageJobsWithoutQueueName the integrations' webhooks gate those pods for good, which kueue-manage-without-queue-name
(harness.gate.kueue_wiring) reports instead.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from harness.gate import matching
from harness.gate.cluster_index import ClusterIndex, NAMESPACE_NAME_LABEL, finding_at
from harness.gate.findings import Finding
from harness.gate.kueue_manager import CONFIG_PATH, loaded, locate, manager_text
from harness.gate.sources import as_list, as_map, as_maps, parse_yaml

RULES = {
    "kueue-webhook-scope": "(warning) no webhook with failurePolicy Fail that the Kueue chart renders for the manager configuration "
                           "(the pod, deployment and statefulset integrations', the job webhooks') intercepts the pods or workloads of "
                           "flux-system, of the namespaces the HelmReleases install into or of Kueue's own: while Kueue is down nothing "
                           "there can be created, the Flux controllers that would roll out a fix included",
}
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# The resources (as a webhook rule names them) each kind of pod owner is; every controller runs pods.
RESOURCES = {"Pod": "pods", "Deployment": "deployments", "ReplicaSet": "replicasets", "StatefulSet": "statefulsets",
             "DaemonSet": "daemonsets", "Job": "jobs", "CronJob": "cronjobs"}


def scope_findings(ctx, root: Path, releases: list, answers: dict, render) -> list[Finding]:
    """kueue-webhook-scope for the Kueue `releases` ((ClusterIndex, build, HelmRelease, chart, request key) as helm_values
    renders them; `answers`: the rendered charts by key; `render`: renders a request dict, as helm_values does)."""
    out = []
    for index, build, hr, pin, key in releases:
        answer = answers[key]
        text = manager_text(hr)
        if pin != "kueue" or answer.get("error") or answer.get("valuesError") or (text is not None and loaded(text) is None):
            continue  # helm-values or kueue-config reports it (a manager that refuses its configuration never serves)
        running = _controller_namespaces(index, hr, answer)
        hits = _intercepted(answer, index, running)
        if not hits:
            continue
        request = json.loads(key)
        config = _config(as_map(as_map(request.get("values")).get("managerConfig")).get("controllerManagerConfigYaml"))
        causes = _causes(request, config, hits, index, running, render)
        located, block = locate(ctx, root, index, build, hr, "kueue-webhook-scope")
        for cause, found in causes.items():
            if isinstance(cause, int) and config.get("manageJobsWithoutQueueName") is True:
                continue  # Kueue then gates those pods for good: kueue-manage-without-queue-name, the one finding
            webhooks = sorted({w for w, _ in found})
            where = "; ".join(f"{ns} ({', '.join(running[ns][0])})" for ns in sorted({ns for _, ns in found}))
            if isinstance(cause, int):
                name = _frameworks(config)[cause]
                message = (f"values.managerConfig.controllerManagerConfigYaml lists integration {name}, so the chart renders "
                           f"the webhooks {', '.join(webhooks)} with failurePolicy Fail over {where}")
                line, hint = block.line(["integrations", "frameworks", cause]), (
                    f"drop `- {name}` from integrations.frameworks if nothing queues it, or set managedJobsNamespaceSelector to "
                    "select only the workload namespaces (e.g. matchLabels {kueue-managed: \"true\"} on them)")
            else:
                said = ("values.managerConfig.controllerManagerConfigYaml is not written, so the chart's own manager configuration "
                        "(its integrations.frameworks, no managedJobsNamespaceSelector) is in effect, and"
                        if text is None else "values.managerConfig.controllerManagerConfigYaml " + (
                            "has a managedJobsNamespaceSelector that takes these namespaces in, and" if cause == "selector" else
                            "has no managedJobsNamespaceSelector, so"))
                message = f"{said} the chart renders the webhooks {', '.join(webhooks)} with failurePolicy Fail over {where}"
                line = block.line(["managedJobsNamespaceSelector"] if cause == "selector" else ["integrations"]) if text is not None else None
                hint = ("set managedJobsNamespaceSelector to select only the workload namespaces (e.g. matchLabels "
                        "{kueue-managed: \"true\"} on them)" + ("" if text is not None else ", in a managerConfig whose "
                        "integrations.frameworks leave out pod, deployment and statefulset unless something queues them"))
            message += (": while Kueue is down or not yet serving its certificate, the apiserver refuses every "
                        "object they intercept there, so these controllers' pods (and workloads) cannot be created, nor can Flux roll out a fix")
            if line is None:
                out.append(finding_at(ctx, root, hr, build, ["spec", "values"] if text is None else CONFIG_PATH, "kueue-webhook-scope",
                                      message, hint, cluster=index.cluster.name, severity="warning"))
            else:
                out.append(Finding(located.file, line, located.resource, "kueue-webhook-scope", message, hint, located.context,
                                   severity="warning"))
    return out


def _controller_namespaces(index: ClusterIndex, kueue: dict, answer: dict) -> dict[str, tuple[list[str], set[str]]]:
    """namespace -> (what runs there, the resources its controllers create): flux-system (the Flux controllers), the
    namespace of every HelmRelease (its chart's operator; the Kueue chart's rendered objects), with the pod owners the
    layers apply there."""
    from harness.gate.helm_values import release_of  # imports this module

    out: dict[str, tuple[list[str], set[str]]] = {"flux-system": (["the Flux controllers"], {"pods", "deployments"})}
    for _, hr in index.of_kind("HelmRelease"):
        what = f"the {index.chart_of(hr) or as_map(hr.get('metadata')).get('name')} chart's pods"
        entry = out.setdefault(release_of(hr)[1], ([], {"pods", "deployments"}))
        if what not in entry[0]:
            entry[0].append(what)
    namespace = release_of(kueue)[1]
    for obj in (item.get("object") or {} for item in answer.get("objects") or []):
        if obj.get("kind") in RESOURCES:
            out[namespace][1].add(RESOURCES[obj["kind"]])
    for _, obj in index.objects:
        ns = str(as_map(obj.get("metadata")).get("namespace") or "default")
        if ns in out and obj.get("kind") in RESOURCES:
            out[ns][1].add(RESOURCES[obj["kind"]])
    return out


def _intercepted(answer: dict, index: ClusterIndex, running: dict) -> set[tuple[str, str]]:
    """(webhook, namespace) of each rendered webhook with failurePolicy Fail (v1's default) that intercepts what the
    controllers of a namespace of `running` create there."""
    out = set()
    for obj in (item.get("object") or {} for item in answer.get("objects") or []):
        if obj.get("kind") not in WEBHOOK_KINDS:
            continue
        for hook in as_maps(obj.get("webhooks")):
            if hook.get("failurePolicy", "Fail") != "Fail" or as_map(hook.get("objectSelector")):
                continue  # (an objectSelector narrows it to objects the gate cannot tell: not judged)
            resources = {str(r) for rule in as_maps(hook.get("rules")) for r in as_list(rule.get("resources"))}
            selector = as_map(hook.get("namespaceSelector"))  # none: every namespace
            for ns, (_, created) in running.items():
                if (resources & created or "*" in resources) and matching.selector_matches(
                        selector, index.namespaces.get(ns) or {NAMESPACE_NAME_LABEL: ns})[0]:
                    out.add((str(hook.get("name")), ns))
    return out


def _config(text) -> dict:
    """The manager configuration as written ({} when there is none, or it does not parse: kueue-config reports that)."""
    try:
        return as_map(parse_yaml(text)) if isinstance(text, str) else {}
    except yaml.YAMLError:
        return {}


def _frameworks(config: dict) -> list:
    return as_list(as_map(config.get("integrations")).get("frameworks"))


def _causes(request: dict, config: dict, hits: set, index: ClusterIndex, running: dict, render) -> dict:
    """The hits grouped by what writes them: the index of the integrations.frameworks entry without which the chart
    renders the webhook no longer Fail there (rendered again to see), else "selector" (a managedJobsNamespaceSelector
    that takes the namespace in) or "unscoped" (none written)."""
    out: dict = {}
    left = set(hits)
    for i, _ in enumerate(_frameworks(config)):
        probe = copy.deepcopy(config)
        del probe["integrations"]["frameworks"][i]
        without = copy.deepcopy(request)
        without["values"]["managerConfig"]["controllerManagerConfigYaml"] = yaml.safe_dump(probe, sort_keys=False)
        answer = _rendered(render, without)
        if answer.get("error") or answer.get("valuesError"):
            continue
        gone = left - _intercepted(answer, index, running)
        if gone:
            out[i] = gone
            left -= gone
    if left:
        out["selector" if "managedJobsNamespaceSelector" in config else "unscoped"] = left
    return out


_RENDERS: dict[str, dict] = {}


def _rendered(render, request: dict) -> dict:
    """render(request), once per request (every cluster that shares the HelmRelease asks the same)."""
    key = json.dumps(request, sort_keys=True, default=str)
    if key not in _RENDERS:
        _RENDERS[key] = render(request)
    return _RENDERS[key]
