"""versions.yaml's pins against harness/schemas-for-data/versions.schema.json, for the drift rule: a component whose chart
or production the schema refuses is one finding at that line (refused_pins), and its Flux files are not judged against
it (refused)."""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from harness.core import atomic_write, cache_root
from harness.gate import DATA_SCHEMAS
from harness.gate.findings import Finding
from harness.gate.origin import line_at

REQUIRED = ("kueue", "kuberay")  # the pins every versions.yaml holds (the operators whose code the gate runs)
COMPONENTS = (*REQUIRED, "nvidia-device-plugin")  # the pins the drift rule reads (version_rules); the last one is optional


@functools.lru_cache(maxsize=1)
def _pin_schema() -> dict:
    """What the drift rule reads of a component (its chart and production), as harness/schemas-for-data/versions.schema.json
    has it."""
    schema = json.loads((DATA_SCHEMAS / "versions.schema.json").read_text(encoding="utf-8"))
    read = {k: schema["$defs"]["goPin"]["properties"][k] for k in ("chart", "production")}
    return {"$defs": schema["$defs"], "type": "object", "properties": {c: {"type": "object", "properties": read} for c in COMPONENTS}}


_VERDICTS_KEPT = 64  # the newest verdicts kept (a pin edit, a branch switch); older ones are computed again if needed


@dataclass(frozen=True)
class _Refusal:
    absolute_path: tuple
    instance: object
    message: str


def schema_errors(pinned: dict) -> list[_Refusal]:
    """jsonschema's errors for the components' chart and production. Its verdict on the same text is kept under
    cache_root()/verdicts (keyed by the pins and the schema), so a run on unchanged pins does not import jsonschema
    (~0.06 s, a tenth of the gate)."""
    instance = {c: pinned.get(c) for c in COMPONENTS if c in pinned}
    text = json.dumps([instance, _pin_schema()], sort_keys=True, default=str)
    memo = cache_root() / "verdicts" / f"versions-schema-{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"
    try:
        return [_Refusal(tuple(e[0]), e[1], e[2]) for e in json.loads(memo.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError, IndexError):
        pass
    from jsonschema import Draft202012Validator  # here, as config.py does

    verdict = json.dumps([[list(e.absolute_path), e.instance, e.message] for e in Draft202012Validator(_pin_schema()).iter_errors(instance)],
                         default=str)
    try:
        atomic_write(memo, verdict)
        kept = sorted(memo.parent.glob("versions-schema-*.json"), key=lambda p: p.stat().st_mtime)
        for old in kept[:-_VERDICTS_KEPT]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only cache: the verdict is computed again next time
    return [_Refusal(tuple(e[0]), e[1], e[2]) for e in json.loads(verdict)]  # as a later run reads it back


def refused(pinned: dict, component: str) -> bool:
    """Whether versions.schema.json refuses `component`'s chart or production (then its drift is not judged)."""
    return any(list(e.absolute_path)[:1] == [component] for e in schema_errors(pinned))


def production(pinned: dict | None, component: str) -> str:
    """`component`'s production pin as the rules compare it, "" when there is none or versions.schema.json refuses the
    component's pins (`production: 0.17`, a YAML float): a refused pin is the finding at its line, and no rule judges the
    Flux files against its text."""
    if not pinned or refused(pinned, component):
        return ""
    value = pinned.get(component).get("production") if isinstance(pinned.get(component), dict) else None
    return "" if value is None else str(value)


def refused_pins(root: Path, pinned: dict) -> list[Finding]:
    """versions-drift at a component's chart or production that versions.schema.json refuses (production `v0.17.1`, the
    module's spelling): one finding at that line, and the Flux files are not judged against it."""
    out = []
    for e in schema_errors(pinned):
        path = [str(p) for p in e.absolute_path]
        value, named = e.instance, ".".join(path)
        fixed = str(value).removeprefix("v")
        hint = (f"set {named}: {fixed} (a chart version is written without v; `version` is the module's, with v)"
                if path[-1:] == ["production"] and fixed != str(value) and not schema_errors({**pinned, path[0]: {**pinned[path[0]], "production": fixed}})
                else f"write {named} as a quoted string, the chart's full version (production: \"X.Y.Z\"): unquoted, YAML reads "
                     f"{value!r} as a {type(value).__name__}" if isinstance(value, (int, float)) and path[-1:] == ["production"]
                else f"write {named} as harness/schemas-for-data/versions.schema.json says")
        out.append(Finding("versions.yaml", line_at(root, "versions.yaml", None, path), "", "versions-drift",
                           f"{named} is {value!r}, which versions.schema.json refuses ({e.message}): the charts and images the "
                           f"clusters install are not checked against it", hint))
    return out
