"""Cross-resource rules of the static gate: what schemas alone cannot see.

What one object's validation decides (quantities, coveredResources, borrowing limits without a
cohort, shutdownAfterJobFinishes) is left to the apiserver's and Kueue's own code in
tools/fluxbuild's check (`api-validation`, `kueue-webhook`), so each problem is reported once, by them.

Every rule returns Findings; `RULES` documents each id with the fix it suggests.
"""
from __future__ import annotations

import re
from dataclasses import replace
from collections import defaultdict
from pathlib import Path

from harness.gate import config
from harness.gate.artifact import cluster_left_out, symlinked
from harness.gate.build_errors import flux_build_error
from harness.gate.findings import Finding
from harness.gate.flux_rules import cycles
from harness.gate.kustomize_warnings import reachable
from harness.gate.render import Build, ClusterRender, is_flux_kustomization, object_key
from harness.gate.origin import line_at, segments
from harness.gate.substitution import undefined_variable
from harness.gate.writers import Writers
from harness.gate.sources import KUSTOMIZATION_FILES, SourceError, Sources, as_list, as_map, as_maps, load_yaml, name_key, reachable_dirs, resource_id

KUEUE_API = "kueue.x-k8s.io/v1beta2"

RULES = {
    "file-read": "every configuration file can be read (no dangling symlink, no directory named *.yaml)",
    "yaml-syntax": "every YAML file kustomize, Flux or the gate reads is UTF-8 and parses (one in or below a kustomization's "
                   "directory or the clusters directory, a workload, versions.yaml, the gate configuration, a CRD file; not a Helm "
                   "chart's templates, nor a fork's docs or CI files)",
    "kustomize-build": "every kustomization directory builds",
    "schema": "every object validates strictly against Kubernetes 1.35 / pinned CRD schemas",
    "schema-unknown-kind": "every apiVersion/kind is one the cluster serves",
    "localqueue-clusterqueue": "a LocalQueue points at an existing ClusterQueue",
    "clusterqueue-flavor": "every flavor a ClusterQueue names exists",
    "namespace-selector": "ClusterQueue has a namespaceSelector (null selects no namespace)",
    "cluster-overlay": "each cluster selects exactly one queue overlay (the configuration's queue_overlays; none configured: not checked)",
    "object-collision": "no two Flux Kustomizations of a cluster apply the same object",
    "flux-path": "every Flux Kustomization path exists and renders",
    "flux-depends-on": "every dependsOn target exists (a Flux Kustomization's Kustomizations, a HelmRelease's HelmReleases)",
    "flux-cycle": "dependsOn has no cycle",
    "flux-variables-applied": "a cluster folder without a kustomization file keeps its variables stand-in (cluster-vars.example.yaml) "
                              "out of the artifact: Flux's generator would apply it over the ConfigMap Terraform writes",
    "flux-decryption": "a Flux Kustomization whose objects hold a SOPS-encrypted Secret has spec.decryption (provider sops): without it "
                       "kustomize-controller's apply fails and nothing of the layer is applied",
    "flux-health-check-expr": "every spec.healthCheckExprs entry compiles with kustomize-controller's CEL (fluxcd/pkg/runtime/cel): "
                              "one that does not leaves the Kustomization Stalled (InvalidCELExpression), nothing of it applied",
    "flux-variable-undefined": "every ${VAR} in a Flux Kustomization's output is defined, and substituted: a layer without "
                               "spec.postBuild whose objects use the cluster's variables applies them as written",
    "sample-render": "every sample listed in clusters/*/samples.yaml (the configuration's samples file) renders",
    "sample-queue": "a sample names a LocalQueue that exists in its namespace",
    "sample-vars": "every `vars` entry of a samples.yaml entry is a ${VAR} its sample uses (a misspelt one leaves the default in place), and its `queue` is what the sample's queue label says (written ${QUEUE_NAME}, not a fixed name)",
    "sample-duplicate": "no two entries of a cluster's samples.yaml render the same object (namespace and name): the apiserver refuses the second",
    "sample-ttl-holds-nodes": "a sample's RayCluster is deleted as its job ends (ttlSecondsAfterFinished: 0), since Kueue gives its quota to the next job at once (warning)",
    "sample-fits": "Kueue's own flavor assigner (tools/fluxbuild kueueadmit.go, the pinned Kueue's scheduler cache and flavorassigner) "
                   "admits a sample (a RayJob, RayCluster or RayService, with the pod sets Kueue's integration for its kind builds), "
                   "and a queued Ray object a layer applies, in its ClusterQueue on the idle cluster: one flavor per resource group and pod set, nominal quota "
                   "plus what the cohort tree lends, the pods resource, TAS-only flavors, the manager's resource transformations and "
                   "excluded prefixes; else it pends forever",
}


class Context:
    """Where findings point: the sources index plus the build a finding came from."""

    def __init__(self, sources: Sources, gate_config: config.GateConfig = config.DEFAULTS):
        self.sources = sources
        self.config = gate_config
        self.failed_dirs: set[str] = set()  # directories whose plain build fails (set once rendered)
        self.renames = None  # renames.Renames (set once rendered): a missing name a namePrefix/nameSuffix explains
        self.sample_vars: dict[int, dict[str, tuple[str, int | None, str]]] = {}  # id(rendered sample) -> VAR -> (file, line, entry key)
        self.sample_related: dict[int, list[dict]] = {}  # id(rendered sample) -> its namespace's LimitRanges, ResourceQuotas on its cluster
        self.sample_entries: dict[int, tuple[str, int | None]] = {}  # id(rendered sample) -> (samples file, line of its entry)
        self.pod_security: list[tuple[dict, dict, Finding]] = []  # (object, error, finding) of each pod template a namespace's level forbids
        self.prefix = ""  # the checked tree's directory in its Git work tree (render.FluxBuild.prefix; set by the gate)
        self.checker = None  # the run's schema_check.Checker (set by the gate; rules that ask its helper make one when it is not)
        self._reach: dict[str, tuple[str, ...]] = {}  # build directory -> the directories it reads (_reached)
        self.writers = Writers()  # the patch probe's answers: which patch writes a field (set by kustomize_warnings.probe_patches)

    def renamed(self, kind: str, name, present, reference: str) -> bool:
        """Whether a kustomization renamed the missing `kind` `name` to one in `present` (its
        kustomize-rename finding then stands for `reference`)."""
        return self.renames is not None and self.renames.explains(kind, name, present, reference)

    def moved(self, cluster: str, kind: str, namespace, name, reference: str, exists_in) -> bool:
        """Whether a targetNamespace or a kustomization's namespace: moved the missing object (its finding stands for `reference`)."""
        return self.renames is not None and self.renames.moved(cluster, kind, namespace, name, reference, exists_in)

    def finding(self, obj: dict, build: Build | None, rule: str, message: str, hint: str,
                file: str | None = None, cluster: str | None = None, context: str | None = None,
                field: str | None = None) -> Finding:
        """A finding located at the document that defines `obj`, preferring the cluster's own
        folder (Flux objects of every cluster share names) and then the directory built; with
        `field`, at the line where that field's value is written."""
        cluster = cluster or (build.cluster if build else None)
        clusters = self.config.clusters
        prefer = tuple(p for p in (f"{clusters}/{cluster}/" if cluster else "", (build.dir + "/") if build else "",
                                   *(self.reached(build.dir) if build else ()),  # what the build reads, before any other overlay
                                   *(o + "/" for o in self.config.queue_overlays), "overlays/", "base/", f"{clusters}/", "flux/") if p)
        written = self.writers.at(build, obj, segments(field)) if field and not file else None
        src, line = self.sources.locate(obj, (file,) if file else prefer, field=field, written=written)
        ctx = context if context is not None else (build.id if build else (f"cluster {cluster}" if cluster else ""))
        return Finding(src, line, resource_id(obj), rule, message, hint, ctx)


    def reached(self, directory: str) -> tuple[str, ...]:
        """The directories (with a trailing /) a build of `directory` reads, memoised per run."""
        if directory not in self._reach:
            root = self.sources.root
            self._reach[directory] = tuple(sorted(f"{d.relative_to(root).as_posix()}/" for d in reachable_dirs(root, root / directory)
                                                  if d.is_relative_to(root)))
        return self._reach[directory]

    def cause_of(self, directory: str, flux: bool = False) -> str | None:
        """What makes a kustomize build of `directory` fail, when it is reported on its own: a file
        with a YAML error, or another kustomization directory whose own build fails, among those
        the build reads (the directories it reaches; for a Flux Kustomization's build, `flux`, the
        plain build of its own path too). Its own finding then stands for this one."""
        root = self.sources.root.resolve()
        dirs = reachable(root / directory)
        broken = self.sources.broken_files()
        found = next((f for f in sorted(broken) if (root / f).parent.resolve() in dirs or f.startswith(directory.rstrip("/") + "/")), None)
        return found or next((d for d in sorted(self.failed_dirs) if (flux or d != directory) and (root / d).resolve() in dirs), None)


def kueue_rules(ctx: Context, build: Build, objects: list[dict], owners: dict[int, Build] | None = None) -> list[Finding]:
    """LocalQueue and ClusterQueue references among `objects` (one build's, or a cluster's applied set with `owners`:
    id(object) -> the layer's build that applies it, where its findings then point)."""
    out = []
    owner = lambda o: (owners or {}).get(id(o), build)  # noqa: E731
    flavors = {o["metadata"]["name"] for o in objects if o.get("kind") == "ResourceFlavor"}
    cqs = {o["metadata"]["name"] for o in objects if o.get("kind") == "ClusterQueue"}
    for o in objects:
        kind = o.get("kind")
        if kind == "LocalQueue" and o.get("apiVersion") == KUEUE_API:
            target = as_map(o.get("spec")).get("clusterQueue")
            meta = as_map(o.get("metadata"))
            if name_key(target) not in cqs and not ctx.renamed(
                    "ClusterQueue", target, cqs, f"LocalQueue {meta.get('namespace')}/{meta.get('name')} spec.clusterQueue {target!r}"):
                out.append(ctx.finding(o, owner(o), "localqueue-clusterqueue",
                                       f"spec.clusterQueue {target!r} is not defined (have: {', '.join(sorted(cqs)) or 'none'})",
                                       "point spec.clusterQueue at a ClusterQueue of the same overlay, or add that ClusterQueue",
                                       field="spec.clusterQueue"))
        if kind == "ClusterQueue" and o.get("apiVersion") == KUEUE_API:
            out += _cluster_queue_rules(ctx, owner(o), o, flavors)
    return out


def _cluster_queue_rules(ctx: Context, build: Build, cq: dict, flavors: set[str]) -> list[Finding]:
    out = []
    spec = as_map(cq.get("spec"))
    if spec.get("namespaceSelector") is None:
        out.append(ctx.finding(cq, build, "namespace-selector", "spec.namespaceSelector is missing; a null selector admits from no namespace",
                               "add `namespaceSelector: {}` (all namespaces) or a label selector for the team's namespaces",
                               field="spec"))
    for gi, group in enumerate(as_maps(spec.get("resourceGroups"))):
        for fi, flavor in enumerate(as_list(group.get("flavors"))):
            fname = as_map(flavor).get("name")
            if name_key(fname) not in flavors and not ctx.renamed(
                    "ResourceFlavor", fname, flavors, f"ClusterQueue {as_map(cq.get('metadata')).get('name')} flavor {fname!r}"):
                out.append(ctx.finding(cq, build, "clusterqueue-flavor",
                                       f"resourceGroups[{gi}] names flavor {fname!r}, which is not defined (have: {', '.join(sorted(flavors)) or 'none'})",
                                       "add the ResourceFlavor beside the cluster's other ResourceFlavors or fix the flavor name",
                                       field=f"spec.resourceGroups[{gi}].flavors[{fi}].name"))
    return out


# -- Clusters and Flux --------------------------------------------------------------------------
def cluster_rules(ctx: Context, root: Path, cluster: ClusterRender) -> list[Finding]:
    out = []
    entry_file = cluster.entry_file
    if (away := cluster_left_out(root, cluster.entry.dir, cluster.name)) is not None:  # nothing of it reaches Flux
        return [away]
    if cluster.bootstrap and cluster.entry.error and not ctx.cause_of(cluster.entry.dir, flux=True):
        # Flux's generator builds the directory (a `flux bootstrap` or Flux extension cluster): no plain build reports it.
        own = [n for n in (ctx.config.samples, ctx.config.cluster_variables) if f"{cluster.entry.dir}/{n}" in cluster.entry.error]
        return [Finding(entry_file, None, f"cluster/{cluster.name}", "kustomize-build",
                        f"{cluster.entry.dir} has no kustomization file, so Flux builds it with its generator (every manifest under it), "
                        f"which fails, and nothing of cluster {cluster.name} is applied: {cluster.entry.error}",
                        f"add {cluster.entry.dir}/kustomization.yaml listing the cluster's Flux Kustomizations (as the other clusters "
                        f"have), or list {', '.join(own)} in {cluster.entry.dir}/.sourceignore: the gate's {' and '.join(own)} "
                        "are no manifests" if own else
                        f"fix what the message names among the manifests under {cluster.entry.dir} (every one is applied: a duplicate "
                        "object, a file that is not a manifest)", f"cluster {cluster.name}")]
    own = cluster.entry.flux_kustomization  # flux-system, when gotk-sync.yaml sits beside the entry's kustomization.yaml
    if own and cluster.entry.error and not ctx.cause_of(cluster.entry.dir, flux=True) and "substitute from '" not in cluster.entry.error:
        rule, message, hint, where = flux_build_error(own, cluster.entry.error, root, ctx.prefix)
        return [ctx.finding(own, cluster.entry, rule, message, hint, field=where)]
    stand_ins = {object_key(v) for v in cluster.variables}
    applied_vars = [o for o in cluster.entry.objects if object_key(o) in stand_ins] if cluster.bootstrap else []
    if applied_vars:
        var_file = f"{cluster.entry.dir}/{ctx.config.cluster_variables}"
        out.append(Finding(var_file, 1, resource_id(applied_vars[0]), "flux-variables-applied",
                           f"{cluster.entry.dir} has no kustomization file, so Flux's generator applies every manifest under it, "
                           f"{var_file} too: its example values overwrite what Terraform writes into {resource_id(applied_vars[0])}",
                           f"list {ctx.config.cluster_variables} in {cluster.entry.dir}/.sourceignore (with {ctx.config.samples}), or add "
                           f"{cluster.entry.dir}/kustomization.yaml listing only the Flux Kustomization files", f"cluster {cluster.name}"))
    kss = cluster.kustomizations()
    names = {(name_key(as_map(k.get("metadata")).get("namespace", "flux-system")), name_key(k["metadata"]["name"])) for k in kss}

    # Overlays the cluster's Flux Kustomizations pull in.
    known = ctx.config.queue_overlays
    overlays = set()
    for build in cluster.flux:
        for d in reachable_dirs(root, root / build.dir):
            rel = d.relative_to(root.resolve()).as_posix()
            if rel in known:
                overlays.add(rel)
    # With no overlay reached and a Flux layer that does not build, that layer's finding is the cause.
    if known and len(overlays) != 1 and not (not overlays and not cluster.complete):
        which = ", ".join(sorted(overlays)) or "none"
        choices = "; ".join(f"{o} ({what})" for o, what in known.items())
        out.append(Finding(entry_file, None, f"cluster/{cluster.name}", "cluster-overlay",
                           f"cluster selects {len(overlays)} queue overlays ({which}); exactly one must be active",
                           f"reference exactly one of {choices} from a layer of {ctx.config.clusters}/{cluster.name}/ "
                           f"(or set queue_overlays in {config.CONFIG_FILE})",
                           f"cluster {cluster.name}"))

    # Flux Kustomizations: paths, dependsOn, cycles, variables.
    graph: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for build in cluster.flux:
        ks = build.flux_kustomization or {}
        ns = name_key(as_map(ks.get("metadata")).get("namespace", "flux-system"))
        me = (ns, name_key(ks["metadata"]["name"]))
        if build.error and not ctx.cause_of(build.dir, flux=True) and "substitute from '" not in build.error:
            # (a substituteFrom source the cluster lacks: object-ref names it at its line)
            rule, message, hint, where = flux_build_error(ks, build.error, root, ctx.prefix)
            link = symlinked(root, root / build.dir) if rule == "flux-path" and (root / build.dir).exists() else None
            if link is not None:  # the checkout has it through a symlink; the artifact holds no symlinks
                message, hint = f"{message} ({link.relative_to(root).as_posix()} is a symlink, which the artifact source-controller " \
                                "packs does not hold)", f"replace the symlink {link.relative_to(root).as_posix()} by the directory itself"
            # (kustomize-controller builds nothing of a Kustomization the apiserver refuses: that refusal is the cause)
            out.append(replace(ctx.finding(ks, build, rule, message, hint, field=where), presumes=(resource_id(ks),)))
        deps = as_map(ks.get("spec")).get("dependsOn")
        for i, dep in enumerate(deps if isinstance(deps, list) else []):
            if not isinstance(dep, dict):
                continue  # the schema check reports it
            target = (name_key(dep.get("namespace", ns)), name_key(dep.get("name")))
            graph[me].append(target)
            if target not in names and not cluster.outside:  # (a layer the gate does not check may define it)
                out.append(ctx.finding(ks, build, "flux-depends-on", f"dependsOn {target[0]}/{target[1]} is not a Kustomization of this cluster",
                                       "fix the name, or add the Kustomization it should wait for", field=f"spec.dependsOn[{i}].name"))
        out += [undefined_variable(ctx, cluster, build, msg) for msg in build.undefined]
        out += _unsubstituted(ctx, cluster, build, ks)
    for cycle in cycles(graph):
        ks = next(k for k in kss if (name_key(as_map(k.get("metadata")).get("namespace", "flux-system")), name_key(k["metadata"]["name"])) == cycle[0])
        out.append(ctx.finding(ks, None, "flux-cycle", "dependsOn cycle: " + " -> ".join(n for _, n in cycle + [cycle[0]]),
                               "remove one dependsOn edge; layers must form a chain (controllers, then queues)", cluster=cluster.name,
                               field=f"spec.dependsOn[{graph[cycle[0]].index(cycle[1 % len(cycle)])}].name"))

    # The same object applied by two Flux Kustomizations: they would fight and prune each other.
    # One finding per set of layers, naming what they share, at the later layer's spec.path (or the entry's line listing it).
    owners: dict[tuple, list[Build]] = defaultdict(list)
    for build in [cluster.entry, *cluster.flux]:
        for o in build.objects:
            owners[object_key(o)].append(build)
    shared: dict[tuple, list[tuple]] = defaultdict(list)
    for key, builds in owners.items():
        if len(builds) > 1:
            shared[tuple(b.id for b in builds)].append(key)
    if not any(owners[keys[0]][0] is cluster.entry for keys in shared.values()):  # else the entry applies a layer's objects: that is the cause
        out += _unsubstituted(ctx, cluster, cluster.entry, cluster.entry.flux_kustomization or {})
    for ids, keys in shared.items():
        (_, kind, ns, name), builds = keys[0], owners[keys[0]]
        objects = ", ".join("/".join(str(p) for p in k[1:] if p) for k in keys[:6]) + (", ..." if len(keys) > 6 else "")
        message = (f"{len(keys)} object(s) ({objects}) are applied by {len(builds)} Flux Kustomizations: {', '.join(ids)}; they "
                   "fight over them and each prunes what the other applies")
        hint = ("let exactly one layer own each object: remove the directory from all but one of them (a cluster's entry point "
                "lists its Flux Kustomizations, not their directories; one queue overlay per cluster)")
        ks = builds[-1].flux_kustomization  # the later layer, where the fix goes (its path, or the layer itself)
        owner = next((b for b in [cluster.entry, *cluster.flux] if any(o is ks for o in b.objects)), None) if ks else None
        found = ctx.finding(ks, owner, "object-collision", message, hint, field="spec.path") if owner else ctx.finding(
            {"kind": kind, "metadata": {"name": name, **({"namespace": ns} if ns else {})}}, builds[1], "object-collision", message, hint)
        out.append(_at_entry_listing(ctx, root, cluster, builds) or found)

    applied = cluster.applied()
    unit = Build(f"cluster {cluster.name}", f"{ctx.config.clusters}/{cluster.name}", cluster=cluster.name)
    out += kueue_rules(ctx, unit, [o for _, o in applied if not is_flux_kustomization(o)], {id(o): b for b, o in applied if b.dir})
    return out


# -- Sample workloads ------------------------------------------------------------------------------


_VARIABLE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)")  # ${VAR}, ${VAR:=default}; $${VAR} is an escape


def _at_entry_listing(ctx: Context, root: Path, cluster: ClusterRender, builds: list[Build]) -> Finding | None:
    """An object-collision between the cluster's entry point and a layer, at the entry's resources line that pulls the
    layer's directory in (None when the entry is not one of them or lists no such line)."""
    if builds[0] is not cluster.entry:
        return None
    layers = {(root / b.dir).resolve() for b in builds[1:]}
    inside = sorted(p.relative_to(root.resolve()).as_posix() for p in layers if p.is_relative_to((root / cluster.entry.dir).resolve()))
    if cluster.bootstrap and inside:  # Flux's generator lists every directory below the entry that has a kustomization file
        layer = next(b for b in builds[1:] if (root / b.dir).resolve().is_relative_to((root / cluster.entry.dir).resolve()))
        found = ctx.finding(layer.flux_kustomization or {}, cluster.entry, "object-collision",
                            f"{cluster.entry.dir} has no kustomization file, so Flux's generator builds it with every directory below it "
                            f"that has one: {', '.join(inside)}, which layer(s) {', '.join(b.id for b in builds[1:])} apply as well; the "
                            "two fight over its objects and prune each other",
                            f"add {cluster.entry.dir}/kustomization.yaml listing only the cluster's Flux Kustomization files, or move "
                            f"the layer's directory out of {cluster.entry.dir} (e.g. under flux/) and point spec.path there "
                            "(a .sourceignore pattern would leave it out of the layer's build too)", field="spec.path")
        return found if found.line else replace(found, file=cluster.entry_file)
    if cluster.bootstrap or cluster.entry_name not in KUSTOMIZATION_FILES:
        return None
    listed = as_list(as_map(_entry_doc(root, cluster)).get("resources"))
    for i, item in enumerate(listed):
        if isinstance(item, str) and layers & reachable((root / cluster.entry.dir / item)):
            file = cluster.entry_file
            return Finding(file, line_at(root, file, None, ["resources", i]), f"cluster/{cluster.name}", "object-collision",
                           f"lists {item}, the directory of layer(s) {', '.join(b.id for b in builds[1:])} as well: the entry point "
                           "(which flux-system applies) and the layer both apply its objects, fight over them and prune each other",
                           f"remove `- {item}` from {file}: the entry point lists the layer's Flux Kustomization, which applies it",
                           f"cluster {cluster.name}")
    return None


def _entry_doc(root: Path, cluster: ClusterRender):
    try:
        return load_yaml(root / cluster.entry_file)
    except SourceError:
        return None


def _unsubstituted(ctx: Context, cluster: ClusterRender, build: Build, ks: dict) -> list[Finding]:
    """flux-variable-undefined for a Flux Kustomization without spec.postBuild whose objects use ${VAR}s the cluster
    substitutes elsewhere (its variables, another layer's substitute): kustomize-controller substitutes nothing
    without postBuild, so they are applied as written."""
    if isinstance(as_map(ks.get("spec")).get("postBuild"), dict) or not build.objects:
        return []
    known = {str(k) for v in cluster.variables for k in as_map(v.get("data"))}
    for other in cluster.kustomizations():
        known |= {str(k) for k in as_map(as_map(as_map(other.get("spec")).get("postBuild")).get("substitute"))}
    used: dict[str, dict] = {}
    for obj in build.objects:
        for name in _VARIABLE.findall(repr(obj)):
            used.setdefault(name, obj)
    meant = sorted(n for n in used if n in known)
    if not meant:
        return []
    first = used[meant[0]]
    names = ', '.join('${' + n + '}' for n in meant)
    if ks:
        return [ctx.finding(ks, build, "flux-variable-undefined",
                            f"has no spec.postBuild, so kustomize-controller substitutes nothing: {names} "
                            f"(which the cluster substitutes elsewhere) reach the cluster as written, e.g. in {resource_id(first)}",
                            f"add spec.postBuild with substitute/substituteFrom (as the cluster's other layers have: {ctx.config.variables_file(cluster.name)})",
                            field="spec")]
    # The entry point, which flux-system applies without postBuild: at the object, which a layer should apply instead.
    return [ctx.finding(first, build, "flux-variable-undefined",
                        f"is applied by cluster {cluster.name}'s entry point ({cluster.entry_file}), which Flux builds without postBuild "
                        f"substitution: {names} (which the cluster's layers substitute) reach the cluster as written",
                        f"apply it through a layer with spec.postBuild (a Flux Kustomization such as the queues layer), not from "
                        f"{cluster.entry_file}")]
