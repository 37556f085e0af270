"""Renders the repository the way it reaches a cluster.

Plain kustomize directories are built as `kustomize build` would; each cluster's Flux entry
point is built, and every Flux Kustomization it yields is rendered as kustomize-controller
renders it (generator, secure build, postBuild substitution), all through the fluxbuild
helper (tools/fluxbuild, the gate's one Go process) so the library code is kustomize-controller's
own.
"""
from __future__ import annotations

import base64
import itertools
import os
import re
import threading
import time
from concurrent.futures import Future
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.core import HarnessError
from harness.gate.config import DEFAULTS, GateConfig
from harness.gate.config import load as load_config
from harness.gate.entry import in_git
from harness.gate.flux_paths import flux_path, outside, written
from harness.gate.helper import helper
from harness.gate.sources import SKIP_DIRS, SourceError, as_map, kustomization_dirs, kustomization_file, load_yaml, load_yaml_all, name_key

FLUX_KS_API = "kustomize.toolkit.fluxcd.io"
MAX_FLUX_DEPTH = 5  # nested Flux Kustomizations deeper than this are reported, not followed


@dataclass
class Build:
    id: str  # e.g. "overlays/team-queues" or "cluster prod-eastus2: Kustomization/flux-system/queues"
    dir: str  # repository-relative directory that was built
    objects: list[dict] = field(default_factory=list)
    error: str = ""
    undefined: list[str] = field(default_factory=list)
    cluster: str | None = None
    flux_kustomization: dict | None = None  # the Flux Kustomization that produced it

    def take(self, result: dict) -> "Build":
        """The helper's result of this build: its objects, its error (in words a reader can use) and its undefined variables."""
        self.objects, self.error, self.undefined = result.get("objects") or [], readable(result.get("error", "")), result.get("undefined") or []
        return self


# kustomize's errors print some Go values as they are: a pointer (it changes from run to run) and a resource id's struct.
_POINTER = re.compile(r" ?&\{0x[0-9a-f]+ [^}]*\}")
_RES_ID = re.compile(r'resid\.ResId\{Gvk:resid\.Gvk\{Group:"([^"]*)", Version:"([^"]*)", Kind:"([^"]*)"[^}]*\}, Name:"([^"]*)", Namespace:"([^"]*)"\}')


def readable(error: str) -> str:
    """A build error without Go's value dumps: no pointer, a resource id as Kind/namespace/name."""
    error = _POINTER.sub("", error)
    return _RES_ID.sub(lambda m: "/".join(p for p in (m[3], m[5], m[4]) if p), error)


@dataclass
class ClusterRender:
    name: str
    entry: Build
    flux: list[Build] = field(default_factory=list)  # one per Flux Kustomization
    variables: list[dict] = field(default_factory=list)  # the offline substituteFrom stand-ins (substitution_sources)
    bootstrap: bool = False  # a `flux bootstrap` cluster: no kustomization.yaml, Flux's generator builds the directory
    provided: list[dict] = field(default_factory=list)  # objects the platform creates outside the repository (flux_tenancy)
    entry_name: str = "kustomization.yaml"  # its entry file, relative to its directory (entry_file)
    outside: list[dict] = field(default_factory=list)  # Flux Kustomizations of a monorepo's directory the gate does not check

    @property
    def folder(self) -> str:
        """The cluster's directory with a trailing / (GateConfig.cluster_dir): where Sources.locate looks first for the
        cluster's own Flux objects, which every cluster names alike."""
        return f"{self.entry.dir}/"

    @property
    def entry_file(self) -> str:
        """The file that makes the directory a cluster: its kustomization file, flux-system/gotk-sync.yaml, or (the Flux
        extension's style) its first file of Flux Kustomizations."""
        return f"{self.entry.dir}/{self.entry_name}"

    @property
    def complete(self) -> bool:
        """Whether every layer rendered: none failed, none is outside the checked tree; else what it applies is unknown."""
        return not self.entry.error and not any(b.error for b in self.flux) and not self.outside

    def kustomizations(self) -> list[dict]:
        return [o for b in [self.entry, *self.flux] for o in b.objects if is_flux_kustomization(o)]

    def applied(self) -> list[tuple[Build, dict]]:
        """Every object the cluster ends up with, and the Flux build that applies it: one per API group, kind, namespace
        and name, the first layer's when two apply it (object-collision reports that)."""
        seen, out = set(), []
        for b in [self.entry, *self.flux]:
            for o in b.objects:
                key = object_key(o)
                if key not in seen:
                    seen.add(key)
                    out.append((b, o))
        return out


def object_key(obj: dict) -> tuple:
    """(API group, kind, namespace, name): what makes an object one object on a cluster."""
    api, meta = str(obj.get("apiVersion", "")), as_map(obj.get("metadata"))
    return (api.split("/")[0] if "/" in api else "", name_key(obj.get("kind")), name_key(meta.get("namespace", "")), name_key(meta.get("name")))


def only_included(builds: list[Build], clusters: list[ClusterRender], reached) -> set[str]:
    """The plain builds' directories that are only built as part of the directory above them (a team folder an overlay
    lists): no Flux Kustomization's path, no cluster's entry, but read by the build of a directory that holds them
    (`reached`: directory -> the directories, with a trailing /, its build reads). Their cross-object rules are judged
    where they are included (a LocalQueue's ClusterQueue is the including overlay's), not in a stand-alone build no
    cluster applies. An overlay or base/ that a cluster's folder includes from beside it stays judged alone too."""
    applied = {b.dir for c in clusters for b in [c.entry, *c.flux]}
    return {b.dir for b in builds if b.dir not in applied and any(b.dir.startswith(o.dir.rstrip("/") + "/") and b.dir + "/" in reached(o.dir)
                                                                  for o in builds)}


def is_flux_kustomization(obj: dict) -> bool:
    return obj.get("kind") == "Kustomization" and str(obj.get("apiVersion", "")).startswith(FLUX_KS_API + "/")


class RenderError(HarnessError, RuntimeError):
    pass


class FluxBuild:
    """One rendering session in the gate's Go helper (every round of nested Flux Kustomizations and
    the patch probe): the repository is copied once per session, and dropped when it ends."""

    _sessions = itertools.count(1)

    def __init__(self, root: Path, prefix: str | None = None):
        self.root = root
        self.prefix = in_git(root) if prefix is None else prefix  # the tree's directory in its Git work tree (flux_paths)
        self._session = f"{os.getpid()}-{next(self._sessions)}"
        self._used = False

    def __enter__(self) -> "FluxBuild":
        return self

    def __exit__(self, *exc) -> None:
        if self._used:  # not waited for: the helper removes the copies while the caller goes on
            helper().submit("release", RenderError, session=self._session)

    def start(self) -> "FluxBuild":
        """Starts the helper ahead of the first request."""
        helper().start()
        return self

    def run(self, jobs: list[dict], probe: dict | None = None) -> dict[str, dict]:
        """The results of `jobs` built in the session's copy of the repository, by job id; with `probe`
        ({"files": [rel], "overlay": {rel: text}}), in a scratch tree of those files of that copy with
        the overlay's texts written over them."""
        return self.submit(jobs, probe)()

    def submit(self, jobs: list[dict], probe: dict | None = None) -> Callable[[], dict[str, dict]]:
        """`run`, sent now: the returned function waits for its results (the caller goes on meanwhile)."""
        if not jobs:
            return dict
        self._used = True
        answer = helper().submit("render", RenderError, session=self._session, root=str(self.root), prefix=self.prefix,
                                 skip_dirs=sorted(SKIP_DIRS), jobs=jobs, probe=probe)
        return lambda: {r["id"]: r for r in answer.result()}


def run_fluxbuild(root: Path, jobs: list[dict], probe: dict | None = None) -> dict[str, dict]:
    """One request in a fluxbuild process of its own."""
    with FluxBuild(root) as fb:
        return fb.run(jobs, probe)


def build_directory(root: Path, directory: str) -> list[dict]:
    """`kustomize build` of one repository directory, with the renderer the static gate uses."""
    result = run_fluxbuild(root, [{"id": directory, "dir": directory}])[directory]
    if result.get("error"):
        raise RenderError(f"{directory} does not build: {result['error']}")
    return result["objects"]


def is_component(directory: Path) -> bool:
    try:
        file = kustomization_file(directory)
        doc = (load_yaml(file, first=True) if file else None) or {}
    except SourceError:
        return False  # the YAML check reports it, and the build fails on it
    return isinstance(doc, dict) and doc.get("kind") == "Component"


BOOTSTRAP_SYNC = "flux-system/gotk-sync.yaml"


def is_bootstrap_cluster(directory: Path) -> bool:
    """A cluster directory that kustomize-controller's generator builds (every manifest of the directory): as
    `flux bootstrap` writes it (flux-system/ and no kustomization file), or as the AKS Flux extension's
    configuration points at it (no kustomization file, Flux Kustomizations of its own)."""
    return kustomization_file(directory) is None and (kustomization_file(directory / "flux-system") is not None
                                                     or _flux_entry_file(directory) is not None)


def _flux_entry_file(directory: Path) -> Path | None:
    """The first YAML file directly in `directory` that holds a Flux Kustomization (what a cluster entry applies)."""
    for path in sorted(directory.glob("*.y*ml")) if directory.is_dir() else []:
        try:
            if any(isinstance(d, dict) and is_flux_kustomization(d) for d in load_yaml_all(path)):
                return path
        except (SourceError, OSError):
            continue  # yaml-syntax reports it
    return None


def cluster_dirs(root: Path, gate_config: GateConfig = DEFAULTS) -> list[Path]:
    """The clusters: each directory of the clusters directory with a kustomization.yaml or, from
    `flux bootstrap`, a flux-system/."""
    clusters = root / gate_config.clusters
    return sorted(d for d in clusters.iterdir() if kustomization_file(d) or is_bootstrap_cluster(d)) if clusters.is_dir() else []


def substitution_sources(cluster_dir: Path, variables_file: str = DEFAULTS.cluster_variables) -> list[dict]:
    """Offline stand-ins for substituteFrom: the cluster's cluster-vars.example.yaml."""
    example = cluster_dir / variables_file
    if not example.exists():
        return []
    try:
        docs = load_yaml_all(example)
    except SourceError:
        return []  # yaml-syntax (or file-read) reports it; the variables it defines count as undefined
    return [d for d in docs if isinstance(d, dict)]


def render_repository(root: Path, skip_dirs: set[str] = frozenset(), session: FluxBuild | None = None,
                      gate_config: GateConfig = DEFAULTS) -> tuple[list[Build], list[ClusterRender]]:
    """Builds every kustomization directory, then renders every cluster through Flux (in
    `session`'s fluxbuild process when given, so a caller can send it more builds)."""
    root = root.resolve()
    if session is not None:
        return _render_all(session, root, skip_dirs, gate_config)
    with FluxBuild(root) as fb:
        return _render_all(fb, root, skip_dirs, gate_config)


@dataclass
class Ahead:
    """The repository's render started before the rest of the gate is imported (the entry point's `ahead`): its session,
    the layout it rendered with, and the future of (render_repository's result, "render", seconds)."""
    root: Path
    layout: tuple
    session: FluxBuild
    future: Future

    def usable(self, root: Path, gate_config: GateConfig) -> bool:
        """Whether it renders what the gate would render for `root` with `gate_config`."""
        return self.root == root.resolve() and self.layout == _layout(gate_config)


def _layout(gate_config: GateConfig) -> tuple:
    return gate_config.clusters, gate_config.cluster_variables  # what _render_all reads of the configuration


def ahead(root: Path) -> Ahead | None:
    """Starts rendering `root` on a thread of its own (the helper does the work), so that it overlaps the imports of the
    rules; None when `root` is no directory. The gate takes it when its configuration has the same layout."""
    root = root.resolve()
    if not root.is_dir() or not helper().running():
        return None  # no helper started (one to build first): the gate starts and reports everything itself
    try:
        gate_config = load_config(root)  # without the rule ids: the layout is all the render reads
        session = FluxBuild(root).start()
    except Exception:  # noqa: BLE001 (speculative: whatever failed here fails again in the gate, which reports it)
        return None

    def run():
        started = time.monotonic()
        return render_repository(root, session=session, gate_config=gate_config), "render", time.monotonic() - started
    future: Future = Future()
    threading.Thread(target=lambda: _settle(future, run), daemon=True, name="gate-render-ahead").start()
    return Ahead(root, _layout(gate_config), session, future)


def _settle(future: Future, fn) -> None:
    try:
        future.set_result(fn())
    except BaseException as err:  # handed to the gate, which reports it as it reports its own render's failures
        future.set_exception(err)


def _bootstrap_entry(rel: str, prefix: str) -> dict:
    """The Flux Kustomization `flux bootstrap --path=<rel>` creates (flux-system/gotk-sync.yaml):
    kustomize-controller builds the directory with its generator."""
    return {"apiVersion": f"{FLUX_KS_API}/v1", "kind": "Kustomization", "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {"interval": "10m", "path": written(rel, prefix), "prune": True, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}}


def _render_all(fb: FluxBuild, root: Path, skip_dirs: set[str], gate_config: GateConfig) -> tuple[list[Build], list[ClusterRender]]:
    plain_dirs = [d for d in kustomization_dirs(root) if d.relative_to(root).as_posix() not in skip_dirs]
    plain_jobs, plain_builds = [], {}
    for d in plain_dirs:
        rel = d.relative_to(root).as_posix()
        if not is_component(d):  # a broken kustomization.yaml is reported by the YAML check and the build
            plain_jobs.append({"id": rel, "dir": rel})
            plain_builds[rel] = Build(rel, rel)
    for rid, res in fb.run(plain_jobs).items():
        plain_builds[rid].take(res)

    clusters, bootstrap_jobs = [], {}
    for cdir in cluster_dirs(root, gate_config):
        rel = cdir.relative_to(root).as_posix()
        variables = substitution_sources(cdir, gate_config.cluster_variables)
        bootstrap = is_bootstrap_cluster(cdir)
        if bootstrap:
            entry = Build(rel, rel)
            bootstrap_jobs[rel] = {"id": rel, "kustomization": _bootstrap_entry(rel, fb.prefix), "sources": variables}
        else:
            entry = plain_builds.get(rel) or Build(rel, rel, error="cluster entry point was not built")
            own = _own_kustomization(entry, rel, fb.prefix)
            if own is not None:  # `flux bootstrap`'s gotk-sync.yaml beside a kustomization.yaml: Flux builds the entry with it
                entry = Build(rel, rel, flux_kustomization=own)
                bootstrap_jobs[rel] = {"id": rel, "kustomization": own, "sources": variables}
        entry.cluster = cdir.name
        found = kustomization_file(cdir) or (None if (cdir / BOOTSTRAP_SYNC).is_file() else _flux_entry_file(cdir))
        clusters.append(ClusterRender(cdir.name, entry, variables=variables, bootstrap=bootstrap,
                                      entry_name=found.name if found else BOOTSTRAP_SYNC if rel in bootstrap_jobs else "kustomization.yaml"))
    for rid, res in fb.run(list(bootstrap_jobs.values())).items():
        next(c.entry for c in clusters if c.entry.dir == rid).take(res)
    _render_flux(fb, root, clusters)
    return list(plain_builds.values()), clusters


def _own_kustomization(entry: Build, rel: str, prefix: str) -> dict | None:
    """The Flux Kustomization among the entry's objects that applies the entry's own directory (`flux bootstrap`'s
    flux-system, in flux-system/gotk-sync.yaml), if any."""
    return next((o for o in entry.objects if is_flux_kustomization(o) and flux_path(as_map(o.get("spec")).get("path", "./"), prefix) == rel), None)


def _sources(cluster: ClusterRender) -> list[dict]:
    """What a layer's postBuild.substituteFrom reads from the cluster: the offline stand-ins (cluster-vars.example.yaml),
    then the ConfigMaps and Secrets the cluster's layers rendered so far apply (kustomize-controller reads the live ones)."""
    key = lambda o: (o.get("kind"), as_map(o.get("metadata")).get("namespace"), as_map(o.get("metadata")).get("name"))  # noqa: E731
    seen = {key(o) for o in cluster.variables}
    applied = [o for b in [cluster.entry, *cluster.flux] for o in b.objects if o.get("kind") in ("ConfigMap", "Secret") and key(o) not in seen]
    return [as_stored(o) for o in [*cluster.variables, *applied]]


def as_stored(obj: dict) -> dict:
    """A Secret as the apiserver stores it, which is what kustomize-controller reads: stringData folded into data (base64)."""
    if obj.get("kind") != "Secret" or not isinstance(obj.get("stringData"), dict):
        return obj
    folded = {str(k): base64.b64encode(str(v).encode()).decode() for k, v in obj["stringData"].items()}
    return {**{k: v for k, v in obj.items() if k != "stringData"}, "data": {**as_map(obj.get("data")), **folded}}


def _render_flux(fb: FluxBuild, root: Path, clusters: list[ClusterRender]) -> None:
    pending = [(c, ks) for c in clusters for ks in c.entry.objects if is_flux_kustomization(ks)]
    for _depth in range(MAX_FLUX_DEPTH):
        if not pending:
            break
        jobs, builds = [], {}
        for cluster, ks in pending:
            meta = ks.get("metadata") or {}
            bid = f"cluster {cluster.name}: Kustomization/{meta.get('namespace', 'flux-system')}/{meta.get('name')}"
            path = flux_path((ks.get("spec") or {}).get("path", "./"), fb.prefix)
            if outside(path) and (root / path).is_dir():  # another directory of the monorepo: flux-path-outside, not followed
                cluster.outside += [] if any(o is ks for o in cluster.outside) else [ks]
                continue
            if path == cluster.entry.dir or bid in builds or any(b.id == bid for b in cluster.flux):
                # flux bootstrap's flux-system Kustomization is the entry point itself, already built; a Kustomization
                # that a layer applies again (its own path holds it) is one object on the cluster, rendered once
                continue
            builds[bid] = (cluster, Build(bid, path, cluster=cluster.name, flux_kustomization=ks))
            jobs.append({"id": bid, "kustomization": ks, "sources": _sources(cluster)})
        results = fb.run(jobs)
        pending = []
        for bid, (cluster, build) in builds.items():
            build.take(results[bid])
            cluster.flux.append(build)
            pending += [(cluster, o) for o in build.objects if is_flux_kustomization(o)]
    # A layer reading a ConfigMap or Secret that a layer rendered after it applies (its dependsOn orders them on the
    # cluster): rendered again with every source the cluster has.
    again = [(c, b) for c in clusters for b in c.flux if "substitute from '" in b.error]
    results = fb.run([{"id": b.id, "kustomization": b.flux_kustomization, "sources": _sources(c)} for c, b in again]) if again else {}
    for _, build in again:
        build.take(results[build.id])


def render_cluster(root: Path, name: str, entry_dir: str, gate_config: GateConfig = DEFAULTS) -> ClusterRender:
    """One cluster rendered as render_repository renders the gate's clusters, from an entry
    point that need not be clusters/<name> itself (the local e2e cluster's is
    clusters/local/entry); substitution sources come from clusters/<name>/ as for the others."""
    root = root.resolve()
    with FluxBuild(root) as fb:
        res = fb.run([{"id": entry_dir, "dir": entry_dir}])[entry_dir]
        entry = Build(entry_dir, entry_dir, cluster=name).take(res)
        cluster = ClusterRender(name, entry, variables=substitution_sources(root / gate_config.clusters / name, gate_config.cluster_variables))
        _render_flux(fb, root, [cluster])
    return cluster
