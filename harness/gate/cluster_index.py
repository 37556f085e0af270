"""What exists on one cluster once Flux has applied its rendered set (ClusterIndex), shared by the rules that judge
references, queues and samples against it, and where a finding about a value of one of its objects points (finding_at)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
import re
from pathlib import Path

from harness.gate.findings import Finding
from harness.gate.origin import dotted, line_at
from harness.gate.render import Build, ClusterRender
from harness.gate.sources import as_list, as_map, as_maps, name_key

ALWAYS_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "flux-system")
BUILTIN_PRIORITY_CLASSES = {"system-cluster-critical", "system-node-critical"}
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # the apiserver adds it to every Namespace
EXACT_VERSION = re.compile(r"v?[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")  # one chart version, not a range
# Kinds the apiserver serves cluster-scoped (Kubernetes 1.35, Kueue 0.17); a CRD in the set adds its own.
CLUSTER_SCOPED = {
    "Namespace", "Node", "PersistentVolume", "StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass",
    "ClusterRole", "ClusterRoleBinding", "PriorityClass", "CustomResourceDefinition", "APIService", "RuntimeClass", "IngressClass",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "CertificateSigningRequest", "ClusterTrustBundle", "FlowSchema",
    "PriorityLevelConfiguration", "DeviceClass", "ResourceSlice", "IPAddress", "ServiceCIDR", "StorageVersionMigration",
    "ClusterQueue", "ResourceFlavor", "Cohort", "WorkloadPriorityClass", "AdmissionCheck", "Topology", "MultiKueueCluster",
    "MultiKueueConfig", "ProvisioningRequestConfig",
}


def kind_key(obj: dict) -> tuple[str, str | None, str]:
    meta = as_map(obj.get("metadata"))
    ns = meta.get("namespace")
    return name_key(obj.get("kind")), (name_key(ns) if ns is not None else None), name_key(meta.get("name"))


@dataclass
class ClusterIndex:
    """What exists on one cluster once Flux has applied its set, and where each object came from."""
    cluster: ClusterRender
    objects: list[tuple[Build, dict]] = field(default_factory=list)
    named: dict[tuple, tuple[Build, dict]] = field(default_factory=dict)  # (kind, namespace, name) -> first (build, object)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels the Namespace carries
    cluster_scoped: set[str] = field(default_factory=set)
    external: dict[tuple, dict] = field(default_factory=dict)  # (kind, namespace, name) -> object created outside the repository
    complete: bool = True  # every layer rendered; else what a failed one applies is unknown

    @classmethod
    def build(cls, root: Path, cluster: ClusterRender) -> "ClusterIndex":
        index = cls(cluster, cluster.applied(), cluster_scoped=set(CLUSTER_SCOPED),
                    complete=cluster.complete)
        for ns in ALWAYS_NAMESPACES:
            index.namespaces[ns] = {NAMESPACE_NAME_LABEL: ns}
        for build, o in index.objects:
            index.named.setdefault(kind_key(o), (build, o))
            kind, meta, spec = o.get("kind"), as_map(o.get("metadata")), as_map(o.get("spec"))
            if kind == "Namespace" and isinstance(meta.get("name"), str):
                labels = {str(k): str(v) for k, v in as_map(meta.get("labels")).items()}
                index.namespaces[meta["name"]] = {**labels, NAMESPACE_NAME_LABEL: meta["name"]}
            elif kind == "HelmRelease" and as_map(spec.get("install")).get("createNamespace") is True:
                target = spec.get("targetNamespace") or meta.get("namespace")
                if isinstance(target, str):
                    index.namespaces.setdefault(target, {NAMESPACE_NAME_LABEL: target})
            elif kind == "CustomResourceDefinition" and spec.get("scope") == "Cluster":
                index.cluster_scoped.add(name_key(as_map(spec.get("names")).get("kind")))
        for source in [*cluster.variables, *cluster.provided]:
            index.external.setdefault(kind_key(source), source)
        return index

    def has(self, kind: str, namespace: str | None, name) -> bool:
        key = (kind, namespace, name_key(name))
        if key in self.named or key in self.external:
            return True
        if kind == "ServiceAccount" and name == "default":
            return namespace in self.namespaces
        return kind == "PriorityClass" and name_key(name) in BUILTIN_PRIORITY_CLASSES

    def keys_of(self, kind: str, namespace: str | None, name) -> set[str] | None:
        """The keys of a ConfigMap (data, binaryData) or Secret (data, stringData) of the cluster; None when it is not known."""
        key = (kind, namespace, name_key(name))
        obj = self.named[key][1] if key in self.named else self.external.get(key)
        if obj is None:
            return None
        fields = ("data", "binaryData") if kind == "ConfigMap" else ("data", "stringData")
        return {str(k) for f in fields for k in as_map(obj.get(f))}

    def of_kind(self, kind: str) -> list[tuple[Build, dict]]:
        return [(b, o) for b, o in self.objects if o.get("kind") == kind]

    def source_of(self, hr: dict) -> tuple[Build, dict] | None:
        """(build, object) of the source a HelmRelease's chart comes from: the object its chartRef names, or its
        spec.chart.spec.sourceRef (a HelmRepository); None when the cluster has none such."""
        spec = as_map(hr.get("spec"))
        ref = as_map(spec.get("chartRef")) or as_map(as_map(as_map(spec.get("chart")).get("spec")).get("sourceRef"))
        ns = as_map(hr.get("metadata")).get("namespace")
        return self.named.get((name_key(ref.get("kind")), name_key(ref.get("namespace", ns)), name_key(ref.get("name")))) if ref else None

    def chart_of(self, hr: dict) -> str | None:
        """The chart a HelmRelease installs: spec.chart.spec.chart, spec.chart of the HelmChart its chartRef names, or
        the last segment of the URL of the source its chartRef names (the HelmRelease's own name when that source has no URL)."""
        spec = as_map(hr.get("spec"))
        chart = as_map(as_map(spec.get("chart")).get("spec")).get("chart")
        if chart:
            return str(chart)
        if not as_map(spec.get("chartRef")):
            return None
        source = self.source_of(hr)
        if source and source[1].get("kind") == "HelmChart" and as_map(source[1].get("spec")).get("chart"):
            return str(as_map(source[1].get("spec"))["chart"])
        url = str(as_map(source[1].get("spec")).get("url", "")) if source else ""
        return url.rstrip("/").rsplit("/", 1)[-1] if url else as_map(hr.get("metadata")).get("name")

    def chart_version_of(self, hr: dict) -> str | None:
        """The chart version a HelmRelease installs, when it names one exactly: spec.chart.spec.version, spec.version of
        the HelmChart its chartRef names, or the tag of the OCIRepository it names (None for a semver range, a digest,
        or no version at all)."""
        spec = as_map(hr.get("spec"))
        chart = as_map(as_map(spec.get("chart")).get("spec"))
        source = None if chart else self.source_of(hr)
        if chart or (source and source[1].get("kind") == "HelmChart"):
            version = (chart or as_map(source[1].get("spec"))).get("version")
            return str(version) if version is not None and EXACT_VERSION.fullmatch(str(version)) else None
        tag = as_map(as_map(source[1].get("spec")).get("ref")) if source else {}
        return str(tag["tag"]) if tag.get("tag") is not None and not tag.get("digest") and not tag.get("semver") else None

    def layers(self) -> dict[tuple[str, str], dict]:
        """The cluster's Flux Kustomizations (the layers its entry applies), by layer_key."""
        return {layer_key(b.flux_kustomization): b.flux_kustomization for b in self.cluster.flux if b.flux_kustomization}

    def layers_before(self, key: tuple[str, str]) -> set[tuple[str, str]]:
        """The layers Kustomization `key` waits for: its dependsOn, directly or through others."""
        layers, seen, todo = self.layers(), set(), [key]
        while todo:
            ns, _ = current = todo.pop()
            for dep in as_maps(as_map(as_map(layers.get(current)).get("spec")).get("dependsOn")):
                target = (name_key(dep.get("namespace", ns)), name_key(dep.get("name")))
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen


def layer_key(ks: dict) -> tuple[str, str]:
    """(namespace, name) of a Flux Kustomization."""
    meta = as_map(ks.get("metadata"))
    return name_key(meta.get("namespace", "flux-system")), name_key(meta.get("name"))


def waits_for(ks: dict, provider: dict, disabled: bool = True) -> bool:
    """Whether Kustomization `ks` becomes Ready only once `provider` (a HelmRelease it applies) is: wait: true, or a
    health check on it. A CRD is served once applied. A HelmRelease with install or upgrade.disableWait is Ready once
    Helm has applied its objects (helm-controller's HookOnlyStrategy), before its Deployments run: then only a health
    check on a Deployment of its release namespace waits for them (unless `disabled` is False: as if it waited)."""
    spec = as_map(ks.get("spec"))
    if provider.get("kind") != "HelmRelease":
        return True
    meta = as_map(provider.get("metadata"))
    if disabled and no_wait(provider):
        namespace = as_map(provider.get("spec")).get("targetNamespace") or meta.get("namespace")
        return any(as_map(c).get("kind") == "Deployment" and as_map(c).get("namespace", layer_key(ks)[0]) == namespace
                   for c in as_list(spec.get("healthChecks")))
    if spec.get("wait") is True:
        return True
    return any(as_map(c).get("kind") == "HelmRelease" and as_map(c).get("name") == meta.get("name")
               and as_map(c).get("namespace", layer_key(ks)[0]) == meta.get("namespace") for c in as_list(spec.get("healthChecks")))


def no_wait(hr: dict) -> list | None:
    """The field of a HelmRelease's install.disableWait or upgrade.disableWait that is true, else None."""
    spec = as_map(hr.get("spec"))
    return next((["spec", action, "disableWait"] for action in ("install", "upgrade") if as_map(spec.get(action)).get("disableWait") is True), None)


def finding_at(ctx, root: Path, obj: dict, build: Build | None, path: list, rule: str, message: str, hint: str,
               cluster: str | None = None, severity: str = "error") -> Finding:
    """ctx.finding, at the line of `path` inside the document that defines `obj` when it is written there, or at the
    patch (a component's, an overlay's, a Flux Kustomization's) that writes it."""
    f = ctx.finding(obj, build, rule, message, hint, cluster=cluster)
    if f.line:
        patched = ctx.finding(obj, build, rule, message, hint, cluster=cluster, field=dotted(path))
        if patched.file != f.file:
            return replace(patched, severity=severity)
    return replace(f, line=line_at(root, f.file, f.line, path) if f.line else f.line, severity=severity)


def cohort_peers(queue_objects: list[dict], cq: dict) -> list[dict]:
    """What `cq` shares its cohort with among `queue_objects` (Kueue objects of one cluster): the other ClusterQueues of
    its cohortName, the Cohorts whose parent that cohort is, and the Cohort of that name when it has quota of its own
    or a parent ([] without a cohortName)."""
    cohort = as_map(cq.get("spec")).get("cohortName")
    if not isinstance(cohort, str) or not cohort:
        return []
    out = []
    for o in queue_objects:
        spec, name = as_map(o.get("spec")), as_map(o.get("metadata")).get("name")
        if (o.get("kind") == "ClusterQueue" and o is not cq and spec.get("cohortName") == cohort) or (o.get("kind") == "Cohort" and (
                spec.get("parentName") == cohort or (name == cohort and (spec.get("parentName") or spec.get("resourceGroups"))))):
            out.append(o)
    return out



def _parent(o: dict):
    spec = as_map(o.get("spec"))
    return spec.get("cohortName") if o.get("kind") == "ClusterQueue" else spec.get("parentName")


def cohort_ancestors(queue_objects: list[dict], obj: dict) -> list[str]:
    """The names of the Cohorts above `obj` (a ClusterQueue or Cohort among `queue_objects`), nearest first."""
    cohorts = {as_map(o.get("metadata")).get("name"): o for o in queue_objects if o.get("kind") == "Cohort"}
    names, at = [], _parent(obj)
    while isinstance(at, str) and at and at not in names:  # (a cycle is cohort-cycle's finding)
        names.append(at)
        at = _parent(cohorts[at]) if at in cohorts else None
    return names


def cohort_lenders(queue_objects: list[dict], cq: dict) -> list[dict]:
    """What may lend to `cq` among `queue_objects` (Kueue objects of one cluster): every ClusterQueue and Cohort of its
    cohort tree but itself and its ancestors (a Cohort's lendingLimit caps what it lends to its parent, so an ancestor's
    caps nothing `cq` borrows); [] without a cohortName."""
    ancestors = cohort_ancestors(queue_objects, cq)
    if not ancestors:
        return []
    return [o for o in queue_objects if o is not cq and o.get("kind") in ("ClusterQueue", "Cohort")
            and as_map(o.get("metadata")).get("name") not in (ancestors if o.get("kind") == "Cohort" else ())
            and ancestors[-1] in cohort_ancestors(queue_objects, o)]
