"""Cross-resource rules of the static gate: what schemas alone cannot see.

What one object's validation decides (quantities, coveredResources, borrowing limits without a
cohort, shutdownAfterJobFinishes) is left to the apiserver's and Kueue's own code in
tools/fluxbuild's check (`api-validation`, `kueue-webhook`), so each problem is reported once, by them.

Every rule returns Findings; `RULES` documents each id with the fix it suggests.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from harness.core import format_quantity, parse_quantity

from harness.gate import config, workloads
from harness.gate.findings import Finding
from harness.gate.kustomize_warnings import reachable
from harness.gate.origin import line_at
from harness.gate.render import Build, ClusterRender, is_flux_kustomization
from harness.gate.sources import (SourceError, Sources, as_list, as_map, as_maps, in_namespace_of, load_yaml, name_key, reachable_dirs,
                                  resource_id)

KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

RULES = {
    "file-read": "every configuration file can be read (no dangling symlink, no directory named *.yaml)",
    "yaml-syntax": "every YAML file is UTF-8 and parses",
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
    "flux-variable-undefined": "every ${VAR} in a Flux Kustomization's output is defined",
    "sample-render": "every sample listed in clusters/*/samples.yaml (the configuration's samples file) renders",
    "sample-queue": "a sample names a LocalQueue that exists in its namespace",
    "sample-vars": "every `vars` entry of a samples.yaml entry is a ${VAR} its sample uses (a misspelt one leaves the default in place)",
    "sample-suspend": "a sample is created suspended",
    "sample-ttl-holds-nodes": "a sample's RayCluster is deleted as its job ends (ttlSecondsAfterFinished: 0), since Kueue gives its quota to the next job at once (warning)",
    "sample-fits": "a sample fits its ClusterQueue's nominal quota plus borrowing limit",
}


class Context:
    """Where findings point: the sources index plus the build a finding came from."""

    def __init__(self, sources: Sources, gate_config: config.GateConfig = config.DEFAULTS):
        self.sources = sources
        self.config = gate_config
        self.failed_dirs: set[str] = set()  # directories whose plain build fails (set once rendered)
        self.renames = None  # renames.Renames (set once rendered): a missing name a namePrefix/nameSuffix explains
        self.sample_vars: dict[int, dict[str, tuple[str, int | None]]] = {}  # id(rendered sample) -> VAR -> (file, line)
        self.sample_related: dict[int, list[dict]] = {}  # id(rendered sample) -> its namespace's LimitRanges, ResourceQuotas on its cluster
        self.sample_entries: dict[int, tuple[str, int | None]] = {}  # id(rendered sample) -> (samples file, line of its entry)

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
                                   *(o + "/" for o in self.config.queue_overlays), "overlays/", "base/", f"{clusters}/", "flux/") if p)
        src, line = self.sources.locate(obj, (file,) if file else prefer, field=field)
        ctx = context if context is not None else (build.id if build else (f"cluster {cluster}" if cluster else ""))
        return Finding(src, line, resource_id(obj), rule, message, hint, ctx)


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


def _qty(value) -> Decimal | None:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        return None


# -- Kueue objects ----------------------------------------------------------------------------
def kueue_rules(ctx: Context, build: Build, objects: list[dict]) -> list[Finding]:
    out = []
    flavors = {o["metadata"]["name"] for o in objects if o.get("kind") == "ResourceFlavor"}
    cqs = {o["metadata"]["name"] for o in objects if o.get("kind") == "ClusterQueue"}
    for o in objects:
        kind = o.get("kind")
        if kind == "LocalQueue" and o.get("apiVersion") == KUEUE_API:
            target = as_map(o.get("spec")).get("clusterQueue")
            meta = as_map(o.get("metadata"))
            if name_key(target) not in cqs and not ctx.renamed(
                    "ClusterQueue", target, cqs, f"LocalQueue {meta.get('namespace')}/{meta.get('name')} spec.clusterQueue {target!r}"):
                out.append(ctx.finding(o, build, "localqueue-clusterqueue",
                                       f"spec.clusterQueue {target!r} is not defined (have: {', '.join(sorted(cqs)) or 'none'})",
                                       "point spec.clusterQueue at a ClusterQueue of the same overlay, or add that ClusterQueue",
                                       field="spec.clusterQueue"))
        if kind == "ClusterQueue" and o.get("apiVersion") == KUEUE_API:
            out += _cluster_queue_rules(ctx, build, o, flavors)
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
                                       "add the ResourceFlavor (base/resource-flavors.yaml) or fix the flavor name",
                                       field=f"spec.resourceGroups[{gi}].flavors[{fi}].name"))
    return out


# -- Clusters and Flux --------------------------------------------------------------------------
def cluster_rules(ctx: Context, root: Path, cluster: ClusterRender) -> list[Finding]:
    out = []
    entry_file = cluster.entry_file
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
    if known and len(overlays) != 1 and not (not overlays and any(b.error for b in cluster.flux)):
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
        if build.error and not ctx.cause_of(build.dir, flux=True):  # else that cause's own finding stands for it
            rule = "flux-path" if "not found" in build.error or "escapes" in build.error else "kustomize-build"
            out.append(ctx.finding(ks, build, rule, f"spec.path {as_map(ks.get('spec')).get('path')!r}: {build.error}",
                                   "point spec.path at a directory of this repository that builds with kustomize",
                                   field="spec.path" if rule == "flux-path" else None))
        deps = as_map(ks.get("spec")).get("dependsOn")
        for i, dep in enumerate(deps if isinstance(deps, list) else []):
            if not isinstance(dep, dict):
                continue  # the schema check reports it
            target = (name_key(dep.get("namespace", ns)), name_key(dep.get("name")))
            graph[me].append(target)
            if target not in names:
                out.append(ctx.finding(ks, build, "flux-depends-on", f"dependsOn {target[0]}/{target[1]} is not a Kustomization of this cluster",
                                       "fix the name, or add the Kustomization it should wait for", field=f"spec.dependsOn[{i}].name"))
        for msg in build.undefined:
            out.append(ctx.finding(ks, build, "flux-variable-undefined", f"postBuild substitution: {msg}",
                                   f"define the variable in postBuild.substitute or in the substituteFrom ConfigMap (see {ctx.config.variables_file(cluster.name)})"))
    for cycle in _cycles(graph):
        ks = next(k for k in kss if (as_map(k.get("metadata")).get("namespace", "flux-system"), k["metadata"]["name"]) == cycle[0])
        out.append(ctx.finding(ks, None, "flux-cycle", "dependsOn cycle: " + " -> ".join(n for _, n in cycle + [cycle[0]]),
                               "remove one dependsOn edge; layers must form a chain (controllers, then queues)", cluster=cluster.name))

    # The same object applied by two Flux Kustomizations: they would fight and prune each other.
    owners: dict[tuple, list[Build]] = defaultdict(list)
    for build in cluster.flux:
        for o in build.objects:
            group = str(o.get("apiVersion", "")).split("/")[0] if "/" in str(o.get("apiVersion", "")) else ""
            key = (group, o.get("kind"), as_map(o.get("metadata")).get("namespace"), as_map(o.get("metadata")).get("name"))
            owners[key].append(build)
    for (group, kind, ns, name), builds in owners.items():
        if len(builds) > 1:
            obj = {"kind": kind, "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
            out.append(ctx.finding(obj, builds[1], "object-collision",
                                   f"applied by {len(builds)} Flux Kustomizations: {', '.join(b.id for b in builds)}",
                                   "let exactly one layer own each object (one queue overlay per cluster)"))

    objects = [o for _, o in cluster.applied()]
    unit = Build(f"cluster {cluster.name}", f"{ctx.config.clusters}/{cluster.name}", cluster=cluster.name)
    out += kueue_rules(ctx, unit, [o for o in objects if not is_flux_kustomization(o)])
    return out


def _cycles(graph: dict) -> list[list]:
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in list(graph):
        if node not in state:
            visit(node, [])
    return cycles


# -- Sample workloads ------------------------------------------------------------------------------
def sample_rules(ctx: Context, root: Path, cluster: ClusterRender) -> tuple[list[Finding], list[tuple[str, dict, int | None]], list[tuple[str, Finding]]]:
    """Checks clusters/<name>/samples.yaml against the cluster's queues; returns (sample, RayJob,
    samples.yaml line of its entry) for every entry that renders too, and the sample-fits findings
    apart, each with the ClusterQueue it presumes (resource id): one the apiserver or Kueue's
    webhook rejects is the cause, and the caller drops them then."""
    out, rendered, fits = [], [], []
    samples_file = ctx.config.samples_file(cluster.name)
    path = root / samples_file
    if not path.exists():
        return out, rendered, fits
    try:
        entries = load_yaml(path, root) or []
    except SourceError as err:
        return [err.finding], rendered, fits
    if not isinstance(entries, list):
        return [Finding(samples_file, None, "", "sample-render", f"is a {type(entries).__name__}, not a list of samples",
                        f"make {ctx.config.samples} a list of entries `- sample: NAME` / `queue: LQ` / `vars: {...}`", f"cluster {cluster.name}")], rendered, fits
    objects = [o for _, o in cluster.applied()]
    complete = not cluster.entry.error and not any(b.error for b in cluster.flux)
    lqs = {(name_key(as_map(o.get("metadata")).get("namespace")), name_key(o["metadata"]["name"])): o for o in objects if o.get("kind") == "LocalQueue"}
    cqs = {name_key(o["metadata"]["name"]): o for o in objects if o.get("kind") == "ClusterQueue"}
    lenders = [*cqs.values(), *(o for o in objects if o.get("kind") == "Cohort")]  # what a ClusterQueue may borrow from
    for i, entry in enumerate(entries):
        e = entry if isinstance(entry, dict) else {}
        where = f"cluster {cluster.name}, sample {e.get('sample')} on {e.get('queue')}"
        # A sample's findings point at its entry (what is submitted where, with which vars); a
        # value written in the workload file, at that file's line.
        entry_line = line_at(root, samples_file, None, [i])
        try:
            sample, job = workloads.render_entry(entry, root)
        except workloads.WorkloadError as err:
            out.append(Finding(samples_file, entry_line, f"sample/{e.get('sample')}", "sample-render", str(err),
                               "each entry needs `sample` (a file in workloads/) and `queue`; pass every ${VAR} in `vars`", where))
            continue
        wfile = f"workloads/{sample}.yaml"
        if wfile in ctx.sources.broken_files():
            continue  # its YAML error is the finding; what PyYAML made of the file is not what kubectl would submit
        for name, near in workloads.unused_vars(sample, e.get("vars") or {}, root).items():
            meant = f"did you mean {near[0]}?" if len(near) == 1 else f"it uses {', '.join(near)}"
            out.append(Finding(samples_file, line_at(root, samples_file, None, [i, "vars", name]) or entry_line, f"sample/{sample}",
                               "sample-vars", f"vars sets {name}, which {wfile} does not use ({meant}): the sample is checked "
                               "with its default instead", f"spell the variable as {wfile} does, or remove it from `vars`", where))
        rendered.append((sample, job, entry_line))
        ctx.sample_entries[id(job)] = (samples_file, entry_line)
        ctx.sample_vars[id(job)] = {str(k): (samples_file, line_at(root, samples_file, None, [i, "vars", k]) or entry_line)
                                    for k in as_map(e.get("vars"))}
        ctx.sample_related[id(job)] = in_namespace_of(job, objects)
        spec = as_map(job.get("spec"))
        if spec.get("suspend") is not True:
            out.append(ctx.finding(job, None, "sample-suspend", "spec.suspend is not true: the RayJob would start before Kueue admits it",
                                   "set spec.suspend: true; Kueue unsuspends it on admission", file=wfile, context=where, field="spec.suspend"))
        ttl = spec.get("ttlSecondsAfterFinished")
        if spec.get("shutdownAfterJobFinishes") is True and isinstance(ttl, int) and ttl > 0:
            # Kueue marks the Workload Finished when the RayJob ends and admits the next job at once;
            # KubeRay deletes the RayCluster only ttlSecondsAfterFinished later (kueue#3994).
            found = ctx.finding(job, None, "sample-ttl-holds-nodes",
                                f"ttlSecondsAfterFinished is {ttl}: Kueue frees the job's quota when it ends, but its RayCluster keeps "
                                f"its nodes for {ttl} s more, so the job admitted next waits Pending for them",
                                "set spec.ttlSecondsAfterFinished: 0 (keep logs outside the cluster), or leave headroom in the pools for it",
                                file=wfile, context=where, field="spec.ttlSecondsAfterFinished")
            out.append(replace(found, severity="warning"))
        if not complete:
            continue  # a layer did not render (its own finding says why): the cluster's queues are unknown
        ns = as_map(job.get("metadata")).get("namespace", "default")
        qname = as_map(as_map(job.get("metadata")).get("labels")).get(QUEUE_LABEL)
        if qname is None and (name_key(ns), "default") in lqs and isinstance(meta := job.get("metadata"), dict):
            # Kueue's RayJob webhook labels it with its namespace's LocalQueue "default" (LocalQueueDefaulting, GA in 0.17)
            meta["labels"], qname = {**as_map(meta.get("labels")), QUEUE_LABEL: "default"}, "default"
        if qname is None:  # Kueue manages no job without it (manageJobsWithoutQueueName aside): suspended, it never starts
            out.append(ctx.finding(job, None, "sample-queue", f"has no label {QUEUE_LABEL} and namespace {ns} has no LocalQueue "
                                   "named default (which Kueue's webhook would put there): Kueue never admits it, and with spec.suspend: "
                                   "true it never starts", f"add metadata.labels {QUEUE_LABEL}: ${{QUEUE_NAME}} "
                                   "(scripts/submit-workload fills it from samples.yaml `queue`)", file=wfile, context=where, field="metadata.labels"))
            continue
        lq = lqs.get((name_key(ns), name_key(qname)))
        reference = f"sample {sample} ({samples_file}:{entry_line}) queue {ns}/{qname}"
        if lq is None and (ctx.renamed("LocalQueue", qname, {n for (lns, n) in lqs if lns == ns}, reference)
                           or ctx.moved(cluster.name, "LocalQueue", ns, qname, reference, lambda other: (other, qname) in lqs)):
            continue
        if lq is None:
            have = ", ".join(sorted(n for (lns, n) in lqs if lns == ns)) or "none"
            text = (f"label {QUEUE_LABEL}={qname!r}: no such LocalQueue in namespace {ns} on this cluster (have: {have})",
                    "submit to one of the cluster's LocalQueues (samples.yaml `queue`)")
            elsewhere = sorted(lns for (lns, n) in lqs if n == qname and lns != ns)
            if elsewhere:  # the queue exists, in another namespace: the job's namespace is what is wrong
                out.append(ctx.finding(job, None, "sample-queue", f"{text[0]}; it is in namespace {', '.join(map(str, elsewhere))}",
                                       f"submit the sample in namespace {elsewhere[0]} (metadata.namespace of {wfile})",
                                       file=wfile, context=where, field="metadata.namespace"))
            elif "queue" in e:  # the entry's queue fills the label
                out.append(Finding(samples_file, line_at(root, samples_file, None, [i, "queue"]), resource_id(job), "sample-queue", *text, where))
            else:
                out.append(ctx.finding(job, None, "sample-queue", *text, file=wfile, context=where, field=f"metadata.labels[{QUEUE_LABEL}]"))
            continue
        cq = cqs.get(name_key(as_map(lq.get("spec")).get("clusterQueue")))
        if cq:
            fits += [(resource_id(cq), f) for f in _fit(job, cq, lenders, samples_file, entry_line, wfile, where)]
    return out, rendered, fits


def _capacity(cq: dict, cqs: list[dict]) -> dict[str, Decimal]:
    """Most one workload can get per resource from this ClusterQueue: the best flavor's nominal
    quota plus what it may borrow (bounded by what the rest of the cohort has, the Cohort's own
    resourceGroups included; a parent Cohort's are not counted)."""
    spec = as_map(cq.get("spec"))
    cohort = spec.get("cohortName")
    peers = [c for c in cqs if cohort and c is not cq and (as_map(c.get("spec")).get("cohortName") == cohort
                                                                     or (c.get("kind") == "Cohort" and as_map(c.get("metadata")).get("name") == cohort))]
    best: dict[str, Decimal] = {}
    for group in as_maps(spec.get("resourceGroups")):
        for flavor in as_maps(group.get("flavors")):
            for r in as_maps(flavor.get("resources")):
                name = r.get("name")
                if not isinstance(name, str):
                    continue  # the schema check reports it
                nominal = _qty(r.get("nominalQuota", 0)) or Decimal(0)
                extra = Decimal(0)
                if cohort:
                    lendable = sum((_peer_lendable(p, flavor.get("name"), name) for p in peers), Decimal(0))
                    # A limit that is no quantity is the schema check's finding: no borrowing is counted.
                    limit = (_qty(r["borrowingLimit"]) or Decimal(0)) if "borrowingLimit" in r else None
                    extra = lendable if limit is None else min(limit, lendable)
                best[name] = max(best.get(name, Decimal(0)), nominal + extra)
    return best


def _peer_lendable(peer: dict, flavor: str, resource: str) -> Decimal:
    for group in as_maps(as_map(peer.get("spec")).get("resourceGroups")):
        for f in as_maps(group.get("flavors")):
            if f.get("name") == flavor:
                for r in as_maps(f.get("resources")):
                    if r.get("name") == resource:
                        nominal = _qty(r.get("nominalQuota", 0)) or Decimal(0)
                        lending = _qty(r["lendingLimit"]) if "lendingLimit" in r else None
                        return nominal if lending is None else min(nominal, lending)
    return Decimal(0)


def _fit(job: dict, cq: dict, cqs: list[dict], samples_file: str, line: int | None, wfile: str, where: str) -> list[Finding]:
    """At the sample's samples.yaml entry: the job as rendered from `wfile` with the entry's vars."""
    out = []
    need: dict[str, Decimal] = defaultdict(Decimal)
    for _name, count, requests in workloads.pod_sets(job):
        for res, qty in requests.items():
            need[res] += qty * count
    capacity = _capacity(cq, cqs)
    for res, qty in sorted(need.items()):
        if qty == 0:
            continue
        if res not in capacity:
            out.append(Finding(samples_file, line, resource_id(job), "sample-fits",
                               f"{wfile} requests {format_quantity(res, qty)} {res}, which ClusterQueue {cq['metadata']['name']} does not cover: Kueue never admits it",
                               f"add {res} to a resource group of {cq['metadata']['name']}, or drop the request", where))
        elif qty > capacity[res]:
            out.append(Finding(samples_file, line, resource_id(job), "sample-fits",
                               f"{wfile} as submitted needs {format_quantity(res, qty)} {res} in total but ClusterQueue {cq['metadata']['name']} "
                               f"can give at most {format_quantity(res, capacity[res])} (nominal + borrowing): it would pend forever",
                               "shrink the job (fewer workers, smaller pods) or raise the quota through the cluster's gpu-sku component", where))
    return out
