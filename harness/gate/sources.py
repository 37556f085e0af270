"""The repository's YAML sources: parsing with line numbers and finding where an object is defined."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.core import HarnessError
from harness.gate import SKIP_DIRS  # directories that hold no configuration (fluxbuild gets this list too)
from harness.gate.findings import Finding
from harness.gate.yaml_keys import KEY_HINT, KeyLoader, SafeLoader, key_string


SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter (and yaml_keys' loader): ten times faster


def parse_yaml(text: str):  # mapping keys are strings, as kubectl and Flux make them (yaml_keys)
    return yaml.load(text, Loader=KeyLoader)


def parse_yaml_all(text: str) -> list:
    return list(yaml.load_all(text, Loader=KeyLoader))


class _LineLoader(KeyLoader):
    """SafeLoader that remembers the line where each mapping starts."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode):
    # kustomize, kubectl and Flux read YAML with go-yaml, which refuses a key written twice in
    # one mapping; PyYAML would keep the last value silently.
    seen: dict = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            key = key_string(key_node, loader.construct_object(key_node))  # `1` and `true` are two keys
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is written twice in one mapping (first at line {seen[key]}); kustomize, kubectl "
                    "and Flux refuse the file", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
    mapping = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def as_map(value) -> dict:
    """`value` if it is a mapping, else {}: rules read objects before the schema check rejects a wrong type."""
    return value if isinstance(value, dict) else {}


def as_list(value) -> list:
    return value if isinstance(value, list) else []


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # the label that puts a job in a LocalQueue of its namespace
POD_ADMISSION_KINDS = ("LimitRange", "RuntimeClass")  # what a pod's admission and Kueue's AdjustResources read besides the pod


def queue_name(obj):
    """The LocalQueue an object names by its QUEUE_LABEL (None when it names none)."""
    return as_map(as_map(as_map(obj).get("metadata")).get("labels")).get(QUEUE_LABEL)


# Where each Ray kind writes its RayClusterSpec (the RayService's Go field RayClusterSpec is `rayClusterConfig`).
RAY_CLUSTER_SPEC = {"RayJob": ["spec", "rayClusterSpec"], "RayCluster": ["spec"], "RayService": ["spec", "rayClusterConfig"]}


def ray_cluster_spec(obj: dict) -> tuple[list, dict]:
    """(field path, RayClusterSpec) of a RayJob, RayCluster or RayService (an object without a kind is a RayJob); ([], {})
    for another kind."""
    path = RAY_CLUSTER_SPEC.get(obj.get("kind") or "RayJob")
    node = obj if path else {}
    for key in path or []:
        node = as_map(node.get(key))
    return list(path or []), node


def as_maps(value) -> list[dict]:
    """The mappings of a list (a list's other items, or a non-list, count as absent)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def name_key(value) -> str:
    """A name as a lookup key: a string as it is, anything else as its repr (hashable, sortable,
    and matching no real name), so that a list where a name belongs is a finding, not a TypeError."""
    return value if isinstance(value, str) else repr(value)


def strip_lines(value):
    if isinstance(value, dict):
        return {k: strip_lines(v) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [strip_lines(v) for v in value]
    return value


def in_namespace_of(obj: dict, objects: list[dict], kinds: tuple[str, ...] = ("LimitRange", "ResourceQuota", "Namespace", "RuntimeClass")) -> list[dict]:
    """The objects of `kinds` in `obj`'s namespace (default when it names none), that Namespace and the RuntimeClasses when asked: by
    default what its pods' admission reads, LimitRanges (as stored), ResourceQuotas, PodSecurity labels, RuntimeClasses (overhead)."""
    ns = as_map(obj.get("metadata")).get("namespace", "default")
    found = [o for o in objects if o.get("kind") in kinds
             and (o.get("kind") == "RuntimeClass"
                  or (as_map(o.get("metadata")).get("name") if o.get("kind") == "Namespace" else as_map(o.get("metadata")).get("namespace")) == ns)]
    if not any(o.get("kind") == "LimitRange" for o in found):
        return found
    from harness.gate.schema_check import stored  # the helpers' module imports this one

    return stored(found)  # LimitRanges as the apiserver stores them: their defaults are what Kueue and the pods' admission read


def resource_id(obj: dict) -> str:
    meta = as_map(obj.get("metadata"))
    name = meta.get("name") or (f"{meta['generateName']}*" if isinstance(meta.get("generateName"), str) else "?")
    ns = meta.get("namespace")
    return f"{obj.get('kind', '?')}/{f'{ns}/' if ns else ''}{name}"


@dataclass
class SourceDoc:
    file: str
    line: int
    obj: dict


@dataclass
class Sources:
    root: Path
    docs: list[SourceDoc] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)

    @classmethod
    def load(cls, root: Path) -> "Sources":
        sources = cls(root)
        paths = sorted(yaml_files(root))
        real = {p.resolve() for p in paths if not p.is_symlink()}
        for path in paths:
            if path.is_symlink() and _resolved(path) in real:
                continue  # a link to a file read under its own name (its findings are there, once)
            rel = path.relative_to(root).as_posix()
            try:
                for doc in _parse(rel, read_source(path, root), lambda text: list(yaml.load_all(text, Loader=_LineLoader))):
                    if isinstance(doc, dict):
                        line = doc.pop("__line__", 1)
                        line = line if isinstance(line, int) else 1  # a key spelled __line__ in the file
                        # A v1 List's items are the objects kustomize and the apiserver see: each is a document at its line.
                        items = doc.get("items") if str(doc.get("kind", "")).endswith("List") else None
                        for item in items if isinstance(items, list) else ():
                            if isinstance(item, dict) and isinstance(item.get("__line__"), int):
                                sources.docs.append(SourceDoc(rel, item["__line__"], strip_lines(item)))
                        sources.docs.append(SourceDoc(rel, line, strip_lines(doc)))
            except SourceError as err:
                sources.errors.append(err.finding)
        return sources

    def broken_files(self) -> set[str]:
        return {f.file for f in self.errors}

    def locate(self, obj: dict, prefer: tuple[str, ...] = (), field: str | None = None, written=None) -> tuple[str, int | None]:
        """Source file and line of the document that defines `obj` (same kind and name, and namespace when written); with
        `field` (an apiserver field path), the line where that field's value is written: in the document, or in the patch
        that wrote it (harness.gate.origin). `written`: what the patch probe says writes the field (harness.gate.writers.
        Writers.at): that patch's line (a map it merged: unless the document writes it all), or the document's when none."""
        patch = written is not None and not isinstance(written, str)
        if patch and not written.merged:
            return written.file, written.line
        file, line = self._locate_doc(obj, prefer)
        if field and line:
            from harness.gate import origin  # imports this module

            steps = origin.segments(field)
            rendered = origin.value_at(obj, steps)
            found = origin.field_line(self.root, file, line, steps, rendered)
            if found and (found[1] or written is not None):
                return (written.file, written.line) if patch and not found[1] else (file, found[0])
            patched = origin.patch_line(self.root, steps, rendered) if rendered is not None else None
            if patched:
                return patched
            if found:
                return file, found[0]
        return file, line

    def _unrenamed(self, name: str) -> set[str]:
        """The names `name` may have been written as before the namePrefix/nameSuffix values of the
        repository's kustomizations were added (several, nested, as kustomize adds them)."""
        affixes = [(str(d.obj.get("namePrefix") or ""), str(d.obj.get("nameSuffix") or "")) for d in self.docs
                   if is_kustomization_file(d.file) and (d.obj.get("namePrefix") or d.obj.get("nameSuffix"))]
        seen, todo = set(), [name]
        while todo and len(seen) < 64:
            current = todo.pop()
            for prefix, suffix in affixes:
                for p, s in ((prefix, ""), ("", suffix), (prefix, suffix)):
                    if (p or s) and current.startswith(p) and current.endswith(s) and len(current) > len(p) + len(s):
                        shorter = current[len(p):len(current) - len(s)]
                        if shorter not in seen:
                            seen.add(shorter)
                            todo.append(shorter)
        return seen

    def _locate_doc(self, obj: dict, prefer: tuple[str, ...]) -> tuple[str, int | None]:
        kind = obj.get("kind")
        name = as_map(obj.get("metadata")).get("name")
        matches = [d for d in self.docs if d.obj.get("kind") == kind and as_map(d.obj.get("metadata")).get("name") == name]
        if not matches and isinstance(name, str):
            # Renamed by a kustomization's namePrefix/nameSuffix: the document whose name, with some of
            # the prefixes and suffixes the repository declares, is the rendered name.
            written = self._unrenamed(name)
            matches = [d for d in self.docs if d.obj.get("kind") == kind and as_map(d.obj.get("metadata")).get("name") in written]
        # Same kind and name in several namespaces (a LocalQueue `default` per team namespace): the document that writes
        # the object's namespace, else one that writes none (a kustomization's `namespace:` gives it), before the others.
        namespace = as_map(obj.get("metadata")).get("namespace")
        rank = [(as_map(d.obj.get("metadata")).get("namespace") in (namespace, None)) +
                (as_map(d.obj.get("metadata")).get("namespace") == namespace) for d in matches]
        matches = [d for d, r in zip(matches, rank) if r == max(rank)] if namespace else matches
        for prefix in prefer:
            for d in matches:
                if d.file.startswith(prefix):
                    return d.file, d.line
        if matches:
            return matches[0].file, matches[0].line
        # A template (workloads/*.yaml names itself ${JOB_NAME}): the one document of that kind
        # in the preferred file.
        same_kind = [d for d in self.docs if prefer and d.file == prefer[0] and d.obj.get("kind") == kind]
        if len(same_kind) == 1:
            return same_kind[0].file, same_kind[0].line
        return (prefer[0] if prefer else "?"), None


# The names kustomize (and kustomize-controller, which builds with it) reads a kustomization from, in the order it
# looks for them (konfig.RecognizedKustomizationFileNames); a directory with two of them does not build.
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization file of `directory` under the first name kustomize finds; None when it has none."""
    return next((directory / name for name in KUSTOMIZATION_FILES if (directory / name).is_file()), None)


def kustomization_path(directory: Path) -> Path:
    """`directory`'s kustomization file; kustomization.yaml when it has none (a finding names it so)."""
    return kustomization_file(directory) or directory / KUSTOMIZATION_FILES[0]


def is_kustomization_file(path: str | Path) -> bool:
    return Path(path).name in KUSTOMIZATION_FILES


def yaml_files(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]  # never descend into .venv or .git
        for name in filenames:
            if name.endswith((".yaml", ".yml")) or name == "Kustomization":
                yield Path(dirpath) / name


def kustomization_dirs(root: Path) -> list[Path]:
    return sorted({p.parent for p in yaml_files(root) if p.name in KUSTOMIZATION_FILES})


def reachable_dirs(root: Path, start: Path, seen: set[Path] | None = None) -> set[Path]:
    """Directories a kustomization pulls in through resources and components."""
    seen = set() if seen is None else seen
    start = start.resolve()
    file = kustomization_file(start)
    if start in seen or file is None:
        return seen
    seen.add(start)
    try:
        doc = load_yaml(file, first=True)
    except SourceError:
        return seen  # yaml-syntax reports it
    doc = doc if isinstance(doc, dict) else {}
    entries = [e for key in ("resources", "components") if isinstance(doc.get(key), list) for e in doc[key]]
    for entry in entries:
        if not isinstance(entry, str) or "\0" in entry:
            continue  # the build reports it
        target = start / entry
        if target.is_dir() and target.resolve().is_relative_to(Path(root).resolve()):  # (one outside: the build reports it)
            reachable_dirs(root, target, seen)
    return seen


class SourceError(HarnessError, ValueError):
    """A repository file that cannot be read or parsed; `finding` reports it (file, line, rule, fix)."""

    def __init__(self, finding: Finding):
        super().__init__(f"{finding.location()}: {finding.message}")
        self.finding = finding


YAML_HINT = ("fix the YAML syntax (indentation, quoting, a missing ':'); "
             "`python -c 'import yaml,sys; list(yaml.safe_load_all(open(sys.argv[1])))' FILE` shows the error")


DUPLICATE_HINT = "keep one of the two keys (delete the line of the one that is not meant)"


def _rel(path: Path, root: Path | None) -> str:
    """`path` relative to `root` when it lies inside (a symlink is named, not its target)."""
    if root is None:
        return path.as_posix()
    if path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    resolved = Path(root).resolve()  # only when the names differ (a relative path, a linked root)
    return path.absolute().relative_to(resolved).as_posix() if path.absolute().is_relative_to(resolved) else path.as_posix()


def _resolved(path: Path) -> Path | None:
    """Where a symlink leads; None for a loop (pathlib raises RuntimeError for one)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def read_source(path: Path, root: Path | None = None) -> str:
    """The text of a repository file; SourceError (with its finding) when it cannot be read or is not UTF-8."""
    rel = _rel(path, root)
    try:
        if path.exists() and not path.is_file() and not path.is_dir():  # a FIFO would block the read forever
            raise SourceError(Finding(rel, None, "", "file-read", "is not a regular file (a FIFO, socket or device): Git stores none, "
                                      "and kustomize cannot read it", "remove it from the repository"))
        data = path.read_bytes()
    except OSError as err:  # a dangling symlink, a symlink loop, a directory named *.yaml, no permission
        raise SourceError(Finding(rel, None, "", "file-read", f"cannot be read: {err.strerror or err}",
                                  "fix or remove the file (a dangling symlink? a directory with a file's name? permissions?)")) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise SourceError(Finding(rel, line, "", "yaml-syntax", f"not UTF-8: byte 0x{data[err.start]:02x} cannot be decoded",
                                  "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`); YAML and kustomize read only Unicode")) from None


MAX_NODES = 1_000_000  # nodes a document may expand to through its aliases (go-yaml refuses "excessive aliasing" too)
MAX_DEPTH = 200  # levels of nesting (Kubernetes objects and CRD schemas stay far below)


def _guard(rel: str, text: str) -> None:
    """SourceError for a document that expands out of bounds through its aliases (an alias bomb), holds an alias of a
    node that contains it (infinite), or nests deeper than MAX_DEPTH: the loader would not return, or recurse out."""
    def fail(node, message):
        raise SourceError(Finding(rel, node.start_mark.line + 1, "", "yaml-syntax", f"not valid YAML for kustomize: {message}",
                                  "write the values out instead of through anchors and aliases (&name / *name), and nest less deeply"))
    if "*" not in text and text.count("[") + text.count("{") < MAX_DEPTH:
        return  # no alias, and too few brackets to nest that deep in flow style (block style is bounded by the indentation)
    sizes: dict[int, int] = {}
    for root in yaml.compose_all(text, Loader=SafeLoader):
        todo = [(root, 0, False)] if root is not None else []
        active: set[int] = set()
        while todo:
            node, depth, done = todo.pop()
            children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else \
                node.value if isinstance(node, yaml.SequenceNode) else []
            if done:
                active.discard(id(node))
                sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in children)
                if sizes[id(node)] > MAX_NODES:
                    fail(node, f"its aliases expand it to more than {MAX_NODES:,} nodes")
                continue
            if id(node) in active:
                fail(node, "an alias refers to a node that contains it, so the document is infinite")
            if depth > MAX_DEPTH:
                fail(node, f"nested more than {MAX_DEPTH} levels deep")
            if id(node) in sizes:
                continue
            active.add(id(node))
            todo.append((node, depth, True))
            todo += [(c, depth + 1, False) for c in children]


def _parse(rel: str, text: str, loader):
    """`loader(text)` fully consumed; SourceError with the file and line on a YAML error."""
    try:
        _guard(rel, text)
        return loader(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        problem = getattr(err, "problem", None) or err
        hint = DUPLICATE_HINT if "written twice" in str(problem) else KEY_HINT if "map key" in str(problem) else YAML_HINT
        if "written twice" in str(problem) and Path(rel).name in KUSTOMIZATION_FILES:  # read with sigs.k8s.io/yaml: the last one wins
            problem = str(problem).replace("kustomize, kubectl and Flux refuse the file", "kustomize and Flux keep the last "
                                           "one and silently drop the first (with all it lists)")
        raise SourceError(Finding(rel, mark.line + 1 if mark else None, "", "yaml-syntax", f"not valid YAML: {problem}", hint)) from None
    except RecursionError:
        raise SourceError(Finding(rel, None, "", "yaml-syntax", "not valid YAML: nested too deeply", YAML_HINT)) from None


def load_yaml(path: Path, root: Path | None = None, first: bool = False):
    """One YAML document of a file (`first`: the first of several, all kustomize reads of a kustomization); SourceError if unusable."""
    return _parse(_rel(path, root), read_source(path, root), (lambda text: next(iter(parse_yaml_all(text)), None)) if first else parse_yaml)


def load_yaml_all(path: Path, root: Path | None = None) -> list:
    """Every YAML document of a repository file; SourceError when it cannot be read or parsed."""
    return _parse(_rel(path, root), read_source(path, root), parse_yaml_all)
