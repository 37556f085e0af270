"""What an upgrade changes that this repository can see without a cluster: the CRD schemas of
Kueue and KubeRay at two versions (restricted to the fields this repository sets) and Kueue's
Configuration as the two binaries fill it in (harness.cluster.kueue_effective_config)."""
from __future__ import annotations

from pathlib import Path

import yaml

from harness.core import versions
from harness.gate import CRD_SOURCES
from harness.toolchain import module_info

# Parts of a schema node that change what is accepted (descriptions do not).
SCHEMA_KEYS = ("type", "enum", "default", "pattern", "format", "required", "minimum", "maximum", "minLength", "maxLength",
               "minItems", "maxItems", "x-kubernetes-validations", "x-kubernetes-int-or-string", "anyOf", "oneOf",
               "x-kubernetes-preserve-unknown-fields", "nullable")


def crd_schemas(component: str, version: str) -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> openAPIV3Schema of every served CRD version `component` ships at `version`."""
    mod = versions.entry(component)["module"]
    directory = Path(module_info(mod, version)["Dir"]) / CRD_SOURCES[component][0]
    out = {}
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for ver in spec.get("versions") or []:
                if ver.get("served", True):
                    out[(f"{spec['group']}/{ver['name']}", spec["names"]["kind"])] = (ver.get("schema") or {}).get("openAPIV3Schema") or {}
    return out


def flatten_schema(schema: dict, prefix: str = "") -> dict[str, dict]:
    """field path ("spec.resourceGroups[].flavors[].name") -> the node's validating keywords."""
    out = {prefix or ".": {k: schema[k] for k in SCHEMA_KEYS if k in schema}}
    for name, sub in (schema.get("properties") or {}).items():
        out.update(flatten_schema(sub, f"{prefix}.{name}" if prefix else name))
    if isinstance(schema.get("items"), dict):
        out.update(flatten_schema(schema["items"], f"{prefix}[]"))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out.update(flatten_schema(extra, f"{prefix}.*"))
    return out


def object_paths(obj, prefix: str = "") -> set[str]:
    """The field paths an object sets, in flatten_schema's notation (map keys of free-form maps included)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out.add(path)
            out |= object_paths(value, path)
    elif isinstance(obj, list):
        for item in obj:
            out.add(f"{prefix}[]")
            out |= object_paths(item, f"{prefix}[]")
    return out


def _matches(schema_path: str, set_paths: set[str]) -> bool:
    if schema_path in set_paths or schema_path == ".":
        return schema_path != "." or bool(set_paths)
    if ".*" in schema_path:  # a free-form map: any key stands for *
        head = schema_path.split(".*")[0]
        return any(p.startswith(head + ".") for p in set_paths)
    return any(p.startswith(schema_path + ".") or p.startswith(schema_path + "[]") for p in set_paths)


def crd_changes(component: str, old: str, new: str, repo_objects: list[dict]) -> list[dict]:
    """Schema changes between two versions, each marked `touches` when this repository sets that
    field (or a field below it): {"apiVersion", "kind", "path", "change", "old", "new", "touches"}."""
    before, after = crd_schemas(component, old), crd_schemas(component, new)
    set_paths: dict[tuple[str, str], set[str]] = {}
    for obj in repo_objects:
        key = (obj.get("apiVersion"), obj.get("kind"))
        set_paths.setdefault(key, set()).update(object_paths(obj))
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in after or key not in before:
            out.append({"apiVersion": key[0], "kind": key[1], "path": ".", "change": "version removed" if key not in after
                        else "version added", "old": None, "new": None, "touches": key in set_paths})
            continue
        out += [{"apiVersion": key[0], "kind": key[1], **c}
                for c in schema_changes(flatten_schema(before[key]), flatten_schema(after[key]), set_paths.get(key, set()))]
    return out


def schema_changes(a: dict[str, dict], b: dict[str, dict], set_paths: set[str]) -> list[dict]:
    """Differences of two flattened schemas: {"path", "change", "old", "new", "touches"}."""
    out = []
    for path in sorted(set(a) | set(b)):
        if a.get(path) == b.get(path):
            continue
        change = "field added" if path not in a else "field removed" if path not in b else "validation changed"
        out.append({"path": path, "change": change, "old": a.get(path), "new": b.get(path), "touches": _matches(path, set_paths)})
    return out


def flatten_config(cfg, prefix: str = "") -> dict[str, object]:
    """A Configuration as dotted path -> leaf value (lists kept whole)."""
    if not isinstance(cfg, dict):
        return {prefix: cfg}
    out: dict[str, object] = {}
    for key, value in cfg.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        out.update(flatten_config(value, path) if isinstance(value, dict) and value else {path: value})
    return out


def config_changes(old: dict, new: dict) -> list[dict]:
    """{"path", "old", "new"} for each Configuration value that differs (None: absent)."""
    a, b = flatten_config(old), flatten_config(new)
    return [{"path": p, "old": a.get(p), "new": b.get(p)} for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p)]
