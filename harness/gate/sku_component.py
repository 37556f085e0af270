"""The gpu-sku component a cluster's queues take their quotas from, against the vm_size of its pools.

Changing a cluster's GPU VM size in its tfvars without switching the gpu-sku component its queues
include leaves every quota of that component sized for the other SKU. That is one cause, reported
once (rule capacity-sku-component) at the line that includes the component, with the quota findings
it brings about folded under it (harness.gate.capacity folds them).

A gpu-sku component is known by what it is, wherever the repository keeps it (components/gpu-sku/ here,
fleet/components/gpu-sku/ in a fork): the kustomize Component (kind: Component) that writes the quotas, whose
sibling directories are the other VM sizes' components, each named after its VM size (component_of).
"""
from __future__ import annotations

import copy
import os
from pathlib import Path, PurePosixPath

from harness.gate.findings import Finding
from harness.gate.origin import line_at
from harness.gate.pools import Pool
from harness.gate.render import ClusterRender, run_fluxbuild
from harness.gate.sources import (SourceError, as_list, as_map, kustomization_file, kustomization_path, load_yaml, name_key,
                                  reachable_dirs)

RULES = {
    "capacity-sku-component": "a cluster's queues take their quotas from the gpu-sku component of its pools' vm_size (the kustomize "
                              "Component, e.g. components/gpu-sku/<vm size>, among whose siblings one is named for each VM size; "
                              "reported once, where the component is included, with the quota findings it causes)",
}


def component_of(vm_size: str) -> str:
    """The component directory name of a VM size: Standard_ND96amsr_A100_v4 -> standard-nd96amsr-a100-v4."""
    return vm_size.lower().replace("_", "-")


def written_in(root: Path, file: str) -> str | None:
    """The kustomize Component a repository file belongs to (the nearest directory above it with a kustomization file,
    when that file is kind: Component), as a repository-relative directory; None for a file of no Component."""
    for parent in PurePosixPath(file).parents:
        if parent == PurePosixPath("."):
            return None
        found = kustomization_file(root / parent)
        if found is not None:
            try:
                doc = load_yaml(found, root, first=True)
            except SourceError:
                return None
            return parent.as_posix() if isinstance(doc, dict) and doc.get("kind") == "Component" else None
    return None


def expected(root: Path, used: str, pools: list[Pool]) -> str | None:
    """The one sibling of Component `used` named for a pool's vm_size (None: none or several), repository-relative."""
    family = PurePosixPath(used).parent
    found = {component_of(p.vm_size) for p in pools} & {d.name for d in (root / family).glob("*") if d.is_dir()}
    return (family / found.pop()).as_posix() if len(found) == 1 else None


def wrong_component(root: Path, files: list[str], pools: list[Pool]) -> tuple[str, str] | None:
    """(component used, component of the pools), both repository-relative directories, when every one of `files` (where
    quotas are written) is in one Component and a sibling of it is named for the pools' vm_size instead."""
    used = {written_in(root, f) for f in files}
    if len(used) != 1 or None in used:
        return None
    component = used.pop()
    want = expected(root, component, pools)
    return None if want is None or want == component else (component, want)


def included_at(root: Path, dirs: list[str], component: str) -> tuple[str, int | None, str] | None:
    """(kustomization.yaml, line, directory of `dirs` it is reached from) of the first components or resources
    entry naming `component` among the kustomizations each of `dirs` pulls in (the directory itself first)."""
    target = (root / component).resolve()
    for d in dirs:
        for found in sorted(reachable_dirs(root, root / d), key=lambda p: (p != (root / d).resolve(), p)):
            rel = kustomization_path(found).relative_to(root.resolve()).as_posix()
            try:
                doc = load_yaml(root / rel, first=True)
            except SourceError:
                continue
            for key in ("components", "resources"):
                entries = doc.get(key) if isinstance(doc, dict) else None
                for i, entry in enumerate(entries if isinstance(entries, list) else []):
                    if isinstance(entry, str) and "\0" not in entry and (found / entry).resolve() == target:
                        return rel, line_at(root, rel, None, [key, i]), d
    return None


def sizes_queues(root: Path, cluster: ClusterRender, top: str, want: str) -> bool | None:
    """Whether component `want`, added to the components of the cluster's Flux Kustomization that
    builds `top`, changes the quotas of every ClusterQueue that build yields: kustomize-controller's own
    rendering answers (the fluxbuild helper); None when there is no such build or the probe does not build."""
    build = next((b for b in cluster.flux if b.dir == top and b.flux_kustomization and not b.error), None)
    if build is None:
        return None
    ks = copy.deepcopy(build.flux_kustomization)
    spec = ks.setdefault("spec", {})
    spec["components"] = [*as_list(spec.get("components")), os.path.relpath(root / want, root / top)]
    result = run_fluxbuild(root, [{"id": "probe", "kustomization": ks, "sources": cluster.variables}]).get("probe") or {}
    if result.get("error"):
        return None

    def quotas(objects: list) -> dict:
        return {name_key(as_map(o.get("metadata")).get("name")): as_map(o.get("spec")).get("resourceGroups")
                for o in objects if isinstance(o, dict) and o.get("kind") == "ClusterQueue"}
    before, after = quotas(build.objects), quotas(result.get("objects") or [])
    return bool(before) and all(after.get(name) != groups for name, groups in before.items())


def flux_included_at(root: Path, cluster: ClusterRender, component: str, locate) -> tuple[str, int | None] | None:
    """(file, line) of the spec.components entry of one of the cluster's Flux Kustomizations that names `component`
    (kustomize-controller adds them after the kustomization's own, so theirs win); `locate`: Sources.locate."""
    target = (root / component).resolve()
    for b in cluster.flux:
        for i, entry in enumerate(as_list(as_map(as_map(b.flux_kustomization).get("spec")).get("components"))):
            if isinstance(entry, str) and "\0" not in entry and (root / b.dir / entry).resolve() == target:
                file, doc_line = locate(b.flux_kustomization, (cluster.folder,))
                return file, line_at(root, file, doc_line, ["spec", "components", i])
    return None


def root_finding(root: Path, cluster: ClusterRender, dirs: list[str], used: str, want: str, pools: list[Pool],
                 follow_ons: list[str], context: str, locate) -> Finding:
    """The finding for a cluster that includes component `used` while its pools are `want`'s SKU (`locate`:
    Sources.locate, for a Flux Kustomization's own spec.components)."""
    flux = flux_included_at(root, cluster, used, locate)
    file, line, top = (*flux, None) if flux else \
        included_at(root, dirs, used) or (f"{used}/kustomization.yaml", None, None)
    sized = "; ".join(p.where() + (f" ({p.vm_size_origin.text} at {p.vm_size_origin.where()})" if p.vm_size_origin else "")
                      for p in pools if component_of(p.vm_size) == PurePosixPath(want).name)
    own = top and file.rpartition("/")[0] == top
    sizes = sizes_queues(root, cluster, top, want) if top else None
    if flux:
        fix = f"name {want} instead of {used} in this Flux Kustomization's spec.components (or drop the entry)"
    elif sizes is False:
        fix = (f"{want} does not size these ClusterQueues (with it, kustomize leaves their quotas as they are: "
               f"its patches select none of them): add patches for them to it, as {used} has, or use a queue "
               f"layout it sizes")
    elif own or top is None:
        fix = f"include {want} instead of {used} here"
    else:
        fix = (f"list {want} under `components:` in {top}/kustomization.yaml: its quotas then replace those "
               f"{file} brings in, for this cluster only ({file} may serve other clusters)")
    return Finding(file, line, f"cluster/{cluster.name}", "capacity-sku-component",
                   f"cluster {cluster.name}: its queues take their quotas from {used}"
                   + (f" (through {top})" if top and not own else "") + f", but its pools are {sized}, "
                   f"whose component is {want}; so " + "; ".join(follow_ons) + "; admitted workloads would pend forever",
                   fix + "; or set the vm_size back", context)
