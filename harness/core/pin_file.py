"""versions.yaml checked whole: against harness/schemas-for-data/versions.schema.json (jsonschema: every key, type and
version pattern) and the candidates' contract the schema cannot say (each newer than its pin, listed once, its chart
the version without its v). Each refusal is one `Refusal` at the line that writes it, with the fix: one cause is one
refusal (a misspelt key is one "rename", not "missing" plus "not allowed").

harness.core.versions raises the first as VersionsFileError before any pin is read, so every command that reads the
pins (the gate, the tool builds, `make rehearse`) stops with one line naming versions.yaml:LINE (exit 2); the gate
reports each on the versions.yaml of a repository it checks (harness.gate.pin_schema)."""
from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from harness.core.memo import MISSING, Memo

SCHEMA = Path(__file__).resolve().parents[1] / "schemas-for-data" / "versions.schema.json"
SCHEMA_NAME = "harness/schemas-for-data/versions.schema.json"
_VERDICTS_KEPT = 64  # the newest verdicts kept (a pin edit, a branch switch); older ones are computed again if needed


@dataclass(frozen=True)
class Refusal:
    path: tuple  # where in the file (keys and list indices), e.g. ("kueue", "candidates", 1)
    value: object  # what is written there
    message: str
    hint: str
    line: int | None = None

    @property
    def named(self) -> str:
        return dotted(list(self.path)) or "the file"


def dotted(path: list) -> str:
    """["kueue", "candidates", 1, "version"] -> "kueue.candidates[1].version"."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


@functools.lru_cache(maxsize=1)
def _code() -> str:
    """This module's text: a verdict kept by another version of it is not read back."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def refusals(data, text: str | None = None) -> list[Refusal]:
    """Every refusal of the parsed versions.yaml `data`, in file order, each at its line in `text` (the file's text;
    None: no lines). jsonschema's verdict on the same data is kept (harness.core.memo), so a run on unchanged pins
    does not import jsonschema (~0.06 s, a tenth of the gate)."""
    memo = Memo("versions-file", _code()[:16], kept=_VERDICTS_KEPT)
    key = memo.key(data, schema())
    kept = memo.get(key)
    if kept is MISSING:
        kept = [[list(r.path), r.value, r.message, r.hint] for r in _verdict(data)]
        memo.put(key, kept)
        kept = json.loads(json.dumps(kept, default=str))  # as a later run reads it back
    found = [Refusal(tuple(r[0]), r[1], r[2], r[3]) for r in kept]
    if not found or text is None:
        return found
    import yaml

    try:
        doc = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        doc = None
    from harness.core.yaml_nodes import written_line

    placed = [Refusal(r.path, r.value, r.message, r.hint, written_line(doc, list(r.path)) if doc is not None else None) for r in found]
    return sorted(placed, key=lambda r: r.line or 0)


def _verdict(data) -> list[Refusal]:
    from jsonschema import Draft202012Validator  # here: an unchanged file's verdict is read from the cache

    errors = list(Draft202012Validator(schema()).iter_errors(data))
    renamed = {}  # (path of the mapping, misspelt key) -> the key meant, from a `required` beside an unexpected key
    for e in errors:
        if e.validator == "required" and isinstance(e.instance, dict):
            for missing in _missing(e):
                near = difflib.get_close_matches(missing, [k for k in e.instance if isinstance(k, str) and k not in _known(e.schema)], 1, 0.6)
                if near:
                    renamed[(tuple(e.absolute_path), near[0])] = missing
    out = []
    for e in errors:
        path = tuple(e.absolute_path)
        if any(path[:len(p) + 1] == (*p, k) for p, k in renamed):
            continue  # inside a misspelt key: its rename says it
        if e.validator == "required":
            typos = {meant: typo for (p, typo), meant in renamed.items() if p == path}
            for meant in (m for m in _missing(e) if m in typos):
                out.append(Refusal((*path, typos[meant]), e.instance[typos[meant]], f"{dotted([*path, typos[meant]])} is not a "
                                   f"key of {dotted(list(path)) or 'the file'}, which must have {meant!r}",
                                   f"rename {typos[meant]} to {meant}"))
            if missing := [m for m in _missing(e) if m not in typos]:
                out.append(Refusal(path, None, f"{dotted(list(path)) or 'the file'} has no {', '.join(missing)} "
                                   f"({SCHEMA_NAME} requires {'it' if len(missing) == 1 else 'them'})",
                                   f"add {', '.join(missing)} to {dotted(list(path)) or 'versions.yaml'}"))
        elif e.validator == "additionalProperties" and e.validator_value is False and isinstance(e.instance, dict):
            for extra in (k for k in e.instance if str(k) not in _known(e.schema)):
                if (path, str(extra)) in renamed:
                    continue
                known = sorted(_known(e.schema))
                near = difflib.get_close_matches(str(extra), known, 1, 0.6)
                out.append(Refusal((*path, extra), e.instance[extra], f"{dotted([*path, extra])} is not a key of "
                                   f"{dotted(list(path)) or 'the file'} (its keys: {', '.join(known)})",
                                   f"rename {extra} to {near[0]}" if near else f"remove {extra}, or move it where {SCHEMA_NAME} has it"))
        else:
            why = f"not matching its pattern {e.validator_value}" if e.validator == "pattern" else e.message
            out.append(Refusal(path, e.instance, f"{dotted(list(path)) or 'the file'} is {e.instance!r}, which "
                               f"{SCHEMA_NAME} refuses ({why})", _hint(e, list(path))))
    return _deduplicated(out) + _candidates(data)


def _missing(e) -> list[str]:
    return [m for m in e.validator_value if m not in e.instance]


def _known(schema_: dict) -> set[str]:
    return set((schema_ or {}).get("properties") or {})


def _hint(e, path: list) -> str:
    """The fix of one refused value: the spelling the pattern accepts, a quoted number, the constant, or the schema's
    own words."""
    named, value = dotted(path) or "versions.yaml", e.instance
    if e.validator == "pattern" and isinstance(value, str):
        for fixed, why in ((f"v{value}", "a Go module version is written with its v"),
                           (value.removeprefix("v"), "a chart or production version is written without v; `version`, "
                                                     "the module's, has it")):
            if fixed != value and re.search(e.validator_value, fixed):
                return f"set {named}: {fixed} ({why})"
        return f"write {named} as the pattern {e.validator_value} of {SCHEMA_NAME} says"
    if e.validator == "type" and isinstance(value, (int, float)) and not isinstance(value, bool) and "string" in str(e.validator_value):
        return (f"write {named} as a quoted string (\"X.Y.Z\"): unquoted, YAML reads {value!r} as a {type(value).__name__}"
                + ("" if re.fullmatch(r"\d+\.\d+(\.\d+)?", str(value)) else ", and a trailing 0 is lost"))
    if e.validator == "const":
        return f"set {named}: {e.validator_value}"
    if e.validator == "type":
        return f"write {named} as a{'n' if str(e.validator_value)[0] in 'aeiou' else ''} {e.validator_value}, as {SCHEMA_NAME} says"
    return f"write {named} as {SCHEMA_NAME} says ({e.schema.get('description', e.message)})"[:400]


def _deduplicated(found: list[Refusal]) -> list[Refusal]:
    """One refusal per place written (a value refused by two of the schema's conditions is one cause)."""
    seen, out = set(), []
    for r in found:
        if r.path not in seen:
            seen.add(r.path)
            out.append(r)
    return out


def _candidates(data) -> list[Refusal]:
    """Each candidate newer than its pin, listed once, its chart the version without v (the MCR charts version with the
    release): what `make rehearse` and the gate's --kueue/--kuberay take for granted."""
    from harness.core.releases import ReleaseError, parse

    out = []
    for name, block in (data.items() if isinstance(data, dict) else ()):
        listed = block.get("candidates") if isinstance(block, dict) else None
        if not isinstance(listed, list) or not isinstance(block.get("version"), str):
            continue
        seen = set()
        for i, cand in enumerate(listed):
            version, chart = (cand.get("version"), cand.get("chart")) if isinstance(cand, dict) else (None, None)
            if not isinstance(version, str):
                continue
            try:
                older = parse(version) <= parse(block["version"])
            except ReleaseError:
                continue  # the schema's pattern says it
            where = (name, "candidates", i, "version")
            if version in seen:
                out.append(Refusal(where, version, f"{name} candidate {version} is listed twice", f"remove {dotted(list(where[:3]))}"))
            elif older:
                out.append(Refusal(where, version, f"{name} candidate {version} is not newer than the pin {block['version']}: "
                                   "`make rehearse` rehearses an upgrade", f"list a release newer than {block['version']}, "
                                   f"or remove {dotted(list(where[:3]))}"))
            elif isinstance(chart, str) and f"v{chart}" != version:
                out.append(Refusal((name, "candidates", i, "chart"), chart, f"{name} candidate {version} lists chart {chart}, "
                                   f"but the chart that ships {version} is {version.removeprefix('v')}",
                                   f"set chart: {version.removeprefix('v')}"))
            seen.add(version)
    return out


def written_at(data, module: str, version: str) -> list | None:
    """Where the parsed versions.yaml `data` writes `module` at `version` (a pin's or a candidate's version, a `replace`
    entry), for an error of the Go module proxy to name that line; None when it does not."""
    def walk(node, path):
        if not isinstance(node, dict):
            return None
        if node.get("module") == module:
            if node.get("version") == version:
                return [*path, "version"]
            for i, cand in enumerate(node.get("candidates") or []):
                if isinstance(cand, dict) and cand.get("version") == version:
                    return [*path, "candidates", i, "version"]
        if isinstance(node.get("replace"), dict) and node["replace"].get(module) == version:
            return [*path, "replace", module]
        return next((p for k, v in node.items() if (p := walk(v, [*path, k])) is not None), None)
    return walk(data, [])
