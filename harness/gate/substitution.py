"""Which objects of a plain kustomize build the gate judges as written: not one with a ${VAR} in a directory a Flux
Kustomization with postBuild builds (kustomize-controller substitutes it; the cluster's render is judged), nor one
carrying SOPS metadata (kustomize-controller decrypts it, or refuses the layer without spec.decryption)."""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from harness.gate.findings import Finding
from harness.gate.flux_paths import flux_path
from harness.gate.origin import line_at
from harness.gate.render import ClusterRender, Build, is_flux_kustomization
from harness.gate.sources import as_map, as_maps, name_key, reachable_dirs, resource_id

_NOT_SET = re.compile(r'variable not set \(strict mode\): "?([A-Za-z_][A-Za-z0-9_]*)')
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")  # the name of a ${VAR}, ${VAR:=default}, ${VAR:-default}


def substituted_dirs(root: Path, clusters: list[ClusterRender], builds: list = (), prefix: str = "") -> set[str]:
    """The directories (repository-relative) a Flux Kustomization with spec.postBuild builds: kustomize-controller
    replaces the ${VAR}s of their objects, which the gate checks as substituted in that cluster's render. Those a
    plain build's Flux Kustomizations name count too (an entry point that is no cluster of the gate's, such as
    clusters/local/entry): Flux substitutes them as well. `prefix`: the checked tree's directory in its Git work tree."""
    substituting = [b.flux_kustomization for c in clusters for b in c.flux if b.flux_kustomization]
    substituting += [o for b in builds for o in b.objects if is_flux_kustomization(o)]
    out: set[str] = set()
    for ks in substituting:
        spec = as_map(ks.get("spec"))
        if isinstance(spec.get("postBuild"), dict) and isinstance(spec.get("path"), str):
            start = (root / flux_path(spec["path"], prefix)).resolve()
            if start.is_relative_to(root.resolve()) and start.is_dir():
                out |= {d.relative_to(root).as_posix() for d in reachable_dirs(root, start) if d.is_relative_to(root)}
    return out


def has_variable(value) -> bool:
    """Whether a ${VAR} is written anywhere in `value` (an object, a list or a string)."""
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(has_variable(k) or has_variable(v) for k, v in value.items())
    return isinstance(value, list) and any(has_variable(v) for v in value)


def as_written(build: Build, obj: dict, substituted: set[str]) -> bool:
    """Whether a plain build's object is checked as written: not one with a ${VAR} in a directory Flux substitutes (the
    cluster's render checks it substituted), nor one carrying SOPS metadata (kustomize-controller decrypts it, or refuses
    the layer without spec.decryption: the cluster's render judges it, tools/fluxbuild fluxapply.go)."""
    return not (build.dir in substituted and has_variable(obj)) and not isinstance(obj.get("sops"), dict)


def undefined_variable(ctx, cluster: ClusterRender, build: Build, message: str) -> Finding:
    """flux-variable-undefined for one of a layer's ${VAR}s that kustomize-controller's strict substitution finds set
    nowhere (`message`, its error): at the line that writes ${VAR} in the files the layer builds (the same for every
    cluster that builds them, so one finding), naming the defined variable it is likely a misspelling of; else at the
    Flux Kustomization."""
    ks = build.flux_kustomization or {}
    hint = f"define the variable in postBuild.substitute or in the substituteFrom ConfigMap (see {ctx.config.variables_file(cluster.name)})"
    found = _NOT_SET.search(message)
    if found is None:
        return ctx.finding(ks, build, "flux-variable-undefined", f"postBuild substitution: {message}", hint)
    name = found.group(1)
    known = {str(k) for v in cluster.variables for k in as_map(v.get("data"))}
    for other in cluster.kustomizations():
        known |= {str(k) for k in as_map(as_map(as_map(other.get("spec")).get("postBuild")).get("substitute"))}
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
    if close:
        hint = f"correct the spelling to ${{{close[0]}}}, which the cluster defines; or define {name} in postBuild.substitute or in " \
               f"the substituteFrom ConfigMap (see {ctx.config.variables_file(cluster.name)})"
    written = re.compile(r"(?<!\$)\$\{" + re.escape(name) + r"(?![A-Za-z0-9_])")
    user = next((o for o in build.objects if written.search(repr(o))), None)
    dirs = tuple(ctx.reached(build.dir)) if build.dir else ()
    for doc in ctx.sources.docs:
        if not doc.file.startswith(dirs):
            continue
        lines = (ctx.sources.root / doc.file).read_text(encoding="utf-8", errors="replace").splitlines()
        at = next((i + 1 for i, text in enumerate(lines) if written.search(text)), None)
        if at is not None:
            return Finding(doc.file, at, resource_id(user) if user else resource_id(ks), "flux-variable-undefined",
                           f"postBuild substitution: {message}: ${{{name}}} is written here and set nowhere", hint, build.id)
    return ctx.finding(ks, build, "flux-variable-undefined", f"postBuild substitution: {message}", hint)


def variable_origin(root: Path, cluster: ClusterRender, build: Build, text: str | None, locate,
                    prefer: tuple[str, ...]) -> tuple[str | None, int | None, str] | None:
    """Where Flux takes the value of the first ${VAR} of `text` from for the layer `build` renders on `cluster`: (file,
    line, VAR) of its spec.postBuild.substitute entry (which overrides the sources), else of the key in the last
    substituteFrom ConfigMap or Secret that holds it (the cluster's stand-in or one a layer applies); (None, None, VAR)
    when neither sets it (a ${VAR:=default} then takes the default, where it is written); None without a ${VAR} or a
    postBuild. `locate`: Sources.locate; `prefer`: the cluster's own files first (Flux objects of every cluster share names)."""
    found = _VARIABLE.search(text or "")
    ks = build.flux_kustomization
    post = as_map(as_map(as_map(ks).get("spec")).get("postBuild"))
    if not found or not post:
        return None
    var = found.group(1)
    if var in as_map(post.get("substitute")):
        file, doc_line = locate(ks, prefer)
        return file, line_at(root, file, doc_line, ["spec", "postBuild", "substitute", var]), var
    namespace = as_map(ks.get("metadata")).get("namespace", "flux-system")
    applied = [o for b in [cluster.entry, *cluster.flux] for o in b.objects if o.get("kind") in ("ConfigMap", "Secret")]
    for ref in reversed(as_maps(post.get("substituteFrom"))):
        for source in [*cluster.variables, *applied]:
            meta = as_map(source.get("metadata"))
            if (source.get("kind"), name_key(meta.get("name")), meta.get("namespace", namespace)) != (ref.get("kind"), name_key(ref.get("name")), namespace):
                continue
            key = next((k for k in ("data", "stringData") if var in as_map(source.get(k))), None)
            if key:
                file, doc_line = locate(source, prefer)
                return file, line_at(root, file, doc_line, [key, var]), var
    return None, None, var
