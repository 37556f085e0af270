"""kustomize-rename: a kustomization's (or a Flux Kustomization's spec.) namePrefix or nameSuffix renames objects that others refer to by
a name kustomize does not rewrite; flux-target-namespace: a Flux Kustomization's targetNamespace moves
the objects the samples use out of the samples' namespace.

kustomize rewrites a renamed object's name only where its nameReference configuration knows the field
(a ConfigMap in a Deployment's volumes, a ServiceAccount in a built-in pod template). It knows none
of Kueue's (a LocalQueue's spec.clusterQueue, a ClusterQueue's flavor names) and none inside a
custom resource such as a RayJob, and the samples are submitted outside the build. Each reference
rule asks `Renames.explains` before it reports a missing name; a name that exists with the prefix or
suffix, renamed by a kustomization, is that kustomization's finding instead: one, at the namePrefix
(or nameSuffix) line, listing what it renamed and the references left behind.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.gate.findings import Finding
from harness.gate.origin import line_at
from harness.gate.sources import as_map, is_kustomization_file

RULES = {
    "kustomize-rename": "a kustomization's namePrefix/nameSuffix renames no object that Kueue objects or samples refer to by the "
                        "old name (kustomize rewrites no Kueue reference, nor any inside a RayJob)",
    "flux-target-namespace": "a Flux Kustomization's targetNamespace moves no object out of the namespace the samples use "
                             "(the samples are submitted outside the layer, with the namespace their workloads/ template gives)",
    "kustomize-namespace": "a kustomization's namespace: moves no object out of the namespace the samples use (as flux-target-namespace)",
}


@dataclass
class _Rename:
    file: str  # the kustomization.yaml, or the file of a Flux Kustomization (its spec.namePrefix/nameSuffix)
    key: str  # namePrefix or nameSuffix (the first the file sets)
    prefix: str
    suffix: str
    renamed: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, old name) -> new name
    references: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (kind, old name) -> references left to it
    path: tuple[str, ...] = ()  # where the key is written: (key,) in a kustomization, ("spec", key) in a Flux Kustomization
    doc_line: int | None = None  # the Flux Kustomization's document in its file
    cluster: str | None = None  # the cluster whose layer a Flux Kustomization renames

    def rename(self, objects) -> "_Rename":
        """Notes which of `objects` (the build's) carry the prefix and suffix, by their name before it."""
        prefix, suffix = self.prefix, self.suffix
        for o in objects:
            name = as_map(o.get("metadata")).get("name")
            if isinstance(name, str) and len(name) > len(prefix) + len(suffix) and name.startswith(prefix) and name.endswith(suffix):
                self.renamed[(str(o.get("kind")), name[len(prefix):len(name) - len(suffix)])] = name
        return self


@dataclass
class _Move:
    """A Flux Kustomization's spec.targetNamespace (rule flux-target-namespace, one cluster's layer) or a
    kustomization's namespace: (kustomize-namespace, every cluster that builds it): its namespaced objects land there."""
    rule: str
    cluster: str | None
    file: str
    line: int | None
    namespace: str
    moved: set[tuple[str, str]]  # (kind, name) of the layer's objects
    references: list[str] = field(default_factory=list)


class Renames:
    """The renames of the repository's kustomizations, from their own builds; the references the
    reference rules found left behind (`explains`)."""

    def __init__(self, root: Path, sources, builds, clusters=()):
        self.root = root
        self._renames: list[_Rename] = []
        self._moves: list[_Move] = []
        for cluster in clusters:
            for b in cluster.flux:
                spec = as_map(as_map(b.flux_kustomization).get("spec"))
                affixes = [spec.get(k) if isinstance(spec.get(k), str) else "" for k in ("namePrefix", "nameSuffix")]
                if any(affixes) and not b.error:  # kustomize-controller writes them into the layer's kustomization
                    file, doc_line = sources.locate(b.flux_kustomization, (cluster.folder,))
                    key = "namePrefix" if affixes[0] else "nameSuffix"
                    rename = _Rename(file, key, *affixes, path=("spec", key), doc_line=doc_line, cluster=cluster.name).rename(b.objects)
                    self._renames += [rename] if rename.renamed else []
                target = spec.get("targetNamespace")
                if isinstance(target, str) and target and not b.error:
                    file, doc_line = sources.locate(b.flux_kustomization, (cluster.folder,))
                    objects = {(str(o.get("kind")), str(as_map(o.get("metadata")).get("name"))) for o in b.objects
                               if as_map(o.get("metadata")).get("namespace") == target}
                    self._moves.append(_Move("flux-target-namespace", cluster.name, file,
                                             line_at(root, file, doc_line, ["spec", "targetNamespace"]), target, objects))
        built = {b.dir: b for b in builds if not b.error}
        for doc in sources.docs:
            if not is_kustomization_file(doc.file):
                continue
            prefix, suffix = (doc.obj.get(k) for k in ("namePrefix", "nameSuffix"))
            prefix, suffix = (v if isinstance(v, str) else "" for v in (prefix, suffix))
            build = built.get(doc.file.rpartition("/")[0] or ".")
            target = doc.obj.get("namespace")
            if isinstance(target, str) and target and build is not None:
                objects = {(str(o.get("kind")), str(as_map(o.get("metadata")).get("name"))) for o in build.objects
                           if as_map(o.get("metadata")).get("namespace") == target}
                self._moves.append(_Move("kustomize-namespace", None, doc.file, line_at(root, doc.file, doc.line, ["namespace"]), target, objects))
            if not (prefix or suffix) or build is None:
                continue
            key = "namePrefix" if prefix else "nameSuffix"
            rename = _Rename(doc.file, key, prefix, suffix, path=(key,)).rename(build.objects)
            if rename.renamed:
                self._renames.append(rename)

    def explains(self, kind: str, name, present, reference: str) -> bool:
        """Whether `reference` (e.g. "LocalQueue ray/team-a spec.clusterQueue") names `kind` `name`,
        which is missing while a kustomization renamed it to a name in `present`: then it is noted
        for that kustomization's finding, and the caller reports nothing of its own."""
        for rename in self._renames:
            new = rename.renamed.get((kind, name)) if isinstance(name, str) else None
            if new is not None and new in present:
                left = rename.references.setdefault((kind, name), [])
                if reference not in left:
                    left.append(reference)
                return True
        return False

    def moved(self, cluster: str, kind: str, namespace, name, reference: str, exists_in) -> bool:
        """Whether `reference` names `kind` `namespace`/`name`, missing there because a targetNamespace of a
        Flux Kustomization of `cluster`, or a kustomization's namespace:, put it in the namespace where
        `exists_in(namespace)` finds it: then it is noted for that finding instead."""
        for move in self._moves:
            if (move.cluster in (None, cluster) and namespace != move.namespace and (kind, str(name)) in move.moved
                    and exists_in(move.namespace)):
                if reference not in move.references:
                    move.references.append(reference)
                return True
        return False

    def findings(self) -> list[Finding]:
        key = {"flux-target-namespace": "targetNamespace", "kustomize-namespace": "namespace"}
        out = [Finding(m.file, m.line, "", m.rule,
                       f"{key[m.rule]} {m.namespace!r} puts every namespaced object it applies in namespace {m.namespace}, but "
                       f"{len(m.references)} reference(s) still name them elsewhere: {'; '.join(m.references)}",
                       f"remove {key[m.rule]} (the objects carry their namespace), or move the samples along: the namespace is "
                       "metadata.namespace of their workloads/ templates, which every cluster shares",
                       f"cluster {m.cluster}" if m.cluster else "")
               for m in self._moves if m.references]
        for r in self._renames:
            if not r.references:
                continue
            affix = " and ".join(f"{k} {v!r}" for k, v in (("namePrefix", r.prefix), ("nameSuffix", r.suffix)) if v)
            renamed = ", ".join(f"{kind} {old} -> {r.renamed[(kind, old)]}" for kind, old in sorted(r.references))
            left = [ref for key in sorted(r.references) for ref in r.references[key]]
            out.append(Finding(
                r.file, line_at(self.root, r.file, r.doc_line, list(r.path)), "", "kustomize-rename",
                f"{affix} renames {renamed}, but kustomize does not rewrite the names these are referred to by: "
                f"{len(left)} reference(s) now name nothing: {'; '.join(left)}",
                "drop the prefix/suffix and name the objects themselves, or rename every reference with them (the LocalQueues' "
                "spec.clusterQueue, the ClusterQueues' flavor names, the queue and ServiceAccount the samples use, in "
                "samples.yaml and workloads/); kustomize's `configurations:` nameReference entries cover the Kueue fields only",
                f"cluster {r.cluster}" if r.cluster else ""))
        return out
