"""The Kueue and KubeRay APIs a cluster uses must be served by what the cluster installs.

Kueue's and KubeRay's CRDs reach an AKS cluster through their HelmReleases (the MCR charts of
versions.yaml) or as CRDs in a layer. The KubeRay chart keeps its CRDs in Helm's crds/ directory,
which helm-controller leaves out under `install.crds: Skip`; the Kueue chart renders its CRDs as
templates (charts/kueue/templates/crd), which every install applies. A cluster whose set applies
kueue.x-k8s.io or ray.io objects, or whose samples submit RayJobs, without that is broken on AKS:
kustomize-controller's dry-run fails with "no matches for kind" and the layer applies nothing,
and every `kubectl create` of a sample is refused. Reported once per cluster and API group, at
the first object of the group (or the first sample entry, when only samples use it).
A layer that applies such objects beside the HelmRelease that installs their CRDs never applies on a new cluster
(fluxcd/pkg/ssa ApplyAllStaged puts both in its last stage, whose dry-run of every object comes before any apply):
api-not-served at the first such object, unless the layer applies the CRDs themselves or an earlier layer installs them.

Only where the repository installs the component on some cluster: a fork that installs Kueue or
KubeRay outside Flux (Terraform, the platform team) installs it on none, and gets no finding.

kuberay-watch-namespace: the KubeRay chart's operator reconciles only the namespaces its values name
(`watchNamespace`, else the release's own namespace under `singleNamespaceInstall`, else all), as its
Deployment template turns them into --watch-namespace. A RayJob elsewhere is admitted by Kueue and then
never run: no RayCluster is created, and the job holds its quota.

helm-crds-upgrade (warning): Helm installs a chart's crds/ directory once and never upgrades it; helm-controller
replaces those CRDs on a chart upgrade only under upgrade.crds: CreateReplace. Without it, bumping KubeRay
(versions.yaml and the chart tag) leaves the cluster on the CRDs it was first installed with.

flux-layer-order (warning): a Flux Kustomization applying Kueue or KubeRay objects comes after (dependsOn) the one that
installs them, and that one waits for the HelmRelease (wait: true or a health check), as the README's layers do; a
HelmRelease with install/upgrade.disableWait is Ready before its Deployments run, so then only a health check on a
Deployment of its namespace waits (the finding is at the disableWait line).
"""
from __future__ import annotations

from pathlib import Path

from harness.gate.cluster_index import ClusterIndex, finding_at, layer_key, no_wait, waits_for
from harness.gate.findings import Finding
from harness.gate.render import ClusterRender
from harness.gate.sources import as_list, as_map

RULES = {
    "api-not-served": "every kueue.x-k8s.io and ray.io object a cluster applies, and every sample it submits, has its CRD on the "
                      "cluster: a HelmRelease of the Kueue / KubeRay chart (KubeRay's without install.crds: Skip), or the CRD itself; "
                      "not applied by the layer whose HelmRelease installs their CRDs (its dry-run fails on a new cluster)",
    "kuberay-watch-namespace": "the KubeRay operator's HelmRelease watches the namespace of every RayJob, RayCluster and RayService the "
                               "cluster applies or submits (values watchNamespace / singleNamespaceInstall)",
    "helm-crds-upgrade": "a HelmRelease of a chart that keeps its CRDs in crds/ (KubeRay's) sets upgrade.crds: CreateReplace, so a chart "
                         "upgrade upgrades the CRDs too (warning)",
    "flux-layer-order": "a Flux Kustomization that applies Kueue or KubeRay objects dependsOn (directly or through others) the one that "
                        "installs them, and that one waits for the HelmRelease to be Ready (wait: true or a health check) (warning)",
}
# API group -> (the versions.yaml component whose chart installs its CRDs, whether they are in the
# chart's crds/ directory, which install.crds: Skip leaves out).
PROVIDERS = {"kueue.x-k8s.io": ("kueue", False), "ray.io": ("kuberay", True)}


def _group(obj: dict) -> str:
    api = str(obj.get("apiVersion", ""))
    return api.split("/", 1)[0] if "/" in api else ""


def _crd_served(index: ClusterIndex, group: str) -> bool:
    return any(str(as_map(crd.get("spec")).get("group")) == group for _, crd in index.of_kind("CustomResourceDefinition"))


def _installs_crds(hr: dict, crds_dir: bool) -> bool:
    return not crds_dir or as_map(as_map(hr.get("spec")).get("install")).get("crds") != "Skip"


def _chart(pinned: dict | None, component: str) -> str | None:
    return as_map(as_map(pinned).get(component)).get("chart")


def installed_somewhere(root: Path, clusters: list[ClusterRender], pinned: dict | None) -> set[str]:
    """The API groups of PROVIDERS that the repository installs on at least one cluster (its chart's
    HelmRelease or a CRD of the group); `pinned`: versions.yaml."""
    found = set()
    for cluster in clusters:
        index = ClusterIndex.build(root, cluster)
        for group, (component, _) in PROVIDERS.items():
            if _crd_served(index, group) or any(index.chart_of(hr) == _chart(pinned, component) for _, hr in index.of_kind("HelmRelease")):
                found.add(group)
    return found


def served_api_rules(ctx, root: Path, cluster: ClusterRender, samples: list[tuple[str, dict, int | None]], pinned: dict | None,
                     installed: set[str]) -> list[Finding]:
    """api-not-served and kuberay-watch-namespace for one cluster. `samples`: what sample_rules.sample_rules rendered
    (sample, RayJob, samples.yaml line); `pinned`: versions.yaml; `installed`: installed_somewhere() of the repository's clusters."""
    index = ClusterIndex.build(root, cluster)
    if not index.complete:  # a layer did not render: what it installs is unknown
        return []
    out = _watch_rules(ctx, root, index, samples, pinned) + _upgrade_rules(ctx, root, index, pinned) + _order_rules(ctx, root, index, pinned)
    for group, (component, crds_dir) in PROVIDERS.items():
        if group not in installed:
            continue  # installed outside the repository, if at all: nothing to compare with
        chart = _chart(pinned, component)
        users = [(b, o) for b, o in index.objects if _group(o) == group]
        submitted = [(sample, line) for sample, job, line in samples if _group(job) == group]
        releases = [(b, hr) for b, hr in index.of_kind("HelmRelease") if index.chart_of(hr) == chart]
        if not (users or submitted) or _crd_served(index, group) or any(_installs_crds(hr, crds_dir) for _, hr in releases):
            continue
        what = [f"{o.get('kind')}/{as_map(o.get('metadata')).get('name')}" for _, o in users[:3]] + [f"sample {s}" for s, _ in submitted[:3]]
        more = len(users) + len(submitted) - len(what)
        effects = (["kustomize-controller refuses the layers that apply them (no matches for kind)"] if users else []) + \
                  (["the samples cannot be created"] if submitted else [])
        uses = f"cluster {cluster.name} uses {group} ({', '.join(what)}{f' and {more} more' if more > 0 else ''})"
        if releases:  # the chart is installed without its CRDs: the cause is written there
            build, hr = releases[0]
            out.append(finding_at(ctx, root, hr, build, ["spec", "install", "crds"], "api-not-served",
                                  f"install.crds is Skip, so the {chart} chart's CRDs are not installed, but {uses}: {' and '.join(effects)}",
                                  "set spec.install.crds (and spec.upgrade.crds) to CreateReplace", cluster=cluster.name))
            continue
        message = (f"{uses}, but nothing it installs serves that API (no HelmRelease of chart {chart or component}, no {group} "
                   f"CustomResourceDefinition): {' and '.join(effects)}")
        hint = (f"add the {component} HelmRelease to the cluster's infrastructure layer, as the repository's other clusters have "
                "it, or stop applying and submitting these objects on this cluster")
        if users:
            build, obj = users[0]
            out.append(finding_at(ctx, root, obj, build, ["apiVersion"], "api-not-served", message, hint, cluster=cluster.name))
        else:
            out.append(Finding(ctx.config.samples_file(cluster.name), submitted[0][1], f"sample/{submitted[0][0]}", "api-not-served",
                               message, hint, f"cluster {cluster.name}"))
    return out


def _upgrade_rules(ctx, root: Path, index: ClusterIndex, pinned: dict | None) -> list[Finding]:
    """helm-crds-upgrade: Helm installs a chart's crds/ once and never upgrades them; helm-controller replaces them on
    upgrade only under upgrade.crds: CreateReplace (Skip is its default, Create adds new CRDs only)."""
    out = []
    for component, crds_dir in PROVIDERS.values():
        chart = _chart(pinned, component)
        for build, hr in index.of_kind("HelmRelease") if crds_dir else []:
            upgrade = as_map(as_map(hr.get("spec")).get("upgrade"))
            if index.chart_of(hr) != chart or upgrade.get("crds") == "CreateReplace":
                continue
            written = ["spec", "upgrade", "crds"] if "crds" in upgrade else ["spec", "upgrade"] if upgrade else ["spec"]
            out.append(finding_at(ctx, root, hr, build, written, "helm-crds-upgrade",
                                  f"upgrade.crds is {upgrade.get('crds') or 'not set (Skip)'}: the {chart} chart keeps its CRDs in crds/, which "
                                  "Helm installs once and helm-controller replaces on upgrade only with CreateReplace, so a version bump "
                                  "(versions.yaml, the chart tag) runs the new operator on the old CRDs, whose schemas prune the fields it adds",
                                  "set spec.upgrade.crds: CreateReplace", cluster=index.cluster.name, severity="warning"))
    return out


def _order_rules(ctx, root: Path, index: ClusterIndex, pinned: dict | None) -> list[Finding]:
    """flux-layer-order: on a new cluster, kustomize-controller reconciles every Kustomization at once but for dependsOn,
    and a Kustomization is Ready once applied unless it waits. One that applies Kueue or KubeRay objects before the layer
    installing them is Ready has its dry-run fail (no matches for kind, or Kueue's webhook without an endpoint) and
    stays not Ready until a retry after the install: the README's layers are in order so that this never happens."""
    layers = index.layers()
    owners = {id(o): b for b, o in index.objects}
    before = index.layers_before
    out = []
    for group, (component, _) in PROVIDERS.items():
        chart = _chart(pinned, component)
        providers = [(layer_key(b.flux_kustomization), o) for b, o in index.objects if b.flux_kustomization is not None and (
            (o.get("kind") == "HelmRelease" and index.chart_of(o) == chart)
            or (o.get("kind") == "CustomResourceDefinition" and as_map(o.get("spec")).get("group") == group))]
        for build in index.cluster.flux if providers else []:
            ks = build.flux_kustomization
            used = [o for o in build.objects if _group(o) == group]
            if ks is None or not used:
                continue
            earlier = before(layer_key(ks))
            same = [o for p, o in providers if p == layer_key(ks)]
            if same and not any(o.get("kind") == "CustomResourceDefinition" for o in same) and not any(p in earlier for p, _ in providers):
                out.append(_same_apply(ctx, root, index, build, used, same[0], group, component))
                continue
            if same:
                continue
            if any(p in earlier and waits_for(layers[p], o) for p, o in providers):
                continue
            if any(k not in layers for k in earlier):
                continue  # a dependsOn that names no Kustomization of the cluster: flux-depends-on is the cause (a typo)
            unwaited = next(((p, o) for p, o in providers if p in earlier and waits_for(layers[p], o, disabled=False)), None)
            if unwaited:  # the layer waits for the HelmRelease, but the HelmRelease does not wait for its Deployments
                p, hr = unwaited
                namespace = as_map(hr.get("spec")).get("targetNamespace") or as_map(hr.get("metadata")).get("namespace")
                out.append(finding_at(ctx, root, hr, owners.get(id(hr)), no_wait(hr), "flux-layer-order",
                                      f"HelmRelease {as_map(hr.get('metadata')).get('name')} sets {'.'.join(no_wait(hr)[1:])}, so it "
                                      f"is Ready once Helm has applied {component}'s objects, before its controller and webhook run: "
                                      f"Kustomization {p[1]} is Ready then too, and Kustomization {layer_key(ks)[1]}, which applies "
                                      f"{group} objects after it, has its dry-run fail (the webhook has no endpoint) on a new cluster "
                                      "and on each upgrade until a later retry",
                                      f"remove disableWait (or add a health check on the {component} Deployment in {namespace} to "
                                      f"Kustomization {p[1]})", cluster=index.cluster.name, severity="warning"))
                continue
            installer = next((p for p, _ in providers if p in earlier), None)
            what = ", ".join(f"{o.get('kind')}/{as_map(o.get('metadata')).get('name')}" for o in used[:3]) + (" and more" if len(used) > 3 else "")
            why = (f"dependsOn {installer[1]}, which is Ready as soon as it has applied the {component} HelmRelease (no wait: true, no "
                   "health check on it)" if installer else f"does not dependsOn the Kustomization that installs {component} "
                   f"({', '.join(sorted({p[1] for p, _ in providers}))}), directly or through others")
            # The cause is written where the fix goes: the installing layer that does not wait, else the layer without dependsOn.
            at = layers[installer] if installer else ks
            spec = as_map(at.get("spec"))
            field = ["spec", "wait"] if installer and "wait" in spec else ["spec", "dependsOn"] if not installer and "dependsOn" in spec else ["spec"]
            out.append(finding_at(ctx, root, at, owners.get(id(at)), field, "flux-layer-order",
                                  f"Kustomization {layer_key(ks)[1]} applies {group} objects ({what}) and {why}: on a new cluster it is "
                                  f"applied before {component} serves them, its dry-run fails (no matches for kind, or the webhook has no "
                                  "endpoint) and it stays not Ready until a later retry",
                                  "set wait: true on this Kustomization (or a health check on the HelmRelease)" if installer else
                                  f"add dependsOn the layer that installs {component}, and let that layer wait: true",
                                  cluster=index.cluster.name, severity="warning"))
    return out


def _same_apply(ctx, root: Path, index: ClusterIndex, build, used: list[dict], hr: dict, group: str, component: str) -> Finding:
    """api-not-served for objects applied by the layer whose HelmRelease installs their CRDs: fluxcd/pkg/ssa ApplyAllStaged
    applies CRDs, Namespaces and class kinds first, then the rest in one ApplyAll, which dry-runs every object before it
    applies any (manager_apply.go). On a new cluster the objects' dry-run fails (no matches for kind), so the HelmRelease
    that would install the CRDs is never applied either: the layer never applies, not even after a retry."""
    layer = layer_key(build.flux_kustomization)[1]
    what = ", ".join(f"{o.get('kind')}/{as_map(o.get('metadata')).get('name')}" for o in used[:3]) + (" and more" if len(used) > 3 else "")
    return finding_at(ctx, root, used[0], build, ["apiVersion"], "api-not-served",
                      f"Kustomization {layer} applies {group} objects ({what}) in the same apply as HelmRelease "
                      f"{as_map(hr.get('metadata')).get('name')}, which installs their CRDs: kustomize-controller dry-runs every "
                      "object of the apply before it applies any, so on a new cluster the dry-run fails (no matches for kind), the "
                      f"HelmRelease is never applied and {component} is never installed",
                      f"move these objects to a Kustomization that dependsOn {layer} (as the queues layer does), and let {layer} "
                      "wait: true (or a health check on the HelmRelease)", cluster=index.cluster.name)


def _watched(hr: dict) -> tuple[set[str] | None, list]:
    """The namespaces the KubeRay chart's operator watches (None: all), and the values field that says so; unknown
    (None, []) when its values come from elsewhere too (valuesFrom, a configuration file)."""
    spec = as_map(hr.get("spec"))
    values = as_map(spec.get("values"))
    if spec.get("valuesFrom") or as_map(values.get("configuration")).get("enabled"):
        return None, []
    listed = values.get("watchNamespace")
    if isinstance(listed, str | list) and listed:  # the chart joins it with "," (sprig's join takes a string as one item)
        return {str(n) for n in ([listed] if isinstance(listed, str) else listed)}, ["spec", "values", "watchNamespace"]
    if values.get("singleNamespaceInstall") is True:
        return {str(spec.get("targetNamespace") or as_map(hr.get("metadata")).get("namespace"))}, ["spec", "values", "singleNamespaceInstall"]
    return None, []


def _watch_rules(ctx, root: Path, index: ClusterIndex, samples: list[tuple[str, dict, int | None]], pinned: dict | None) -> list[Finding]:
    """kuberay-watch-namespace for one cluster (`samples`, `pinned`: as served_api_rules)."""
    cluster = index.cluster
    chart = _chart(pinned, "kuberay")
    jobs = [(f"{o.get('kind')}/{as_map(o.get('metadata')).get('name')}", as_map(o.get("metadata")).get("namespace", "default"))
            for _, o in index.objects if _group(o) == "ray.io" and o.get("kind") in ("RayJob", "RayCluster", "RayService")]
    jobs += [(f"sample {sample}", as_map(job.get("metadata")).get("namespace", "default")) for sample, job, _ in samples if _group(job) == "ray.io"]
    out = []
    for build, hr in index.of_kind("HelmRelease") if jobs else []:
        watched, field = _watched(hr) if index.chart_of(hr) == chart else (None, [])
        unwatched = [(what, ns) for what, ns in jobs if watched is not None and ns not in watched]
        if unwatched:
            namespaces = sorted({str(ns) for _, ns in unwatched})
            out.append(finding_at(ctx, root, hr, build, field, "kuberay-watch-namespace",
                                  f"the KubeRay operator watches only namespace(s) {', '.join(sorted(watched))}, not {', '.join(namespaces)} of "
                                  f"{', '.join(what for what, _ in unwatched[:4])}{' and more' if len(unwatched) > 4 else ''}: Kueue admits "
                                  "such a RayJob and KubeRay never creates its RayCluster, so it holds its quota without running",
                                  f"add {', '.join(namespaces)} to values.watchNamespace (or drop it to watch every namespace)",
                                  cluster=cluster.name))
    return out
