"""Which patch writes the value a rendered object ends up with at a field, as kustomize itself applies them.

The patch probe (harness.gate.kustomize_warnings) puts a probe patch of the same target in front of every targeted
patch, and of every strategic-merge patch that names its object (untargeted `patches`, `patchesStrategicMerge`, inline
or in a file; those of patchesStrategicMerge lead the `patches`, which kustomize applies after them). Besides its own
mark, the probe sets, for each JSON pointer the patch writes (a JSON6902 operation's path; a strategic merge's keys,
map by map), a field keyed by that pointer whose value names the patch. The marks are top-level fields of the object,
which no patch of the repository replaces (a patch that replaces metadata.annotations would wipe them there).
kustomize applies the probes to the objects each target selects, in its own order (a base's patches, then the
components', then the kustomization's own, then a Flux Kustomization's), so the mark an object ends up with names the
last patch among those selecting it that writes the pointer: the one whose value the cluster gets. A whole-pool patch
that writes the same value as a team's patch selects no team queue, and a value written in an overlay and replaced by a
component's patch is the component's. A map or list a strategic merge merges into the base's is the patch's only where
the base's document does not write the rendered value itself; the items of a list are not followed (they merge by the
field's merge key).

A value written as ${VAR} is set where Flux takes the variable from for that layer (harness.gate.substitution). A value
no patch explains that a kustomization's `replacements` entry copies into the field (its target: the object's kind, and
its name when it names one; the field's path as written in `fieldPaths`) is set by that entry's source.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from harness.core import parse_quantity
from pathlib import Path

from harness.gate.origin import line_at, pointer, value_at
from harness.gate.render import Build, RenderError
from harness.gate.sources import SourceError, as_list, as_map, as_maps, kustomization_path, load_yaml, name_key, reachable_dirs

WRITER = "gate-probe.invalid/w"
NOT_PATCHED = "not patched"  # the probe rendered the object: no targeted patch writes the field


def writer_key(ptr: str) -> str:
    """The probe annotation recording which patch last wrote JSON pointer `ptr`."""
    return WRITER + hashlib.sha1(ptr.encode()).hexdigest()[:24]


def probe_pointer(key: str) -> str:
    """The JSON pointer of the probe's field `key`: a top-level field of the object (a patch that replaces or removes
    metadata.annotations would wipe a mark kept there, and one added there fails on an object without annotations)."""
    return "/" + key.replace("~", "~0").replace("/", "~1")


def writer_ops(ops: list[tuple], key: str) -> list[dict]:
    """The probe operations that record patch `key` as the writer of each pointer its `ops` (origin.entry_ops,
    origin.smp_patches) write."""
    return [{"op": "add", "path": probe_pointer(writer_key(p)), "value": key} for p in dict.fromkeys(op[0] for op in ops)]


@dataclass(frozen=True)
class Written:
    """The patch operation that writes a rendered value: where, and the value as written there (maybe a ${VAR}); `merged`:
    a map or list a strategic-merge patch merges into the base's (the document's line when it writes the value itself)."""
    file: str
    line: int
    value: str | None
    merged: bool = False


def same_value(written: str | None, rendered) -> bool:
    """Whether a patch's value as written is the rendered one ("48" and 48, "768Gi" and "768Gi"; a ${VAR} counts: Flux
    substitutes it after the build)."""
    if written is None or "${" in written:
        return True
    if str(rendered) == written:
        return True
    try:
        return parse_quantity(written) == parse_quantity(str(rendered))
    except (ValueError, TypeError):
        return False


class Writers:
    """The patch probe's answers: `ops`, per patch key, its operations; `pending` waits for the probe's renders (by job
    id; asked on the first question only, so a run without a question about a patched value never waits)."""

    def __init__(self, ops: dict[str, list[tuple]] | None = None, pending: Callable[[], dict[str, dict]] | None = None,
                 root: Path | None = None):
        self._ops, self._root = ops or {}, root
        self._pending = pending
        self._results: dict[str, dict] | None = None

    def _result(self, build: Build) -> list[dict] | None:
        if self._results is None:
            try:
                self._results = self._pending() if self._pending else {}
            except RenderError:  # the helper failed the probe: patch_unmatched's join raises it again (exit 2), never a pass
                self._results = {}
        for job in (build.id, build.dir):
            res = self._results.get(job)
            if res is not None:
                return None if res.get("error") else res.get("objects") or []
        return None

    def at(self, build: Build | None, obj: dict, path: list) -> Written | str | None:
        """The operation of the last targeted patch selecting `obj` (as `build` renders it) that writes `path`;
        NOT_PATCHED when the probe rendered it and none does; None when the probe did not render it."""
        if build is None:
            return None
        objects = self._result(build) if self._ops else None
        if objects is None:
            return self._replaced(build, obj, path)
        meta = as_map(obj.get("metadata"))
        same = [o for o in objects if o.get("kind") == obj.get("kind") and name_key(as_map(o.get("metadata")).get("name")) == name_key(meta.get("name"))]
        probed = next((o for o in same if as_map(o.get("metadata")).get("namespace") == meta.get("namespace")), same[0] if same else None)
        if probed is None:
            return None
        ptr = pointer(path)
        key = probed.get(writer_key(ptr))
        ops = [op for op in self._ops.get(key, ()) if op[0] == ptr]
        written = Written(ops[-1][2], ops[-1][3], ops[-1][1], *ops[-1][4:]) if ops else None
        if written is not None and same_value(written.value, value_at(obj, path)):
            return written
        # no patch writes it, or one writes another value: a replacement after it may
        replaced = self._replaced(build, obj, path)
        return replaced or (NOT_PATCHED if key is None else None)

    def _replaced(self, build: Build, obj: dict, path: list) -> Written | None:
        """The `source` of the last `replacements` entry, among the kustomizations `build` reads, whose target selects
        `obj` by kind (and name) alone and lists `path` in its fieldPaths."""
        if self._root is None:
            return None
        field = ".".join(str(s) for s in path)
        found = None
        for d in sorted(reachable_dirs(self._root, self._root / build.dir), key=lambda d: len(d.parts), reverse=True):
            file = kustomization_path(d)
            try:
                doc = as_map(load_yaml(file, first=True))
            except SourceError:
                continue
            rel = file.relative_to(self._root.resolve()).as_posix() if file.is_relative_to(self._root.resolve()) else None
            for i, entry in enumerate(as_list(doc.get("replacements"))):
                for target in as_maps(as_map(entry).get("targets")):
                    select = as_map(target.get("select"))
                    if rel and set(select) <= {"kind", "name", "group", "version"} and select.get("kind") == obj.get("kind") \
                            and select.get("name", as_map(obj.get("metadata")).get("name")) == as_map(obj.get("metadata")).get("name") \
                            and field in as_list(target.get("fieldPaths")):
                        found = Written(rel, line_at(self._root, rel, None, ["replacements", i, "source"]), None)
        return found
