"""Flux rules on a cluster's rendered set: what kubeconform cannot see and kustomize-controller
or helm-controller would only report on AKS, as a Kustomization or HelmRelease stuck not Ready."""
from __future__ import annotations

from dataclasses import replace

from harness.gate.findings import Finding
from harness.gate.flux_paths import written
from harness.gate.render import ClusterRender, is_flux_kustomization
from harness.gate.sources import as_list, as_map, kustomization_file, name_key

RULES = {
    "flux-source-ref": "every Flux Kustomization's sourceRef and HelmRelease's chart source names a source of the cluster",
    "flux-prune": "the Flux Kustomization that applies the queues prunes (the layout switch relies on it)",
    "flux-suspended": "(warning) no Flux Kustomization, HelmRelease or source of a cluster is committed with spec.suspend: true; "
                      "Flux would not apply what the commit changes in it",
    "flux-source-url": "a HelmRepository's spec.url scheme agrees with its spec.type (oci:// with type: oci, http(s):// without); else "
                       "source-controller never fetches the chart index and the HelmReleases of its charts never install",
    "flux-other-cluster-path": "(warning) a cluster's Flux Kustomization builds no other cluster's layer while the cluster's own "
                               "directory of that name goes unbuilt (a cluster folder copied without its paths)",
    "flux-path-outside": "(warning) a Flux Kustomization's spec.path names a directory of the Git repository outside the checked tree "
                         "(a monorepo's other directory): Flux applies it, the gate does not check it",
}

SOURCE_API = "source.toolkit.fluxcd.io"
SOURCE_KINDS = {"GitRepository", "OCIRepository", "Bucket", "HelmRepository", "HelmChart"}
# What `flux bootstrap` or the AKS Flux extension (configuration flux-system) creates on the
# cluster, outside the repository: the GitRepository every layer's sourceRef names.
BOOTSTRAP_SOURCES = {("GitRepository", "flux-system", "flux-system")}
QUEUE_KINDS = {"ClusterQueue", "LocalQueue"}
SUSPENDABLE_APIS = ("kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/", SOURCE_API + "/")


def flux_rules(ctx, cluster: ClusterRender) -> list[Finding]:
    """`ctx` is the gate's rules.Context (where findings point)."""
    builds = [cluster.entry, *cluster.flux]
    sources = set(BOOTSTRAP_SOURCES)
    for b in builds:
        for o in b.objects:
            meta = as_map(o.get("metadata"))
            if o.get("kind") in SOURCE_KINDS and str(o.get("apiVersion", "")).startswith(SOURCE_API + "/"):
                sources.add((o["kind"], meta.get("namespace", "flux-system"), meta.get("name")))
    out = []
    for build, obj in ((b, o) for b in builds for o in b.objects):
        for where, ref in _source_refs(obj):
            ns = as_map(obj.get("metadata")).get("namespace", "flux-system")
            target = (name_key(ref.get("kind")), name_key(ref.get("namespace", ns)), name_key(ref.get("name")))
            if target not in sources and not cluster.outside:  # (a layer the gate does not check may define it)
                have = sorted(f"{n}/{m}" for k, n, m in sources if k == target[0])
                out.append(ctx.finding(obj, build, "flux-source-ref",
                                       f"{where} {target[0]} {target[1]}/{target[2]} is not a source the cluster has "
                                       f"(its {target[0]} objects: {', '.join(have) or 'none'})",
                                       f"name one of the cluster's {target[0]} objects, in the namespace of the referencing object unless the "
                                       "reference sets one", cluster=cluster.name, field=f"{where}.name"))
    out += _release_dependencies(ctx, cluster, builds) + _other_clusters_layers(ctx, cluster, builds) + _source_urls(ctx, cluster, builds)
    out += _outside(ctx, cluster, builds)
    for build in cluster.flux:
        ks = build.flux_kustomization or {}
        queues = sorted({o.get("kind") for o in build.objects if o.get("kind") in QUEUE_KINDS})
        if queues and as_map(ks.get("spec")).get("prune") is not True:
            owner = next((b for b in builds if any(o is ks for o in b.objects)), cluster.entry)
            out.append(ctx.finding(ks, owner, "flux-prune",
                                   f"applies {' and '.join(k + 's' for k in queues)} without prune: true, so switching the overlay "
                                   "would leave the old queues admitting",
                                   "set spec.prune: true on this Kustomization", cluster=cluster.name,
                                   field="spec.prune" if "prune" in as_map(ks.get("spec")) else None))
    for build, obj in ((b, o) for b in builds for o in b.objects):
        if str(obj.get("apiVersion", "")).startswith(SUSPENDABLE_APIS) and as_map(obj.get("spec")).get("suspend") is True:
            found = ctx.finding(obj, build, "flux-suspended",
                                f"spec.suspend is true: Flux does not reconcile this {obj.get('kind')} on cluster {cluster.name}, so what "
                                "this commit changes in it never reaches the cluster (and layers that dependOn it wait)",
                                "remove spec.suspend (suspend on the cluster with `flux suspend` for maintenance, not in Git)",
                                cluster=cluster.name, field="spec.suspend")
            out.append(replace(found, severity="warning"))
    return out


def _source_urls(ctx, cluster: ClusterRender, builds: list) -> list[Finding]:
    """flux-source-url: source-controller refuses a HelmRepository whose URL scheme is not its type's ("the 'oci' URL
    scheme cannot be used with 'default' HelmRepository type"; a type: oci one whose URL is not oci://)."""
    out = []
    for build, obj in ((b, o) for b in builds for o in b.objects):
        if obj.get("kind") != "HelmRepository" or not str(obj.get("apiVersion", "")).startswith(SOURCE_API + "/"):
            continue
        spec = as_map(obj.get("spec"))
        url, oci = str(spec.get("url", "")), spec.get("type") == "oci"
        if url.startswith("oci://") != oci and url:
            message = (f"spec.url {url!r} is an OCI registry but spec.type is {spec.get('type', 'default')!r}: source-controller refuses it "
                       "(\"the 'oci' URL scheme cannot be used with 'default' HelmRepository type\")" if not oci else
                       f"spec.type is oci but spec.url {url!r} is not an oci:// URL: source-controller refuses it")
            out.append(ctx.finding(obj, build, "flux-source-url", message + ", so no chart of it is ever installed",
                                   "add `type: oci` to the HelmRepository's spec" if not oci else
                                   "write the registry as oci://<host>/<path>, or drop `type: oci` for an HTTP(S) chart repository",
                                   cluster=cluster.name, field="spec.type" if "type" in spec else "spec.url"))
    return out


def _other_clusters_layers(ctx, cluster: ClusterRender, builds: list) -> list[Finding]:
    """flux-other-cluster-path: a Flux Kustomization of this cluster whose spec.path is <clusters>/<other>/<rest> while
    <clusters>/<this>/<rest> is a kustomization none of this cluster's Flux Kustomizations builds: the copy of a cluster
    folder still applies the original's layer, and what is written for this cluster is never applied."""
    prefix = ctx.config.clusters.rstrip("/") + "/"
    built, out = {b.dir for b in cluster.flux}, []
    for b in cluster.flux:
        other, _, rest = b.dir.removeprefix(prefix).partition("/")
        mine = f"{prefix}{cluster.name}/{rest}"
        if not b.dir.startswith(prefix) or other == cluster.name or not rest or mine in built or b.flux_kustomization is None \
                or kustomization_file(ctx.sources.root / mine) is None:
            continue
        owner = next((o for o in builds if any(x is b.flux_kustomization for x in o.objects)), cluster.entry)
        found = ctx.finding(b.flux_kustomization, owner, "flux-other-cluster-path",
                            f"cluster {cluster.name} applies {b.dir}, cluster {other}'s layer, while its own {mine} is applied by none "
                            f"of its Flux Kustomizations: what {mine} holds never reaches cluster {cluster.name}",
                            f"point spec.path at {written(mine, ctx.prefix)} (or remove {mine} if this cluster means to share {other}'s layer)",
                            cluster=cluster.name, field="spec.path")
        out.append(replace(found, severity="warning"))
    return out


def _outside(ctx, cluster: ClusterRender, builds: list) -> list[Finding]:
    """flux-path-outside: a Flux Kustomization whose spec.path, from the Git root, is a directory outside the checked tree
    (render.ClusterRender.outside): a monorepo's layer the gate neither renders nor judges, once, with no follow-on."""
    out = []
    for ks in cluster.outside:
        owner = next((o for o in builds if any(x is ks for x in o.objects)), cluster.entry)
        path = as_map(ks.get("spec")).get("path")
        found = ctx.finding(ks, owner, "flux-path-outside",
                            f"cluster {cluster.name}: Flux Kustomization {as_map(ks.get('metadata')).get('name')} applies {path}, a directory "
                            f"of the Git repository outside {ctx.prefix}/, which the gate checks: that layer was not checked",
                            f"move the layer under {ctx.prefix}/ (and point spec.path there, from the Git root) for the gate to check it with "
                            f"the cluster, or, when {path} is checked on its own, disable flux-path-outside for this file",
                            cluster=cluster.name, field="spec.path")
        out.append(replace(found, severity="warning"))
    return out


def _is_release(obj: dict) -> bool:
    return obj.get("kind") == "HelmRelease" and str(obj.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/")


def _release_dependencies(ctx, cluster: ClusterRender, builds: list) -> list[Finding]:
    """flux-depends-on for HelmReleases: helm-controller installs nothing until every HelmRelease in
    spec.dependsOn is Ready, so one the cluster does not define holds the release back for good."""
    releases = {(name_key(as_map(o.get("metadata")).get("namespace")), name_key(as_map(o.get("metadata")).get("name")))
                for b in builds for o in b.objects if _is_release(o)}
    out, graph, where = [], {}, {}
    for build, hr in ((b, o) for b in builds for o in b.objects if _is_release(o)):
        ns = as_map(hr.get("metadata")).get("namespace")
        me = (name_key(ns), name_key(as_map(hr.get("metadata")).get("name")))
        graph[me], where[me] = [], (build, hr)
        for i, dep in enumerate(as_list(as_map(hr.get("spec")).get("dependsOn"))):
            dep = as_map(dep)
            target = (name_key(dep.get("namespace", ns)), name_key(dep.get("name")))
            graph[me].append(target)
            if dep.get("kind", "HelmRelease") == "HelmRelease" and target not in releases:
                out.append(ctx.finding(hr, build, "flux-depends-on",
                                       f"dependsOn HelmRelease {target[0]}/{target[1]} is not a HelmRelease of the cluster: "
                                       "helm-controller never installs this release",
                                       "fix the name (and namespace), or add the HelmRelease it should wait for",
                                       cluster=cluster.name, field=f"spec.dependsOn[{i}].name"))
    for cycle in cycles(graph):
        build, hr = where[cycle[0]]
        out.append(ctx.finding(hr, build, "flux-cycle", "HelmRelease dependsOn cycle: " + " -> ".join(n for _, n in cycle + [cycle[0]])
                               + ": helm-controller installs none of them, and the layers that wait for them never become Ready",
                               "remove one dependsOn edge (Kueue and the KubeRay operator do not depend on each other)", cluster=cluster.name,
                               field=f"spec.dependsOn[{graph[cycle[0]].index(cycle[1 % len(cycle)])}].name"))
    return out


def cycles(graph: dict) -> list[list]:
    """The cycles of a dependsOn graph (node -> the nodes it depends on), each as the list of its nodes."""
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in list(graph):
        if node not in state:
            visit(node, [])
    return found


def _source_refs(obj: dict) -> list[tuple[str, dict]]:
    spec = as_map(obj.get("spec"))
    if is_flux_kustomization(obj):
        return [("spec.sourceRef", as_map(spec.get("sourceRef")))] if spec.get("sourceRef") else []
    if _is_release(obj):
        if spec.get("chartRef"):
            return [("spec.chartRef", as_map(spec.get("chartRef")))]
        ref = as_map(as_map(as_map(spec.get("chart")).get("spec")).get("sourceRef"))
        return [("spec.chart.spec.sourceRef", ref)] if ref else []
    return []
