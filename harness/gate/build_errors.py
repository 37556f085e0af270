"""A kustomization directory that does not build (kustomize-build), reported where the cause is written: the entry of
its kustomization.yaml that kustomize names, the file kustomize read and refused (an object without a name, one written
twice), the component or base that fails on its own, or the file the artifact Flux builds from leaves out."""
from __future__ import annotations

import posixpath
import re
from pathlib import Path

import yaml

from harness.gate.artifact import artifact_finding
from harness.gate.findings import Finding
from harness.gate.flux_paths import flux_path, written
from harness.gate.kustomize_warnings import PATH_ENTRIES, PATH_LISTS, kustomization_doc, local_kustomization_dirs, reachable, references
from harness.gate.origin import compose, descend, line_at, quoted_value_line, step
from harness.gate.render import Build
from harness.gate.sources import as_list, as_map, kustomization_file, kustomization_path, parse_yaml_all
from harness.gate.yaml_keys import loaded_key, nonstring_keys, plain_nonstring


def build_error(root: Path, build: Build) -> Finding:
    """A plain directory that does not build (kustomize-build): at the entry of its
    kustomization.yaml that kustomize names first ("... from 'ENTRY'"), when it lists one."""
    file, line = f"{build.dir}/{kustomization_path(root / build.dir).name}", None
    if UNSERIALISABLE in build.error and (key := _nonstring_key(root, build)):
        return key
    named = re.search(r"from '([^']+)'", build.error)
    doc = kustomization_doc(root / build.dir) if named else {}
    for key in PATH_LISTS if named else ():
        entries = as_list(doc.get(key))
        if named.group(1) in entries:
            line = line_at(root, file, None, [key, entries.index(named.group(1))])
            break
    if "unable to parse SM or JSON patch from [patch:" in build.error:  # kustomize's PatchTransformer: an inline patch neither form reads
        unparsed = next(filter(None, (_patch_syntax(root, d, build) for d in sorted(reachable(root / build.dir)))), None)
        if unparsed is not None:
            return unparsed
    if line is None:  # e.g. a generator's file that is missing, a helm chart's repo
        line = quoted_value_line(root, file, build.error)
    entry = (root / build.dir / named.group(1)) if named else None
    inside = entry is not None and entry.resolve().is_relative_to(root.resolve())
    if inside and entry.is_file() and ": must build at directory" in build.error and "no such file" not in build.error:
        # A file kustomize read and refused (an object without metadata.name, a list where a mapping belongs): kustomize
        # then tries it as a directory, and its last words are about that. The cause is in the file.
        rel = entry.resolve().relative_to(root.resolve()).as_posix()
        cause = build.error.split(": must build at directory")[0].strip()
        twice = _registered_twice(root, build, entry, cause)
        if twice:
            return twice
        return Finding(rel, _object_line(entry, cause), "", "kustomize-build", f"{cause} (listed at {file}:{line})" if line else cause,
                       f"fix the objects in {rel}: each document a mapping with apiVersion, kind and metadata.name", build.id)
    gone = re.search(MISSING, build.error)  # a file or directory kustomize names by its path (root-relative; its own: artifact_finding)
    if entry is None and gone and (gone.group(1) or gone.group(2)) != build.dir:
        entry = root / (gone.group(1) or gone.group(2))
    # The entry as written (a symlink on its way may lead out of the repository: the artifact holds no symlink either way).
    listed = entry is not None and Path(posixpath.normpath(entry.absolute())).is_relative_to(Path(root).absolute())
    missing = artifact_finding(root, build, entry if listed else None, file, line, lambda link: _listings(root, link))
    if missing is not None:  # the checkout has it, the artifact source-controller packs (what Flux builds from) does not
        return missing
    recursed = re.findall(r"recursed accumulation of path '([^']+)'", build.error)
    inner = next((d for d in (root / recursed[-1], root / build.dir / recursed[-1]) if kustomization_file(d)), None) if recursed else None
    if inner is not None and inner.resolve().is_relative_to(root.resolve()) and inner.resolve() != (root / build.dir).resolve():
        # A component or base the build includes fails on its own (a patch whose path its target lacks): the cause is
        # written there, and every kustomization that includes it fails alike.
        rel = kustomization_file(inner).resolve().relative_to(root.resolve()).as_posix()
        own = (inner / named.group(1)) if named else None  # a file of the component or base kustomize read and refused
        twice = _registered_twice(root, build, own, build.error.split(": must build at directory")[0].strip()) \
            if own is not None and own.is_file() else None
        if twice:
            return twice
        return Finding(rel, _pointer_line(kustomization_file(inner), build.error), "", "kustomize-build",
                       f"{build.error.strip()} (included by {file}{f':{line}' if line else ''})",
                       f"fix {rel} as the message says (a JSON patch path must exist in every object its target selects); "
                       "each kustomization that includes it fails until then", build.id)
    return Finding(file, line, "", "kustomize-build", build.error.strip(), _build_hint(build), build.id)


UNSERIALISABLE = "json: unsupported type: map[interface {}]interface {}"  # kustomize's Resource.MarshalJSON (yaml_keys)
# What kustomize says of a path it cannot find: a patch, a generator's file (`open P: no such file or directory`), a component
# or base directory (`evalsymlink failure on 'P' : lstat P: no such file or directory`).
MISSING = re.compile(r"evalsymlink failure on '([^']+)'|open ([^\s:]+): no such file or directory")


def _listings(root: Path, link: Path) -> list[tuple[str, int | None]]:
    """Where the repository's kustomization files list `link` or a path below it (resources, components, patches' paths...):
    (file, line) each, in order; the listings of a shared symlinked directory are one cause."""
    rootr, out = root.resolve(), []
    target = link.absolute().relative_to(root.absolute()).as_posix()
    for d in sorted(local_kustomization_dirs(rootr)):
        rel, doc = kustomization_file(d).relative_to(rootr).as_posix(), kustomization_doc(d)
        here = d.relative_to(rootr).as_posix()
        entries = [([key, i], e) for key in PATH_LISTS for i, e in enumerate(as_list(doc.get(key)))]
        entries += [([key, i, "path"], as_map(e).get("path")) for key in PATH_ENTRIES for i, e in enumerate(as_list(doc.get(key)))]
        for path, name in entries:
            joined = posixpath.normpath(posixpath.join(here, name)) if isinstance(name, str) and "://" not in name else None
            if joined is not None and (joined == target or joined.startswith(target + "/")):
                out.append((rel, line_at(root, rel, None, path)))
    return out


def _nonstring_key(root: Path, build: Build) -> Finding | None:
    """A build that fails because kustomize cannot serialise an object with a nested key YAML reads as no string: at the
    first such key among the files it reads (a resource, a patch), the cause whichever component or patch hits it."""
    files = sorted({f for d in reachable(root / build.dir) for f in references(d)[0]
                    if f.suffix in (".yaml", ".yml") and f.is_relative_to(root.resolve())})
    for path in files:
        keys = nonstring_keys(_text(path))
        if keys:
            rel, (line, key) = path.relative_to(root.resolve()).as_posix(), keys[0]
            return Finding(rel, line, "", "kustomize-build",
                           f"mapping key {key} is no string in YAML (a number, a boolean or null), and kustomize cannot serialise "
                           f"an object with one in a nested mapping ({UNSERIALISABLE}), so the build of {build.dir} fails"
                           f"{f' ({len(keys) - 1} more such key(s) in this file)' if len(keys) > 1 else ''}",
                           f"quote the key (`\"{key}\": ...`): a quoted key is a string for every tool, and kubectl and Flux make the same string of it", build.id)
    return next(filter(None, (_transformer_key(root, d, build) for d in sorted(reachable(root / build.dir)))), None)


def _transformer_key(root: Path, directory: Path, build: Build) -> Finding | None:
    """A label or annotation key the kustomization of `directory` sets on its objects (commonLabels, labels[].pairs,
    commonAnnotations) that YAML reads as no string when written plain: kustomize's transformer writes it into every
    object's metadata unquoted, whatever quotes it has here, and serialising the object then fails."""
    file = kustomization_file(directory)
    docs = compose(_text(file)) if file is not None and file.resolve().is_relative_to(root.resolve()) else ()
    maps = [(f"{key}", step(docs[0], key)[1]) for key in ("commonLabels", "commonAnnotations")] if docs else []
    labels = step(docs[0], "labels")[1] if docs else None
    maps += [(f"labels[{i}].pairs", step(e, "pairs")[1]) for i, e in enumerate(labels.value if isinstance(labels, yaml.SequenceNode) else [])]
    for field, node in maps:
        key = next((k for k, _ in node.value if isinstance(k, yaml.ScalarNode) and (written := loaded_key(k)) is not None
                    and plain_nonstring(written)), None) if isinstance(node, yaml.MappingNode) else None
        if key is not None:
            rel = file.resolve().relative_to(root.resolve()).as_posix()
            what = "annotation" if field == "commonAnnotations" else "label"
            return Finding(rel, key.start_mark.line + 1, "", "kustomize-build",
                           f"{field} sets the {what} key {key.value}{f' (read as {written})' if written != key.value else ''}, which YAML reads as no string (a number, a boolean or null) when "
                           f"written plain: kustomize's {what} transformer writes it into every object it sets {what}s unquoted, "
                           f"quoted here or not, and cannot serialise those objects then ({UNSERIALISABLE}), so the build of {build.dir} fails",
                           f"use a {what} key that is not a number, a boolean or null, or set it on the objects "
                           "themselves, quoted", build.id)
    return None


def _patch_syntax(root: Path, directory: Path, build: Build) -> Finding | None:
    """The first inline patch of `directory`'s kustomization that is not YAML at all (a flow mapping left open): kustomize's
    PatchTransformer then reads it as neither a strategic-merge nor a JSON patch, and every build that includes the
    directory fails. At the line of the patch text where PyYAML's parser finds the mistake (where the open `{` or quote
    starts, when it names one); None when every inline patch parses."""
    file = kustomization_file(directory)
    docs = compose(_text(file)) if file is not None and file.resolve().is_relative_to(root.resolve()) else ()
    for key in ("patches", "patchesJson6902") if docs else ():
        entries = step(docs[0], key)[1]
        for i, entry in enumerate(entries.value if isinstance(entries, yaml.SequenceNode) else []):
            body = step(entry, "patch")[1]
            if not isinstance(body, yaml.ScalarNode):
                continue
            try:
                parse_yaml_all(body.value)
                continue
            except yaml.YAMLError as err:
                opened = err.context_mark if any(w in str(err.context) for w in ("flow", "quoted")) else None
                mark, problem = opened or err.problem_mark or err.context_mark, err.problem or str(err)
                problem += f", {err.context}" if opened else ""
            rel = file.resolve().relative_to(root.resolve()).as_posix()
            # A block scalar (`patch: |-`) starts its text on the line below its indicator.
            line = body.start_mark.line + 1 + (body.style in ("|", ">")) + (mark.line if mark else 0)
            return Finding(rel, line, "", "kustomize-build",
                           f"{key}[{i}].patch is not valid YAML ({problem}), so kustomize reads it as "
                           f"neither a strategic-merge nor a JSON patch: every kustomization that includes {directory.resolve().relative_to(root.resolve()).as_posix() or '.'} "
                           "fails to build", "fix the patch's YAML syntax at this line (a flow mapping `{...}` or list `[...]` left open, "
                           "indentation, quoting); a JSON patch is a list of `- {op: replace, path: /..., value: ...}`", build.id)
    return None


def _pointer_line(path: Path, error: str) -> int | None:
    """The line of `path` where the longest JSON pointer (/a/b/0/c) kustomize's `error` quotes is written; None if none is."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for pointer in sorted(set(re.findall(r"/[\w.~-]+(?:/[\w.~-]+)+", error)), key=len, reverse=True):
        found = next((i + 1 for i, text in enumerate(lines) if pointer in text), None)
        if found:
            return found
    return None


def _object_line(path: Path, error: str) -> int:
    """The line of the document of `path` that kustomize's `error` names by its kind ("{{kueue.x-k8s.io/v1beta2
    LocalQueue} ..."), the first one without a metadata.name among them; else 1."""
    named = re.search(r"\{\{\S+ (\w+)\}", error)
    try:
        docs = compose(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return 1
    kinds = [d for d in docs if named and isinstance(step(d, "kind")[1], yaml.ScalarNode) and step(d, "kind")[1].value == named.group(1)]
    unnamed = [d for d in kinds if descend(d, ["metadata", "name"])[1] is None]
    return (unnamed or kinds)[0].start_mark.line + 1 if (unnamed or kinds) else 1


def _registered_twice(root: Path, build: Build, entry: Path, cause: str) -> Finding | None:
    """kustomize refusing a second object of the same kind, name and namespace ("already registered id:
    Kind.version.group/name.namespace"): at the metadata.name of the one in `entry`, naming where the other is written
    among the files the build reads (a copied file left with the original's name, as in adding a team)."""
    found = re.search(r"already registered id: ([^./\s]+)\.[^/\s]*/(\S+?)'?$", cause)
    if not found:
        return None
    kind, (name, _, namespace) = found.group(1), found.group(2).rpartition(".")
    namespace = "" if namespace == "[noNs]" else namespace

    def defines(path: Path) -> int | None:
        for d in compose(_text(path)):
            if isinstance(step(d, "kind")[1], yaml.ScalarNode) and step(d, "kind")[1].value == kind and \
                    getattr(descend(d, ["metadata", "name"])[1], "value", None) == name and \
                    getattr(descend(d, ["metadata", "namespace"])[1], "value", namespace) in (namespace, None):
                return descend(d, ["metadata", "name"])[0].start_mark.line + 1
        return None

    line = defines(entry)
    if line is None:
        return None
    rel = entry.resolve().relative_to(root.resolve()).as_posix()
    others = sorted(f"{p.resolve().relative_to(root.resolve()).as_posix()}:{at}" for p in {f for d in reachable(root / build.dir) for f in references(d)[0]}
                    if p.resolve() != entry.resolve() and p.resolve().is_relative_to(root.resolve()) and (at := defines(p)))
    where = f" ({', '.join(others)} defines it first)" if others else ""
    return Finding(rel, line, f"{kind}/{namespace + '/' if namespace else ''}{name}", "kustomize-build",
                   f"{kind} {name}{f' in namespace {namespace}' if namespace else ''} is written twice in the build of {build.dir}{where}: "
                   "kustomize refuses the second one, so the build fails and nothing of it is applied",
                   f"rename {kind} {name} here (a copied file keeps the original's names: rename every object in it), or remove one of them",
                   build.id)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _build_hint(build: Build) -> str:
    """The fix of a build error; kustomize-controller's own limits named where the error shows one."""
    if "--enable-helm" in build.error:
        return ("kustomize-controller does not inflate `helmCharts`: install the chart with a Flux HelmRelease "
                "(as flux/ does for Kueue and KubeRay) and remove the helmCharts entry")
    if "://" in build.error and ("dial tcp" in build.error or "no such host" in build.error or "Get \"" in build.error):
        return ("the gate renders offline and cannot fetch a remote base; kustomize-controller would fetch it on every "
                "reconcile, unpinned unless its ref is: vendor the manifests into the repository, or reference them "
                "through a Flux GitRepository/OCIRepository source and a Flux Kustomization")
    return f"run `kustomize build {build.dir}` and fix the reference or patch it names"


_INVALID_VAR = re.compile(r"'([^']*)' var name is invalid")
_HEALTH_CHECK = re.compile(r"healthchecks\[(\d+)\](?:: failed to parse the expression (Current|InProgress|Failed))?")


def flux_build_error(ks: dict, error: str, root: Path, prefix: str = "") -> tuple[str, str, str, str | None]:
    """(rule, message, hint, field) for a Flux Kustomization whose build fails, at the setting that makes it fail. `prefix`:
    the checked tree `root`'s directory in its Git work tree, which spec.path starts from (flux_paths)."""
    spec = as_map(ks.get("spec"))
    message = f"spec.path {spec.get('path')!r}: {error}"
    invalid = _INVALID_VAR.search(error)
    if invalid:
        name = invalid.group(1)
        where = f"spec.postBuild.substitute[{name}]" if name in as_map(as_map(spec.get("postBuild")).get("substitute")) else "spec.postBuild"
        return ("kustomize-build", f"postBuild variable {name!r} is no valid name, so kustomize-controller builds nothing of this layer: {error}",
                "name variables with letters, digits and underscores, not starting with a digit (in substitute and in the substituteFrom sources)",
                where)
    if "InvalidCELExpression" in error and (check := _HEALTH_CHECK.search(error)):
        index, which = check.groups()
        where = f"spec.healthCheckExprs[{index}]" + (f".{which[0].lower()}{which[1:]}" if which else "")
        return ("flux-health-check-expr", f"{where}: {error.splitlines()[0]}", "fix the CEL expression (kustomize-controller compiles every "
                "healthCheckExprs entry before it builds the layer; one GroupKind per entry, `current` required)", where)
    if "is SOPS encrypted, configuring decryption is required" in error:
        return ("flux-decryption", f"spec.path {spec.get('path')!r}: {error}; nothing of this layer is applied",
                "add spec.decryption: {provider: sops, secretRef: {name: <the Secret in the Kustomization's namespace holding the "
                "age/PGP key>}} to this Kustomization", "spec")
    if "post build failed" in error:
        return "kustomize-build", message, "fix spec.postBuild (its substitute values and substituteFrom sources)", "spec.postBuild"
    if spec.get("targetNamespace") and "namespace transformation" in error:
        return ("kustomize-build", f"spec.targetNamespace {spec['targetNamespace']!r}: {error}",
                "drop spec.targetNamespace or set one that no two objects of the layer collide in (a Namespace object is renamed to it too)",
                "spec.targetNamespace")
    if spec.get("components") and "accumulating components" in error:
        return "kustomize-build", message, "point each spec.components entry at a kustomize Component, relative to spec.path", "spec.components"
    if spec.get("patches") and any(w in error for w in ("operation does not apply", "patch", "no matches for Id", "failed to find unique target")):
        return ("kustomize-build", f"spec.patches: {error}", "fix the spec.patches entry the message names (its target, its op's path), "
                "or remove it: kustomize-controller builds nothing of this layer while it fails", "spec.patches")
    if "not a directory" in error:
        return ("flux-path", f"spec.path {spec.get('path')!r} is a file: kustomize-controller builds a directory, so nothing of this "
                "layer is applied", "point spec.path at the directory that holds the kustomization file", "spec.path")
    mine = flux_path(spec.get("path", "./"))  # the path as if written from the checked tree
    if "not found" in error and prefix and (root / mine).is_dir():  # Flux reads it from the Git root, above the checked tree
        return ("flux-path", f"{message}: spec.path starts from the Git root, where this tree is {prefix}/", f"point spec.path at "
                f"{written(mine, prefix)}", "spec.path")
    if "not found" in error or "escapes" in error:
        return "flux-path", message, "point spec.path at a directory of this repository that builds with kustomize", "spec.path"
    return "kustomize-build", message, "point spec.path at a directory of this repository that builds with kustomize", None
