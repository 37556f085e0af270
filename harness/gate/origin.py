"""Where a rendered value is written: the line of a field inside the document that defines an
object, or the JSON6902 patch operation (a component's or overlay's `patches:`, inline or in a file)
that wrote it.

Field paths are the apiserver's (`spec.resourceGroups[0].flavors[1].name`); JSON6902 paths are JSON
pointers (`/spec/resourceGroups/0/flavors/1/name`). Only YAML node marks are used: PyYAML's composer
gives every key and value its line, so no text is searched.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

from harness.core import yaml_nodes
from harness.gate.sources import SafeLoader, SourceError, parse_yaml, read_source, yaml_files
from harness.gate.yaml_keys import KeyLoader

step = yaml_nodes.step  # one step into a composed mapping or sequence (build_errors, podset_lines use it from here)

_SEGMENT = re.compile(r"\[(\d+)\]|\[([^\]]*)\]|([^.\[\]]+)")  # a.b[0][key] -> a, b, 0, key


def segments(field: str) -> list[str | int]:
    """The steps of an apiserver field path: names, and list indices as ints."""
    out: list[str | int] = []
    for index, key, name in _SEGMENT.findall(field):
        out.append(int(index) if index else (key or name))
    return out


def pointer(path: list[str | int]) -> str:
    """The JSON pointer of a field path: ["spec", "resourceGroups", 0] -> "/spec/resourceGroups/0"."""
    return "/" + "/".join(str(s).replace("~", "~0").replace("/", "~1") for s in path)


def dotted(path: list[str | int]) -> str:
    """The inverse of segments: ["spec", "volumes", 0, "configMap"] -> "spec.volumes[0].configMap"."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def value_at(obj, path: list[str | int]):
    for step in path:
        if isinstance(step, int) and isinstance(obj, list) and step < len(obj):
            obj = obj[step]
        elif isinstance(step, str) and isinstance(obj, dict) and step in obj:
            obj = obj[step]
        else:
            return None
    return obj


def entries(node, path: list | None = None):
    """Every (path, value) below a parsed YAML tree, mappings and lists as well as leaves, in document order."""
    path = path or []
    if path:
        yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from entries(v, [*path, k])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from entries(v, [*path, i])


def leaves(node, path: list | None = None):
    """The (path, value) of every scalar of a parsed YAML tree."""
    return ((p, v) for p, v in entries(node, path) if not isinstance(v, (dict, list)))


def written_prefix(tree, path: list) -> list:
    """The longest prefix of `path` that `tree` writes (a chart default's path ends where a HelmRelease's values do)."""
    node, written = tree, []
    for step_ in path:
        if not (isinstance(node, dict) and step_ in node or isinstance(node, list) and isinstance(step_, int) and 0 <= step_ < len(node)):
            break
        node = node[step_]
        written.append(step_)
    return written


def _scalar(value) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, (str, int, float)) else None


def _compose(path: Path) -> tuple:
    """The composed documents of a file, cached by its text (not its path: the same checkout is
    validated again after an edit, e.g. by the fuzz tests)."""
    try:
        return compose(read_source(path))
    except SourceError:
        return ()


@lru_cache(maxsize=256)
def compose(text: str) -> tuple:
    """The composed YAML documents of `text` (nodes with their marks), cached by the text; () when
    it does not parse (the YAML check reports that)."""
    try:
        return tuple(yaml.compose_all(text, Loader=SafeLoader))
    except (yaml.YAMLError, RecursionError):
        return ()


def node_at(root: Path, file: str, doc_line: int | None, path: list[str | int]) -> tuple[yaml.Node | None, yaml.Node | None]:
    """(key node, value node) at `path` inside the document of `file` that starts at `doc_line`
    (the first document when None); (None, None) when the file does not parse or the path is not there."""
    doc = next((d for d in _compose(root / file) if d is not None and (doc_line is None or d.start_mark.line + 1 == doc_line)), None)
    return descend(doc, path)


def descend(node, path: list[str | int]) -> tuple[yaml.Node | None, yaml.Node | None]:
    """(key node, value node) at `path` below `node`; (node, node) for an empty path."""
    key = node
    for s in path:
        key, node = step(node, s)
    return key, node


def line_at(root: Path, file: str, doc_line: int | None, path: list[str | int]) -> int | None:
    """1-based line where the value at `path` is written (its key's line), or `doc_line` when the
    path is not there."""
    key, _ = node_at(root, file, doc_line, path)
    return key.start_mark.line + 1 if key is not None else doc_line


def _walk(node, path: list[str | int]) -> tuple[object, int, int]:
    """The node at `path` (or the deepest one that exists), how many steps were matched, and the
    line that names it (a mapping entry's key line: a block value starts on the next line)."""
    line = node.start_mark.line + 1
    for depth, s in enumerate(path):
        key, nxt = step(node, s)
        if nxt is None:
            return node, depth, line
        node, line = nxt, key.start_mark.line + 1
    return node, len(path), line


def field_line(root: Path, file: str, doc_line: int, path: list[str | int], rendered) -> tuple[int, bool] | None:
    """Line of `path` inside the document of `file` starting at `doc_line`, and whether the source
    writes the rendered value there, or a ${VAR} Flux substitutes it from (False: the deepest ancestor that
    exists, or another value)."""
    for doc in _compose(root / file):
        if doc is not None and doc.start_mark.line + 1 <= doc_line <= doc.end_mark.line + 1 and isinstance(doc, yaml.MappingNode):
            _, items = step(doc, "items")  # an item of a List document: the object that starts at doc_line
            doc = next((i for i in items.value if i.start_mark.line + 1 == doc_line and isinstance(i, yaml.MappingNode)), doc) \
                if isinstance(items, yaml.SequenceNode) and doc.start_mark.line + 1 != doc_line else doc
            node, matched, line = _walk(doc, path)
            exact = matched == len(path) and (_same(node, rendered) if not isinstance(node, yaml.ScalarNode)
                                              else node.value == _scalar(rendered) or "${" in node.value)
            return line, exact
    return None


def _same(node, rendered) -> bool:
    """Whether a mapping or sequence of the source is what was rendered (else a patch replaced it); a ${VAR} in it counts
    as the same (Flux substitutes it)."""
    try:
        written = KeyLoader("").construct_object(node, deep=True)  # keys as kubectl and Flux read them
    except (yaml.YAMLError, TypeError, ValueError):
        return True
    return written == rendered or "${" in repr(written)


def _ops(node, offset: int, file: str, out: list) -> None:
    """JSON6902 operations under `node` ({op, path, value} mappings), also inside `patch: |` strings."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _ops(item, offset, file, out)
    elif isinstance(node, yaml.MappingNode):
        keys = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        op, ptr, val = keys.get("op"), keys.get("path"), keys.get("value")
        if isinstance(op, yaml.ScalarNode) and isinstance(ptr, yaml.ScalarNode):
            value = val.value if isinstance(val, yaml.ScalarNode) else None
            out.append((ptr.value, value, file, offset + node.start_mark.line + 1))
            return
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "patch" and isinstance(value, yaml.ScalarNode):
                # A block scalar's text starts on the line after `patch: |`.
                try:
                    inner = list(yaml.compose_all(value.value, Loader=SafeLoader))
                except yaml.YAMLError:
                    continue
                start = offset + value.start_mark.line + (1 if value.style in ("|", ">") else 0)
                for doc in inner:
                    _ops(doc, start, file, out)
            else:
                _ops(value, offset, file, out)


def _patch_ops(root: Path) -> tuple:
    """Every JSON6902 operation of the repository's YAML files, cached until a file changes."""
    files = sorted(yaml_files(root))
    stamp = []
    for path in files:
        try:
            st = path.stat()
            stamp.append((path.relative_to(root).as_posix(), st.st_mtime_ns, st.st_size))
        except OSError:
            continue  # a dangling symlink: file-read reports it
    return _ops_of(root, tuple(stamp))


@lru_cache(maxsize=8)
def _ops_of(root: Path, stamp: tuple) -> tuple:
    out: list = []
    for rel, _mtime, _size in stamp:
        for doc in _compose(root / rel):
            _ops(doc, 0, rel, out)
    return tuple(out)


def _entry_docs(root: Path, file: str, doc_line: int | None, at: list):
    """(document node, file, line offset) of each patch document of the patches entry at path `at` of the document of
    `file` starting at `doc_line`: written inline (`patch:`, or a patchesStrategicMerge string) or in the file its
    `path:` (or patchesStrategicMerge file name) names."""
    _, node = node_at(root, file, doc_line, at)
    _, path = step(node, "path")
    if isinstance(node, yaml.ScalarNode) and "\n" not in node.value:
        path = node  # a patchesStrategicMerge file name
    if isinstance(path, yaml.ScalarNode) and path.value:
        try:
            target = ((root / file).parent / path.value).resolve()
        except (OSError, ValueError, RuntimeError):
            return []  # the build reports the name it cannot read
        rel = target.relative_to(root.resolve()).as_posix() if target.is_relative_to(root.resolve()) else None
        return [(doc, rel, 0) for doc in (_compose(root / rel) if rel else ()) if doc is not None]
    _, text = step(node, "patch")
    text = node if isinstance(node, yaml.ScalarNode) else text
    if isinstance(text, (yaml.SequenceNode, yaml.MappingNode)):
        return [(text, file, 0)]  # written as YAML (a Flux v1beta2 patchesJson6902 entry's operations)
    if not isinstance(text, yaml.ScalarNode):
        return []
    try:
        inner = list(yaml.compose_all(text.value, Loader=SafeLoader))
    except yaml.YAMLError:
        return []
    start = text.start_mark.line + (1 if text.style in ("|", ">") else 0)  # a block scalar's text starts on the next line
    return [(doc, file, start) for doc in inner if doc is not None]


def entry_ops(root: Path, file: str, doc_line: int | None, at: list) -> list[tuple[str, str | None, str, int]]:
    """The JSON6902 operations (pointer, value as written, file, line) of the patches entry at path `at` of the document
    of `file` starting at `doc_line`: written inline (`patch:`) or in the file its `path:` names."""
    out: list = []
    for doc, rel, offset in _entry_docs(root, file, doc_line, at):
        _ops(doc, offset, rel, out)
    return out


def smp_patches(root: Path, file: str, doc_line: int | None, at: list) -> list[tuple[dict, list[tuple]]]:
    """The strategic-merge patch documents of the patches entry at `at` (as `entry_ops` reads it): per document, the
    object it names (apiVersion, kind, name, namespace as written) and what it writes, as (pointer, scalar as written or
    None, file, line, merged). Maps are followed key by key; a map kustomize merges (no `$patch`) is `merged`: the
    value there is the base's and the patch's together (a top-level one, spec, is not recorded). A list is not followed (its items merge by the field's merge
    key, which the schema knows): the list is recorded as `merged`. A null (a deletion) and $-directives are left out."""
    out = []
    for doc, rel, offset in _entry_docs(root, file, doc_line, at):
        if not isinstance(doc, yaml.MappingNode):
            continue  # a JSON6902 list
        keys = {k.value: v for k, v in doc.value if isinstance(k, yaml.ScalarNode)}
        meta = {k.value: v.value for k, v in (keys["metadata"].value if isinstance(keys.get("metadata"), yaml.MappingNode) else ())
                if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode) and k.value in ("name", "namespace")}
        ident = {k: keys[k].value for k in ("apiVersion", "kind") if isinstance(keys.get(k), yaml.ScalarNode)} | meta
        writes: list = []
        _smp(doc, [], rel, offset, writes)
        out.append((ident, writes))
    return out


def _smp(node, path: list, file: str, offset: int, out: list) -> None:
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.value.startswith("$") or (not path and key.value in ("apiVersion", "kind")) \
                or (path == ["metadata"] and key.value in ("name", "namespace")):
            continue
        here, line = [*path, key.value], offset + key.start_mark.line + 1
        if isinstance(value, yaml.MappingNode):
            replaced = any(isinstance(k, yaml.ScalarNode) and k.value == "$patch" for k, _ in value.value)
            if len(here) > 1:  # (spec as a whole, merged, is the document's)
                out.append((pointer(here), None, file, line, not replaced))
            if not replaced:
                _smp(value, here, file, offset, out)
        elif isinstance(value, yaml.SequenceNode) and len(here) > 1:
            out.append((pointer(here), None, file, line, True))
        elif isinstance(value, yaml.ScalarNode) and value.tag != "tag:yaml.org,2002:null":
            out.append((pointer(here), value.value, file, line, False))


def patch_line(root: Path, path: list[str | int], rendered) -> tuple[str, int] | None:
    """The file and line of a JSON6902 operation that writes `rendered` at `path`, or else of one writing a ${VAR}
    there that Flux substitutes."""
    value = _scalar(rendered)
    ops = [(val, file, line) for ptr, val, file, line in _patch_ops(root.resolve()) if ptr == pointer(path)]
    found = next(((file, line) for val, file, line in ops if val is None or val == value or _same_number(val, rendered)), None)
    return found or next(((file, line) for val, file, line in ops if "${" in val), None)


def _same_number(written: str, rendered) -> bool:
    """Whether the YAML scalar `written` is the number `rendered` after kustomize's JSON6902 round trip, which carries
    numbers as float64 (an integer above 2**53 comes back rounded)."""
    if isinstance(rendered, bool) or not isinstance(rendered, (int, float)):
        return False
    try:
        number = parse_yaml(written)
        return not isinstance(number, bool) and isinstance(number, (int, float)) and float(number) == float(rendered)
    except (yaml.YAMLError, OverflowError):
        return False


def quoted_value_line(root: Path, file: str, text: str) -> int | None:
    """The line of the longest scalar value of `file` that `text` (an error message) quotes, e.g. the
    `files:` entry a generator could not read; None when it quotes none of three characters or more."""
    best: tuple[int, int] | None = None
    todo = [d for d in _compose(root / file) if d is not None]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            todo += [v for _, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
        elif isinstance(node, yaml.ScalarNode) and len(node.value) >= 3 and node.value in text:
            if best is None or len(node.value) > best[0]:
                best = (len(node.value), node.start_mark.line + 1)
    return best[1] if best else None


def mentioned_fields(obj, message: str) -> list[str]:
    """The fields of `obj` (apiserver paths) whose names `message` mentions (in any case), for an error that names no
    field ("minReplicas ... maxReplicas"): in the order the message names them, the shallowest of one name first; only
    names of at least five letters count. A field inside an item the message names by its name (worker group
    "gpu-workers") comes before the same field elsewhere."""
    found: list[tuple[bool, int, int, str]] = []
    todo: list[tuple[object, list, bool]] = [(obj, [], False)]
    while todo:
        node, path, inside = todo.pop()
        if isinstance(node, dict) and any(isinstance(node.get(k), str) and len(node[k]) >= 3 and re.search(rf"\b{re.escape(node[k])}\b", message)
                                          for k in ("name", "groupName")):
            inside = True  # an item the message names
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            here = [*path, key]
            todo.append((value, here, inside))
            # in any case: KubeRay's messages name fields as Go does ("TTLSecondsAfterFinished", "BackoffLimit")
            named = re.search(rf"\b{re.escape(key)}\b", message, re.IGNORECASE) if isinstance(key, str) and len(key) >= 5 else None
            if named:
                found.append((not inside, named.start(), len(here), dotted(here)))
    return [path for *_, path in sorted(found)]
