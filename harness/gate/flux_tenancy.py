"""The AKS Flux extension's multi-tenancy lockdown, for the clusters terraform/ bootstraps with it.

The microsoft.flux extension enforces multi-tenancy unless its configuration settings say
`multiTenancy.enforce = "false"`: its kustomize-controller and helm-controller run with
`--default-service-account=flux-applier` and `--no-cross-namespace-refs=true`, and the extension
creates that ServiceAccount, bound to cluster-admin, only in the namespace of the Flux configuration
(flux-system here). So on such a cluster:
- a Flux Kustomization or HelmRelease without spec.serviceAccountName in another namespace acts as
  <its namespace>/flux-applier, which has no permissions there: nothing of it is applied or
  installed (helm-controller: "secrets is forbidden: User system:serviceaccount:<ns>:flux-applier
  cannot list ...", fluxcd/flux2#3182; Azure/AKS#3099);
- a sourceRef or chartRef into another namespace is refused.
`flux bootstrap` sets neither flag, so a repository can work there and fail on AKS.

object-collision (bootstrap_collisions): on a cluster terraform/ bootstraps with the extension, `flux bootstrap`'s files
(clusters/<cluster>/flux-system/gotk-*.yaml, which the repository ships empty: the objects `flux install` labels
app.kubernetes.io/part-of: flux, Flux's CRDs, the GitRepository and Kustomization flux-system; nothing else there) are applied by the extension's
Kustomization: their GitRepository flux-system replaces the extension's (an ssh URL, a deploy key no bootstrap made),
and their Kustomization is a second root of the cluster folder. One finding per cluster; what those files' objects
cause besides (their deploy key Secret, the second root's collisions) folds under it (folding.fold).
"""
from __future__ import annotations

from pathlib import Path

from harness.gate.cluster_index import finding_at
from harness.gate.config import GateConfig
from harness.gate.findings import Finding
from harness.gate.render import ClusterRender, is_flux_kustomization
from harness.gate.sources import as_map

RULES = {
    "flux-multi-tenancy": "on clusters terraform/ bootstraps with the AKS Flux extension in its default multi-tenancy mode, every Flux "
                          "Kustomization and HelmRelease outside the Flux configuration's namespace names a spec.serviceAccountName "
                          "(else it acts as <namespace>/flux-applier, which has no permissions), and no sourceRef or chartRef crosses "
                          "namespaces",
}
ENFORCE_SETTING = "multiTenancy.enforce"
APPLIER = "flux-applier"


def lockdown(root: Path, gate_config: GateConfig) -> tuple[str, str] | None:
    """(where the extension is written, the Flux configuration's namespace) when terraform/ installs the Flux extension
    with multi-tenancy enforced; None when it does not, opts out, or cannot be read (its own findings say why)."""
    cfg = gate_config.terraform_config(root)
    if cfg is None:
        return None  # none read (capacity-terraform says why)
    for ext in cfg.of_type("azurerm_kubernetes_cluster_extension"):
        kind = ext.body.get("extension_type")
        if kind is None or not kind.known or kind.value != "microsoft.flux":
            continue
        settings = ext.body.get("configuration_settings")
        if settings is not None and (not settings.known or str(as_map(settings.value).get(ENFORCE_SETTING, "true")).lower() == "false"):
            return None  # opted out, or not known before apply: not judged
        namespaces = [fc.body.get("namespace") for fc in cfg.of_type("azurerm_kubernetes_flux_configuration")]
        known = [str(v.value) for v in namespaces if v is not None and v.known]
        return f"{ext.file}:{ext.line}", (known[0] if known else "flux-system")
    return None


def provided(locked: tuple[str, str] | None) -> list[dict]:
    """What the extension creates on every cluster: ServiceAccount flux-applier in the Flux configuration's namespace."""
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": APPLIER, "namespace": locked[1]}}] if locked else []


def _refs(obj: dict) -> list[tuple[list, dict]]:
    spec = as_map(obj.get("spec"))
    return [(["spec", "sourceRef"], as_map(spec.get("sourceRef"))), (["spec", "chartRef"], as_map(spec.get("chartRef"))),
            (["spec", "chart", "spec", "sourceRef"], as_map(as_map(as_map(spec.get("chart")).get("spec")).get("sourceRef")))]


BOOTSTRAPPED = "`flux bootstrap`'s objects on a cluster the AKS Flux extension bootstraps"  # the message's start (folding.fold)


def _bootstrapped(obj: dict) -> bool:
    """An object of what `flux bootstrap` writes there: gotk-components.yaml (`flux install`'s controllers, CRDs and their
    RBAC, every one labelled app.kubernetes.io/part-of: flux) or gotk-sync.yaml (the GitRepository and Kustomization
    flux-system). Anything else the folder holds (a ConfigMap, a notification Provider) collides with nothing."""
    meta = as_map(obj.get("metadata"))
    if as_map(meta.get("labels")).get("app.kubernetes.io/part-of") == "flux":
        return True
    if obj.get("kind") == "CustomResourceDefinition":
        return str(as_map(obj.get("spec")).get("group", "")).endswith(".toolkit.fluxcd.io")
    source = str(obj.get("apiVersion", "")).startswith("source.toolkit.fluxcd.io/") and obj.get("kind") == "GitRepository"
    return (source or is_flux_kustomization(obj)) and meta.get("name") == "flux-system"


def bootstrap_collisions(ctx, root: Path, cluster: ClusterRender) -> list[Finding]:
    """object-collision at the first of `flux bootstrap`'s objects the cluster applies from its flux-system/ folder, when terraform/ bootstraps
    the cluster (it has a tfvars file) with the microsoft.flux extension and a Flux configuration."""
    cfg = ctx.config.terraform_config(root)
    if cfg is None or not (root / ctx.config.tfvars_file(cluster.name, root)).is_file():
        return []  # none read (capacity-terraform says why)
    ext = next((e for e in cfg.of_type("azurerm_kubernetes_cluster_extension") if (k := e.body.get("extension_type")) is not None
                and k.known and k.value == "microsoft.flux"), None)
    configs = cfg.of_type("azurerm_kubernetes_flux_configuration")
    folder = f"{ctx.config.clusters.rstrip('/')}/{cluster.name}/flux-system/"
    placed = [(obj, ctx.finding(obj, cluster.entry, "", "", "")) for obj in cluster.entry.objects] if ext and configs else []
    placed = [(obj, f) for obj, f in placed if f.file and f.file.startswith(folder) and _bootstrapped(obj)]
    if not placed:
        return []
    obj, at = placed[0]
    objects = ", ".join(f"{o.get('kind')}/{as_map(o.get('metadata')).get('name')}" for o, _ in placed[:4]) + (", ..." if len(placed) > 4 else "")
    return [finding_at(ctx, root, obj, cluster.entry, [], "object-collision",
                       f"{BOOTSTRAPPED} ({ext.file}:{ext.line}, Flux configuration {configs[0].file}:{configs[0].line}): {folder} holds "
                       f"{len(placed)} ({objects}), which the extension's Kustomization applies over what the extension created: its "
                       "GitRepository flux-system is replaced (another URL, a deploy key Secret no bootstrap made, so every layer's "
                       "source fails), and a second Kustomization reconciles the cluster folder", "leave the files of "
                       f"{folder} empty on a cluster terraform/ bootstraps (as the repository ships them); or bootstrap this cluster with "
                       "`flux bootstrap` instead, without a tfvars file", cluster=cluster.name)]


def tenancy_rules(ctx, root: Path, cluster: ClusterRender, locked: tuple[str, str] | None) -> list[Finding]:
    """flux-multi-tenancy for one cluster's set (`locked`: lockdown() of the repository), when terraform/ provisions that
    cluster (it has a tfvars file; a `flux bootstrap` or local cluster runs Flux without the extension's lockdown); and
    bootstrap_collisions."""
    out = bootstrap_collisions(ctx, root, cluster)
    if locked is None or not (root / ctx.config.tfvars_file(cluster.name, root)).is_file():
        return out
    where, home = locked
    for build, obj in cluster.applied():
        helm = str(obj.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/") and obj.get("kind") == "HelmRelease"
        if not (helm or is_flux_kustomization(obj)):
            continue
        ns = str(as_map(obj.get("metadata")).get("namespace") or "default")
        controller = "helm-controller" if helm else "kustomize-controller"
        if ns != home and not as_map(obj.get("spec")).get("serviceAccountName"):
            out.append(finding_at(ctx, root, obj, build, ["metadata", "namespace"], "flux-multi-tenancy",
                                  f"on AKS the Flux extension ({where}) enforces multi-tenancy: {controller} acts as ServiceAccount "
                                  f"{ns}/{APPLIER}, which has no permissions in {ns} (the extension binds {APPLIER} to cluster-admin only in "
                                  f"{home}), so nothing of it is {'installed' if helm else 'applied'}",
                                  f"put it (and its source) in namespace {home}" + (f" with spec.targetNamespace: {ns}, spec.releaseName and "
                                  f"spec.storageNamespace: {ns}" if helm else "") + "; or set spec.serviceAccountName to an account bound to the "
                                  f"rights it needs; or opt out with configuration_settings = {{\"{ENFORCE_SETTING}\" = \"false\"}} on the extension",
                                  cluster=cluster.name))
        for path, ref in _refs(obj):
            if ref.get("namespace") not in (None, ns):
                out.append(finding_at(ctx, root, obj, build, [*path, "namespace"], "flux-multi-tenancy",
                                      f"{'.'.join(path)} names {ref.get('kind')} {ref.get('namespace')}/{ref.get('name')} in another namespace; "
                                      f"on AKS the Flux extension ({where}) runs {controller} with --no-cross-namespace-refs, which refuses it",
                                      f"move the source into namespace {ns}, or opt out with configuration_settings = "
                                      f"{{\"{ENFORCE_SETTING}\" = \"false\"}} on the extension", cluster=cluster.name))
    return out
