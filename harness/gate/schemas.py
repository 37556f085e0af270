"""Offline, strict JSON schemas for kubeconform, derived from the pinned Go module sources.

kubeconform normally downloads schemas from GitHub; the gate runs without internet, so the
schemas are generated here from what `go mod download` already fetched:

* built-in kinds: the OpenAPI v3 documents of k8s.io/kubernetes (`api/openapi-spec/v3/*.json`),
  every group/version/kind in them (alpha and beta included; not DeleteOptions and WatchEvent,
  which are request/response bodies listed under every group, not objects);
* custom resources: every served version of the CRDs shipped by the pinned Kueue, KubeRay and
  Flux controllers (`config/.../crd/bases/*.yaml`, see `crd_files`).

Each is converted by harness.gate.schema_convert (strict, nullable optionals, references inlined)
into one flat directory of self-contained ("standalone") draft-4 schemas, one file per kind and
version, named the way kubeconform's template `{{ .ResourceKind }}{{ .KindSuffix }}.json` looks
them up (see `schema_filename`). Unlike openapi2jsonschema's default for CRDs, a CRD's root is
strict too (a top-level `specs:` is an error), and its `metadata` (controller-gen writes just
`type: object`) is validated as the real ObjectMeta, so a typo such as `metadata.lables` is caught
in custom resources too. Embedded `metadata` deeper down (pod templates in a RayJob) stays
`type: object`, as upstream has it.

The directory is generated once per set of pinned versions (and version of the generator), under
`cache_root()/schemas/<hash>/`, atomically with a stamp; later calls only check the stamp.
`_index.json` in it maps each file to its apiVersion, kind and source. Use it as

    kubeconform -strict -schema-location '<dir>/{{ .ResourceKind }}{{ .KindSuffix }}.json' \
        -kubernetes-version 1.35.0 -output json FILE...

    python -m harness.gate.schemas      # print the directory (generating it if needed)
"""
from __future__ import annotations

import concurrent.futures
import fnmatch
import functools
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import yaml

from harness.core import cache_lock, cache_root, publish_dir, say, versions
from harness.gate import schema_convert
from harness.gate.schema_convert import REF_PREFIX, SchemaError, StrictConverter
from harness.toolchain import module_dir, module_info

STAMP = ".complete"
INDEX = "_index.json"  # filename -> {"apiVersion", "kind", "source"}; cannot clash with a schema name
# Every pinned (and configured) CRD for tools/fluxbuild's check (apiserver validation), one JSON file
# per served version (the CRD with only that version), listed in order with its group, kind and the file
# of each served version in crds/index.json: the check reads only the versions of the kinds it meets.
CRDS = "crds"

KUBERNETES = "kubernetes"
# pin key -> CRD directory inside the module, and the kinds that must be there (a moved path fails
# loudly); files are named <group>_<plural>.yaml by controller-gen.
CRD_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "kueue": ("config/components/crd/bases", ("ClusterQueue", "LocalQueue", "ResourceFlavor", "Workload")),
    "kuberay": ("config/crd/bases", ("RayCluster", "RayJob", "RayService")),
    "flux.source-controller": (
        "config/crd/bases",
        ("GitRepository", "OCIRepository", "HelmRepository", "HelmChart", "Bucket"),
    ),
    "flux.kustomize-controller": ("config/crd/bases", ("Kustomization",)),
    "flux.helm-controller": ("config/crd/bases", ("HelmRelease",)),
}
PINS = (KUBERNETES, *CRD_SOURCES)
# Charts the pinned modules carry, copied as charts/<name> for tools/fluxbuild's op helm (harness.gate.helm_values):
# pin key -> (chart directory inside the module, what is left out (fnmatch patterns): what Helm never renders, the
# CRD templates (the pinned CRDs, checked as such), and the 42 aggregated editor/viewer ClusterRoles, which take
# nothing from the values but the release's name and labels (helpers kueue.fullname and kueue.labels, which the
# Deployment, Services and webhooks rendered beside them carry too; tests/static/test_kueue_wiring.py holds them to
# that), and are two thirds of what rendering and checking would cost.
CHARTS = "charts"
CHART_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "kueue": ("charts/kueue", ("tests/*", "README*", "templates/crd/*", "templates/rbac/*_editor_role.yaml", "templates/rbac/*_viewer_role.yaml")),
    # Layer 1's NVIDIA device plugin (the upstream chart the HelmRelease installs from its own repository; charts/ holds
    # its node-feature-discovery dependency, which Helm loads and the default values leave off).
    "nvidia-device-plugin": ("deployments/helm/nvidia-device-plugin", ()),
}

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


# -- naming ---------------------------------------------------------------------------------------
def kind_suffix(api_version: str) -> str:
    """kubeconform v0.7.0 pkg/registry schemaPath: `-<first DNS label of group>-<version>`, core `-v1`."""
    group_parts = api_version.split("/")
    suffix = "-" + group_parts[0].split(".")[0].lower()
    if len(group_parts) > 1:
        suffix += "-" + group_parts[1].lower()
    return suffix


def schema_filename(api_version: str, kind: str) -> str:
    return f"{kind.lower()}{kind_suffix(api_version)}.json"


def schema_location(directory: Path | None = None) -> str:
    """The value for `kubeconform -schema-location`."""
    return str(directory or schema_dir()) + "/{{ .ResourceKind }}{{ .KindSuffix }}.json"


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


# -- sources --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _module_dir(pin: str) -> Path:
    return module_dir(pin)


def crd_files() -> list[Path]:
    """The upstream CRD manifests (YAML) of the pinned Kueue, KubeRay and Flux controllers."""
    files: list[Path] = []
    for pin, (subdir, expected) in CRD_SOURCES.items():
        directory = _module_dir(pin) / subdir
        found = sorted(directory.glob("*.yaml"))
        plurals = {path.stem.partition("_")[2] for path in found}
        missing = sorted(kind for kind in expected if _plural(kind) not in plurals)
        if missing:
            raise SchemaError(f"{pin} {versions.module(pin)[1]}: no CRD for {', '.join(missing)} in {directory}")
        files += found
    return files


def _plural(kind: str) -> str:
    kind = kind.lower()
    if kind.endswith("y"):
        return kind[:-1] + "ies"
    return kind + ("es" if kind.endswith(("s", "x", "ch", "sh")) else "s")


def _crds(path: Path) -> list[dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the CRDs are several MB
    with path.open(encoding="utf-8") as fh:
        return [d for d in yaml.load_all(fh, Loader=loader) if d and d.get("kind") == "CustomResourceDefinition"]


def _kubernetes_components() -> dict[str, dict]:
    """All `components.schemas` of the v3 documents, merged (the same name is the same schema)."""
    spec_dir = _module_dir(KUBERNETES) / "api" / "openapi-spec" / "v3"
    merged: dict[str, dict] = {}
    documents = sorted(spec_dir.glob("*_openapi.json"))
    if not documents:
        raise SchemaError(f"no OpenAPI v3 documents in {spec_dir}")
    for path in documents:
        with path.open(encoding="utf-8") as fh:
            for name, schema in json.load(fh).get("components", {}).get("schemas", {}).items():
                if merged.setdefault(name, schema) != schema:
                    raise SchemaError(f"{name} differs between OpenAPI documents ({path.name})")
    return merged


def _builtin_schemas(conv: StrictConverter) -> dict[str, tuple[str, str, dict]]:
    """filename -> (apiVersion, kind, schema) for every group/version/kind in the OpenAPI spec."""
    out = {}
    for name, source in sorted(conv.source.items()):
        gvks = source.get("x-kubernetes-group-version-kind", [])
        if len(gvks) > 1:  # DeleteOptions, WatchEvent: request/response bodies of every group, not objects
            continue
        for gvk in gvks:
            api_version = _api_version(gvk["group"], gvk["version"])
            filename = schema_filename(api_version, gvk["kind"])
            if filename in out:  # two groups with the same first DNS label
                raise SchemaError(f"{api_version} {gvk['kind']} and {out[filename][0]} both map to {filename}")
            out[filename] = (api_version, gvk["kind"], conv.standalone(conv.defs[name]))
    return out


def _crd_schemas(conv: StrictConverter, parsed: list[tuple[Path, list[dict]]]) -> dict[str, tuple[str, str, dict, str]]:
    out = {}
    kinds = set()
    for path, crds in parsed:
        for crd in crds:
            kinds.add(crd["spec"]["names"]["kind"])
            spec = crd["spec"]
            kind = spec["names"]["kind"]
            for ver in spec.get("versions") or []:
                if not ver.get("served", True):
                    continue
                raw = (ver.get("schema") or {}).get("openAPIV3Schema") or (spec.get("validation") or {}).get("openAPIV3Schema")
                if not raw:
                    raise SchemaError(f"{path.name}: {kind} {ver['name']} has no openAPIV3Schema")
                root = conv.convert(raw)
                meta = (raw.get("properties") or {}).get("metadata")
                if meta is not None and {k: v for k, v in meta.items() if k != "description"} == {"type": "object"}:
                    root["properties"]["metadata"] = {"$ref": REF_PREFIX + OBJECT_META}
                api_version = _api_version(spec["group"], ver["name"])
                filename = schema_filename(api_version, kind)
                if filename in out:
                    raise SchemaError(f"{api_version} {kind} and {out[filename][0]} both map to {filename}")
                out[filename] = (api_version, kind, conv.standalone(root), path.name)
    missing = sorted({k for _, expected in CRD_SOURCES.values() for k in expected} - kinds)
    if missing:
        raise SchemaError(f"no CustomResourceDefinition for {', '.join(missing)} in {len(parsed)} CRD files")
    return out


# -- cache ----------------------------------------------------------------------------------------
# Hashed when imported, so the key always matches the code that runs (not a later edit of the files).
_GENERATOR_DIGEST = hashlib.sha256(Path(__file__).read_bytes() + Path(schema_convert.__file__).read_bytes()).digest()


def cache_key() -> str:
    """Hash of the pinned versions the schemas come from and of this generator."""
    digest = hashlib.sha256()
    digest.update(json.dumps({pin: versions.module(pin) for pin in (*PINS, *CHART_SOURCES)}, sort_keys=True).encode())
    digest.update(_GENERATOR_DIGEST)
    return digest.hexdigest()[:16]


def schema_dir(extra_crds: tuple[Path, ...] = ()) -> Path:
    """The directory of strict standalone schemas for the pinned versions (generated on first use),
    with the CRDs of `extra_crds` (YAML files: a checked repository's own, e.g. ServiceMonitor) too."""
    key = cache_key()
    if extra_crds:
        digest = hashlib.sha256()
        for path in extra_crds:
            digest.update(Path(path).read_bytes() + b"\0")
        key += "-" + digest.hexdigest()[:12]
    target = cache_root() / "schemas" / key
    if (target / STAMP).exists():
        return target
    with cache_lock("schemas"):  # concurrent runs wait for one generator
        if not (target / STAMP).exists():
            _generate(target, tuple(extra_crds))
    return target


def _generate(target: Path, extra_crds: tuple[Path, ...] = ()) -> None:
    started = time.monotonic()
    pins = ", ".join(f"{pin} {versions.module(pin)[1]}" for pin in PINS)
    say("schemas", f"generating strict JSON schemas ({pins}{f', {len(extra_crds)} extra CRD file(s)' if extra_crds else ''}) into {target}")
    files = crd_files() + [Path(p) for p in extra_crds]
    # Parsing the CRD YAML (several MB) is most of the time: do it in worker processes while
    # this one converts the Kubernetes OpenAPI documents.
    with concurrent.futures.ProcessPoolExecutor(min(len(files), os.cpu_count() or 1)) as pool:
        parsing = [pool.submit(_crds, path) for path in files]
        conv = StrictConverter(_kubernetes_components())
        if OBJECT_META not in conv.defs:
            raise SchemaError(f"{OBJECT_META} missing from the Kubernetes OpenAPI spec")
        builtin = _builtin_schemas(conv)
        parsed = [(path, job.result()) for path, job in zip(files, parsing)]
        crds = _crd_schemas(conv, parsed)
    index: dict[str, dict] = {}
    outputs: dict[str, dict] = {}
    for name, (api_version, kind, schema) in builtin.items():
        outputs[name] = schema
        index[name] = {"apiVersion": api_version, "kind": kind, "source": f"kubernetes {versions.module(KUBERNETES)[1]}"}
    for name, (api_version, kind, schema, source) in crds.items():
        if name in outputs:
            raise SchemaError(f"{source}: {api_version} {kind} would overwrite {name} ({index[name]['apiVersion']})")
        outputs[name] = schema
        index[name] = {"apiVersion": api_version, "kind": kind, "source": source}

    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for name, schema in outputs.items():
            (staging / name).write_text(json.dumps(schema, separators=(",", ":")), encoding="utf-8")
        (staging / INDEX).write_text(json.dumps(dict(sorted(index.items())), indent=1) + "\n", encoding="utf-8")
        _write_crds(staging / CRDS, [crd for _, docs in parsed for crd in docs])
        _copy_charts(staging / CHARTS)
        (staging / STAMP).write_text(f"{pins}\n", encoding="utf-8")
        publish_dir(staging, target)  # replaces a half-written directory without a stamp
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    say("schemas", f"{len(builtin)} built-in and {len(crds)} custom resource schemas ready in {time.monotonic() - started:.1f}s")


def _write_crds(directory: Path, crds: list[dict]) -> None:
    directory.mkdir()
    entries = []
    for i, crd in enumerate(crds):
        spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
        names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
        served = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served")]
        files = {}
        for v in served:  # one file per served version, with only that version: decoding a CRD is most of what its validator costs
            files[str(v.get("name"))] = name = f"{i}-{len(files)}.json"
            (directory / name).write_text(json.dumps({**crd, "spec": {**spec, "versions": [v]}}, separators=(",", ":"), default=str), encoding="utf-8")
        entries.append({"group": str(spec.get("group", "")), "kind": str(names.get("kind", "")), "served": list(files), "files": files})
    (directory / "index.json").write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")


def _copy_charts(directory: Path) -> None:
    for pin in CHART_SOURCES:
        _copy_chart(pin, _module_dir(pin), versions.module(pin)[1], directory / pin)


def _copy_chart(pin: str, module: Path, version: str, target: Path) -> None:
    """Copies a chart's files (not their read-only modes) from the module cache."""
    subdir, left_out = CHART_SOURCES[pin]
    source = module / subdir
    if not (source / "Chart.yaml").is_file():
        raise SchemaError(f"{pin} {version}: no chart in {source}")
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source).as_posix()
        if path.is_file() and not any(fnmatch.fnmatch(relative, pattern) for pattern in left_out):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            (target / relative).write_bytes(path.read_bytes())


def chart_dir(pin: str, extra_crds: tuple[Path, ...] = (), version: str | None = None) -> Path:
    """The copy of a pinned chart (CHART_SOURCES) in the schema directory; with `version` (a module version of the
    pin's versions.yaml entry: the pin or a candidate), that module's chart, copied once under cache_root()/charts."""
    if version is None or version == versions.module(pin)[1]:
        return schema_dir(extra_crds) / CHARTS / pin
    return _other_chart(pin, version)


@functools.lru_cache(maxsize=None)
def _other_chart(pin: str, version: str) -> Path:
    target = cache_root() / CHARTS / f"{pin}@{version}-{_GENERATOR_DIGEST.hex()[:12]}"
    if (target / STAMP).exists():
        return target
    with cache_lock("charts"):
        if not (target / STAMP).exists():
            staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            try:
                _copy_chart(pin, Path(module_info(versions.module(pin)[0], version)["Dir"]), version, staging)
                (staging / STAMP).write_text(f"{pin} {version}\n", encoding="utf-8")
                publish_dir(staging, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return target


def index() -> dict[str, dict]:
    """filename -> {"apiVersion", "kind", "source"} of every generated schema."""
    return json.loads((schema_dir() / INDEX).read_text(encoding="utf-8"))


if __name__ == "__main__":
    print(schema_dir())
    sys.exit(0)
