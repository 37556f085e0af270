"""A checked repository's versions.yaml, whole, against harness/schemas-for-data/versions.schema.json and the candidates'
contract (harness.core.pin_file, the check harness.core.versions makes of the gate's own pins): each refusal is one
finding at its line with the fix. A Kueue or KubeRay chart or production it refuses is versions-drift (its Flux files
are not judged against it: refused); anything else, versions-schema."""
from __future__ import annotations

from pathlib import Path

from harness.core import pin_file
from harness.gate.findings import Finding
from harness.gate.sources import SourceError, read_source

REQUIRED = ("kueue", "kuberay")  # the pins every versions.yaml holds (the operators whose code the gate runs)
COMPONENTS = (*REQUIRED, "nvidia-device-plugin")  # the pins the drift rule reads (version_rules); the last one is optional
DRIFT_FIELDS = ("chart", "production")


def schema_errors(pinned: dict) -> list[pin_file.Refusal]:
    """pin_file's refusals of the parsed file (no lines); jsonschema's verdict is kept in the cache (pin_file)."""
    return pin_file.refusals(pinned)


def _drift(path: tuple) -> bool:
    return len(path) == 2 and path[0] in COMPONENTS and path[1] in DRIFT_FIELDS


def refused(pinned: dict, component: str) -> bool:
    """Whether the schema refuses `component`'s chart or production (then its drift is not judged)."""
    return any(_drift(r.path) and r.path[0] == component for r in schema_errors(pinned))


def production(pinned: dict | None, component: str) -> str:
    """`component`'s production pin as the rules compare it, "" when there is none or versions.schema.json refuses the
    component's pins (`production: 0.17`, a YAML float): a refused pin is the finding at its line, and no rule judges the
    Flux files against its text."""
    if not pinned or refused(pinned, component):
        return ""
    value = pinned.get(component).get("production") if isinstance(pinned.get(component), dict) else None
    return "" if value is None else str(value)


def refused_pins(root: Path, pinned: dict) -> list[Finding]:
    """One finding per refusal of the checked repository's versions.yaml, at its line: versions-drift at a Kueue or
    KubeRay chart or production (production `v0.17.1`, the module's spelling; the Flux files are not judged against it),
    versions-schema at anything else (a candidate's misspelt key, a module version without its v)."""
    try:
        text = read_source(root / "versions.yaml", root)
    except SourceError:
        return []  # file-read / yaml-syntax say why
    out = []
    for r in pin_file.refusals(pinned, text):
        if _drift(r.path):
            out.append(Finding("versions.yaml", r.line, "", "versions-drift", f"{r.message}: the charts and images the "
                               "clusters install are not checked against it", r.hint))
        else:
            out.append(Finding("versions.yaml", r.line, "", "versions-schema", r.message, r.hint))
    return out
