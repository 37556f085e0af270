"""Kustomize inputs that are silently not applied (warnings: the build succeeds without them).

- A YAML manifest in a kustomization's folder (or below it, up to the next kustomization) that
  no kustomization.yaml of the repository lists (resources, components, patches, generators, ...),
  and a document after the first of a kustomization file (kustomize reads the first only).
- A targeted patch that matches no object in any build that includes it: `patches` entries with
  a `target`, `patchesJson6902`, and a Flux Kustomization's `spec.patches`. Tried with the real
  renderer (fluxbuild, kustomize api v0.21): such a patch is ignored, the build passes; an
  untargeted strategic-merge patch (`patches` without target, `patchesStrategicMerge`) that
  matches nothing fails the build instead, which kustomize-build already reports, so it is not
  probed here.

Matching is decided by kustomize itself, not re-implemented: the builds that include a targeted
patch are rendered once more from a scratch copy of the files they read, with a probe patch of
the same target (adding one top-level mark field) in front of each targeted patch; a patch whose
probe mark appears on no rendered object matched nothing. (The same probes record which patch
writes a field: harness.gate.writers.)
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.gate.config import CONFIG_FILE
from harness.gate.origin import entry_ops, line_at, smp_patches
from harness.gate.findings import Finding
from harness.gate.node_labels import deprecated_label_findings
from harness.gate.render import Build, ClusterRender, FluxBuild, run_fluxbuild
from harness.gate.writers import Writers, probe_pointer, writer_ops
from harness.gate.sources import (KUSTOMIZATION_FILES, SKIP_DIRS, SafeDumper, SafeLoader, SourceError, as_list, as_map, kustomization_dirs,
                                  kustomization_file, kustomization_path, load_yaml, read_source, resource_id)

RULES = {
    "kustomize-unlisted": "(warning) every YAML manifest in a kustomization's folder is listed by a kustomization, and a kustomization file "
                          "holds one document (kustomize reads the first); what is unlisted is silently not applied",
    "patch-unmatched": "(warning) every targeted patch matches an object in some build that includes it; kustomize silently ignores one that matches nothing",
    "cluster-unchecked": "(warning) every `flux bootstrap` cluster directory (flux-system/gotk-sync.yaml) is one the gate takes as a cluster: "
                         "one nested below a directory of the clusters directory is not checked; and the clusters directory holds one",
}
PATH_LISTS = ("resources", "bases", "components", "crds", "configurations", "generators", "transformers", "validators", "patchesStrategicMerge")
PATH_ENTRIES = ("patches", "patchesJson6902", "replacements")
PROBE = "gate-probe.invalid/p"


def kustomization_doc(directory: Path) -> dict:
    try:
        doc = load_yaml(kustomization_path(directory), first=True)
    except SourceError:
        return {}  # yaml-syntax reports it
    return doc if isinstance(doc, dict) else {}


def references(directory: Path) -> tuple[set[Path], set[Path]]:
    """(files, directories) a kustomization.yaml names, resolved; inline YAML and URLs are skipped."""
    doc = kustomization_doc(directory)
    names = [e for key in PATH_LISTS for e in as_list(doc.get(key))]
    names += [as_map(e).get("path") for key in PATH_ENTRIES for e in as_list(doc.get(key))]
    names += [as_map(doc.get("openapi")).get("path")] + [as_map(e).get("valuesFile") for e in as_list(doc.get("helmCharts"))]
    for gen in (g for key in ("configMapGenerator", "secretGenerator") for g in as_list(doc.get(key))):
        gen = as_map(gen)
        names += [str(f).partition("=")[2] or str(f) for f in as_list(gen.get("files"))] + as_list(gen.get("envs")) + [gen.get("env")]
    files, dirs = set(), set()
    for name in names:
        if not isinstance(name, str) or not name or "\n" in name or "\0" in name or "://" in name or name.startswith("git@"):
            continue
        try:
            target = (directory / name).resolve()
            (dirs if target.is_dir() else files).add(target)
        except (OSError, RuntimeError):
            continue  # the build reports it
    return files, dirs


def reachable(start: Path, seen: set[Path] | None = None) -> set[Path]:
    """Kustomization directories a build of `start` reads (itself, its resources and components)."""
    seen = set() if seen is None else seen
    start = start.resolve()
    if start in seen or kustomization_file(start) is None:
        return seen
    seen.add(start)
    for d in references(start)[1]:
        reachable(d, seen)
    return seen


def local_kustomization_dirs(root: Path) -> set[Path]:
    """The repository's kustomization directories, resolved (a symlink out of the checkout is left out)."""
    return {d.resolve() for d in kustomization_dirs(root) if d.resolve().is_relative_to(root)}


# -- Unlisted manifests ---------------------------------------------------------------------------
def _owned_files(directory: Path, kustomization_roots: set[Path]) -> list[Path]:
    """YAML files in `directory` and below it, up to the next kustomization folder."""
    out = []
    for dirpath, dirnames, filenames in os.walk(directory):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and (here / d).resolve() not in kustomization_roots]
        out += [here / f for f in filenames if f.endswith((".yaml", ".yml")) and f not in KUSTOMIZATION_FILES]
    return out


def unlisted_manifests(ctx, root: Path, clusters: list[ClusterRender] = ()) -> list[Finding]:
    """kustomize-unlisted: YAML manifests under a kustomization directory that no kustomization lists. A Flux
    Kustomization's path without a kustomization file of its own is one too: kustomize-controller generates one
    listing every manifest under it, so those are applied."""
    root = root.resolve()
    generated = {(root / b.dir).resolve() for c in clusters for b in c.flux if kustomization_file(root / b.dir) is None}
    dirs = local_kustomization_dirs(root) | {d for d in generated if d.is_relative_to(root)}
    listed = set()
    for d in dirs - generated:
        listed |= references(d)[0]
    docs: dict[str, list] = {}
    for doc in ctx.sources.docs:
        if isinstance(doc.obj.get("apiVersion"), str) and isinstance(doc.obj.get("kind"), str):
            docs.setdefault(doc.file, []).append(doc)
    out = []
    for d in sorted(dirs - generated):  # (a generated kustomization lists every manifest)
        if not kustomization_doc(d):
            continue  # a kustomization that does not parse or is empty fails the build: that is the finding, not what it leaves out
        out += _dropped_documents(ctx, root, d)
        cluster_dir = d.parent == root / ctx.config.clusters
        for path in sorted(_owned_files(d, dirs)):
            rel = path.relative_to(root).as_posix()
            if rel not in docs or path.resolve() in listed or (cluster_dir and path.name in (ctx.config.samples, ctx.config.cluster_variables)):
                continue
            first = docs[rel][0]
            kust = kustomization_path(d).relative_to(root).as_posix()
            out.append(Finding(rel, first.line, resource_id(first.obj), "kustomize-unlisted",
                               f"no kustomization lists this file, so {len(docs[rel])} object(s) in it are never applied",
                               f"add `- {path.relative_to(d).as_posix()}` to resources: in {kust}, or delete the file if it is not meant to be applied",
                               kust, severity="warning"))
    return out


def _dropped_documents(ctx, root: Path, directory: Path) -> list[Finding]:
    """A document after the first of `directory`'s kustomization file: kustomize reads the first only (types.Kustomization.
    Unmarshal: sigs.k8s.io/yaml's YAMLToJSON converts one document, go-yaml v2's unmarshal parses one), and drops the rest
    in silence."""
    file = kustomization_path(directory)
    rel = file.relative_to(root).as_posix()
    try:
        nodes = list(yaml.compose_all(read_source(file, root), Loader=SafeLoader))
    except (SourceError, yaml.YAMLError):
        return []  # yaml-syntax reports it
    if len(nodes) < 2:
        return []
    end = nodes[0].end_mark.line + 1
    return [Finding(rel, doc.line, resource_id(doc.obj) if doc.obj.get("kind") else "", "kustomize-unlisted",
                    "kustomize reads only the first document of a kustomization file, so this document after a `---` is never "
                    "applied (kustomize builds the directory without it, and says nothing)",
                    f"move it to a file of its own and add that file to resources: in {rel}, or delete it if it is not meant to be "
                    "applied", rel, severity="warning")
            for doc in ctx.sources.docs if doc.file == rel and doc.line > end]


# -- Unmatched patches ----------------------------------------------------------------------------
@dataclass
class Patch:
    key: str  # probe annotation key
    file: str  # repository-relative file that writes the patch
    line: int | None
    what: str  # e.g. "patches[1]"
    target: dict
    ops: list  # what it writes (origin.entry_ops, origin.smp_patches), whose writer the probe records (harness.gate.writers)
    component: bool = False  # written in a kustomize Component (kind: Component)
    judged: bool = True  # False: an untargeted strategic-merge patch (one that matches nothing fails the build instead)


def _probe(target: dict, key: str, ops: list) -> dict:
    """The probe patch: it marks the objects `target` selects with a top-level field of its own (a patch that replaces or
    removes metadata.annotations or labels cannot wipe it), and records `key` as the writer of what `ops` write."""
    return {"target": target, "patch": json.dumps([{"op": "add", "path": probe_pointer(key), "value": "1"}, *writer_ops(ops, key)])}


def _selector(ident: dict) -> dict:
    """The target an untargeted strategic-merge patch selects by: its kind and name (and namespace and group as written)."""
    group = str(ident.get("apiVersion", "")).rpartition("/")[0]
    return {k: v for k, v in (("group", group), ("kind", ident.get("kind")), ("name", ident.get("name")),
                              ("namespace", ident.get("namespace"))) if v}


def _with_probes(entries: list, at: list, file: str, doc_line: int | None, root: Path, patches: list[Patch],
                 component: bool = False, keep: bool = True) -> list:
    """`entries` (the patch list at path `at` of the document, a kustomize Component's when `component`; without them
    unless `keep`) with a probe in front of every patch, targeted or a strategic merge naming its object; the patches
    are recorded."""
    out = []
    for i, entry in enumerate(entries):
        target, where = as_map(entry).get("target"), [*at, i]
        line, what = line_at(root, file, doc_line, where), f"{'.'.join(at)}[{i}]"
        smp = smp_patches(root, file, doc_line, where)
        if isinstance(target, dict) and target:
            ops = entry_ops(root, file, doc_line, where) + [w for _, writes in smp for w in writes]
            patches.append(Patch(f"{PROBE}{len(patches)}", file, line, what, target, ops, component))
            out.append(_probe(target, patches[-1].key, ops))
        else:
            for ident, writes in smp:
                if ident.get("kind") and ident.get("name") and writes:
                    patches.append(Patch(f"{PROBE}{len(patches)}", file, line, what, _selector(ident), writes, component, judged=False))
                    out.append(_probe(patches[-1].target, patches[-1].key, writes))
        if keep:
            out.append(entry)
    return out


def _inputs(root: Path, dirs: set[Path], extra_trees: set[Path]) -> list[str]:
    """The files the probed builds read, relative to the checkout (one outside it: the build reports it)."""
    files = {kustomization_path(d) for d in dirs}
    for d in dirs:
        files |= references(d)[0]
    for tree in extra_trees:
        files |= {Path(p) / f for p, _, fs in os.walk(tree) for f in fs}
    return sorted(f.relative_to(root).as_posix() for f in files if f.is_relative_to(root))


def unmatched_patches(ctx, root: Path, builds: list[Build], clusters: list[ClusterRender],
                      session: FluxBuild | None = None) -> list[Finding]:
    return probe_patches(ctx, root, builds, clusters, session)()


def probe_patches(ctx, root: Path, builds: list[Build], clusters: list[ClusterRender],
                  session: FluxBuild | None = None) -> Callable[[], list[Finding]]:
    """Sends the patch probe to `session`'s helper (or runs it in a helper of its own); the returned
    function waits for it and gives the patch-unmatched findings, so the helper renders while the caller goes on."""
    root = root.resolve()
    patches: list[Patch] = []
    rewritten: dict[Path, dict] = {}
    for d in sorted(local_kustomization_dirs(root)):
        doc = kustomization_doc(d)
        rel = kustomization_path(d).relative_to(root).as_posix()
        before = len(patches)
        component = doc.get("kind") == "Component"
        # patchesStrategicMerge applies before patches (kustomize's transformer order): its probes lead the patches
        smp = _with_probes(as_list(doc.get("patchesStrategicMerge")), ["patchesStrategicMerge"], rel, None, root, patches, component, keep=False)
        probed = {f: _with_probes(as_list(doc.get(f)), [f], rel, None, root, patches, component) for f in ("patches", "patchesJson6902")}
        probed["patches"] = smp + probed["patches"]
        if len(patches) > before:
            rewritten[d] = {**doc, **{f: v for f, v in probed.items() if v}}
    owners = {p.key: {d for d in rewritten if p.file == kustomization_path(d).relative_to(root).as_posix()} for p in patches}
    jobs, job_dirs, include, blocked = [], set(), {}, set()
    for b in builds if rewritten else []:
        dirs = reachable(root / b.dir)
        if b.error:
            blocked |= dirs  # a patch of a build that fails cannot be judged
        elif dirs & set(rewritten):
            jobs.append({"id": b.dir, "dir": b.dir})
            job_dirs |= dirs
            include[b.dir] = dirs
    flux_trees = set()
    for c in clusters:
        for b in (b for b in c.flux if not b.error and b.objects and b.flux_kustomization):
            ks = b.flux_kustomization
            spec = as_map(ks.get("spec"))
            before = len(patches)
            file = ctx.finding(ks, None, "", "", "", cluster=c.name)
            entries = _with_probes(as_list(spec.get("patches")), ["spec", "patches"], file.file, file.line, root, patches)
            # its spec.components apply after the kustomization's own patches: a probed one is rendered in this layer too
            components = {d for e in as_list(spec.get("components")) if isinstance(e, str) and "\0" not in e
                          for d in reachable(root / b.dir / e)}
            if len(patches) == before and not components & set(rewritten):
                continue
            for p in patches[before:]:
                owners[p.key] = {b.id}
            jobs.append({"id": b.id, "kustomization": {**ks, "spec": {**spec, "patches": entries}} if entries else ks,
                         "sources": c.variables})
            include[b.id] = {b.id} | reachable(root / b.dir) | components
            flux_trees.add((root / b.dir).resolve())
            job_dirs |= reachable(root / b.dir) | components
    if not jobs:
        ctx.writers = Writers(root=root)
        return list
    # The helper builds the jobs in a scratch tree of these files of its copy, with the rewritten
    # kustomizations over them. A build the probe breaks comes back as that job's error (judged
    # below); an exception here means the probe itself could not run: exit 2, never a pass.
    probe = {"files": _inputs(root, job_dirs, flux_trees),
             "overlay": {kustomization_path(d).relative_to(root).as_posix(): yaml.dump(doc, Dumper=SafeDumper, sort_keys=False) for d, doc in rewritten.items()}}
    if session is not None:
        pending = session.submit(jobs, probe)
    else:
        results = run_fluxbuild(root, jobs, probe)
        pending = lambda: results  # noqa: E731
    ctx.writers = Writers({p.key: p.ops for p in patches}, pending, root)
    return lambda: _judged(patches, owners, include, blocked, jobs, pending())


def _judged(patches: list[Patch], owners: dict[str, set], include: dict[str, set], blocked: set, jobs: list[dict],
            results: dict[str, dict]) -> list[Finding]:
    """patch-unmatched: the patches whose probe annotation no judged build shows."""
    seen, judged = set(), set()
    for job in jobs:
        res = results.get(job["id"]) or {"error": "no result"}
        if res.get("error"):
            blocked |= include[job["id"]]
            continue
        judged |= include[job["id"]]
        for o in res.get("objects") or []:
            seen |= {k for k in o if str(k).startswith(PROBE)}
    out = []
    for p in patches:
        mine = owners.get(p.key, set())
        if not p.judged or p.key in seen or not mine & judged or mine & blocked:
            continue
        target = ", ".join(f"{k}: {v}" for k, v in p.target.items())
        hint = "fix the target (kind, name, labelSelector) to select the objects it should change, or remove the patch"
        if p.component:
            # A component is written to be included by several builds: a gpu-sku component sizes both layouts, and the
            # patch for the other layout is what a switch of the cluster's layout needs.
            hint = (f"if this component's patch sizes objects another build would have (the other queue layout, which a cluster "
                    f"may switch to), keep it; else {hint}")
        out.append(Finding(p.file, p.line, "", "patch-unmatched",
                           f"{p.what} (target {target}) matches no object in any build that includes it; kustomize ignores it silently",
                           hint, severity="warning"))
    return out


def kustomize_warnings(ctx, root: Path, builds: list[Build], clusters: list[ClusterRender],
                       session: FluxBuild | None = None) -> list[Finding]:
    """Unlisted manifests and unmatched patches of the repository (`ctx`: rules.Context); the
    probe builds run in `session` (the gate's fluxbuild process) when given."""
    probed = probe_patches(ctx, root, builds, clusters, session)
    return repository_warnings(ctx, root, clusters) + probed()


def repository_warnings(ctx, root: Path, clusters: list[ClusterRender]) -> list[Finding]:
    """kustomize-unlisted and cluster-unchecked: what of the repository no build or cluster of the gate takes in; and
    aks-deprecated-label (harness.gate.node_labels) in every manifest the gate reads."""
    applied = {b.dir for c in clusters for b in c.flux if b.dir}
    return unlisted_manifests(ctx, root, clusters) + unchecked_clusters(ctx, root, clusters) \
        + deprecated_label_findings(root, ctx.sources.docs, lambda file: ctx.config.reads(root, file, applied))


def unchecked_clusters(ctx, root: Path, clusters: list[ClusterRender]) -> list[Finding]:
    """cluster-unchecked: a `flux bootstrap` cluster directory nested deeper than the clusters directory's children
    (clusters/prod/westeurope/flux-system): the gate checks no cluster there, so it says so rather than pass in silence."""
    base = (root / ctx.config.clusters).resolve()
    checked = {(root / c.entry.dir).resolve() for c in clusters}
    out = []
    if not clusters:  # the overlays render, but nothing is checked as a cluster applies it: said, not "clean" in silence
        out.append(Finding(ctx.config.clusters, None, "", "cluster-unchecked",
                           f"{ctx.config.clusters}/ holds no cluster (a directory with a kustomization or Flux Kustomizations): the gate "
                           "renders the overlays but checks no cluster's Flux wiring, samples, quotas or node pools",
                           f"add {ctx.config.clusters}/<name>/ (the Flux entry point of each cluster), or set `clusters:` in {CONFIG_FILE} "
                           "to the directory that holds them", severity="warning"))
    for sync in sorted(base.glob("*/*/**/flux-system/gotk-sync.yaml")) if base.is_dir() else []:
        cluster_dir = sync.parent.parent
        if cluster_dir in checked or any(cluster_dir.is_relative_to(c) for c in checked) or set(cluster_dir.parts) & SKIP_DIRS:
            continue
        rel = cluster_dir.relative_to(root).as_posix()
        out.append(Finding(sync.relative_to(root).as_posix(), None, f"cluster/{cluster_dir.name}", "cluster-unchecked",
                           f"{rel} is a `flux bootstrap` cluster directory below {ctx.config.clusters}/{cluster_dir.relative_to(base).parts[0]}, "
                           f"which is not a cluster: the gate takes only the directories directly in {ctx.config.clusters}/ as clusters, "
                           "so it checks nothing of this one", f"set `clusters: {cluster_dir.parent.relative_to(root).as_posix()}` in "
                           f"{CONFIG_FILE} (run the gate once per level), or move the cluster up to {ctx.config.clusters}/",
                           rel, severity="warning"))
    return out
