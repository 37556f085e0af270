"""Strict schema validation of rendered objects with kubeconform and the offline schemas."""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path


from harness.gate import schemas
from harness import toolchain as tools
from harness.core import versions

KUBERNETES_VERSION = versions.module("kubernetes")[1].removeprefix("v")


def kubeconform_args(schema_dir: Path) -> list[str]:
    """The flags both the gate and the reference pipeline use: strict, offline, no skipping."""
    return [
        "-strict",
        "-kubernetes-version", KUBERNETES_VERSION,
        "-schema-location", str(schema_dir) + "/{{ .ResourceKind }}{{ .KindSuffix }}.json",
    ]


def validate(objects: list[dict]) -> list[tuple[dict, str, str]]:
    """Returns (object, status, message) for every object that is not valid.

    status is "invalid" (schema violation) or "unknown" (no schema: an apiVersion/kind the
    cluster would not serve). Identical objects are validated once.
    """
    unique: dict[str, dict] = {}
    for obj in objects:
        unique.setdefault(json.dumps(obj, sort_keys=True, default=str), obj)
    if not unique:
        return []
    binary = tools.ensure("kubeconform")["kubeconform"].path()
    with tempfile.TemporaryDirectory(prefix="gate-objects-") as tmp:
        by_file = {}
        for i, obj in enumerate(unique.values()):
            # JSON, which kubeconform reads like YAML: writing it costs a tenth of PyYAML's dumper.
            path = Path(tmp) / f"{i:05d}.json"
            path.write_text(json.dumps(obj, default=str))
            by_file[str(path)] = obj
        proc = subprocess.run(
            # One worker: each kubeconform worker compiles every schema it meets again (a RayJob
            # schema takes ~0.25 s), so on 2 cores -n 1 is the fastest setting.
            [str(binary), *kubeconform_args(schemas.schema_dir()), "-n", "1", "-output", "json", tmp],
            capture_output=True, text=True,
        )
    try:
        report = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError:
        raise RuntimeError(f"kubeconform gave no JSON report (exit {proc.returncode}): {proc.stderr.strip()}") from None
    problems = []
    for res in report.get("resources") or []:
        obj = by_file.get(res.get("filename"), {})
        status = res.get("status")
        if status == "statusInvalid":
            errors = res.get("validationErrors") or []
            details = "; ".join(f"{e.get('path') or '/'}: {e.get('msg')}" for e in errors)
            # Several errors under one parent collapse into "validation failed"; msg has them all.
            if not details or any("failed" in str(e.get("msg")) for e in errors):
                details = res.get("msg", details)
            problems.append((obj, "invalid", details))
        elif status == "statusError":
            msg = res.get("msg", "")
            problems.append((obj, "unknown" if "could not find schema" in msg else "invalid", msg))
    return problems
