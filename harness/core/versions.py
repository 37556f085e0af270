"""Reads versions.yaml, the single source of pinned versions, from the repository the harness
works on (REPO_ROOT).

REPO_ROOT is, in this order:
1. $RAY_KUEUE_REPO, when set (it must hold versions.yaml);
2. the checkout this harness was loaded from (a source tree or an editable install), so a run
   from the checkout behaves the same whatever the working directory;
3. the nearest ancestor of the working directory that is a checkout (holds versions.yaml and
   tools/fluxbuild): an installed harness used inside a checkout;
4. otherwise harness/core/repo-snapshot, the part of the repository that the wheel carries: the
   versions.yaml and tools/fluxbuild source it was built from. That is enough for the static
   gate (`ray-kueue-validate REPO_DIR` renders and checks REPO_DIR with these pins, as
   `scripts/validate OTHER_DIR` does with its own checkout's); what needs the rest of a
   checkout (cluster, Flux, report) needs 1 or 3.

Versions other than the pins (an upgrade rehearsal): Kueue and KubeRay list `candidates:` beside
their pin, and $RAY_KUEUE_VERSIONS selects one for everything this process and its children
build, run and validate, e.g. `RAY_KUEUE_VERSIONS="kueue=v0.18.3,kuberay=v1.6.2"` (read here
only: `module()` answers the selected version, so tool builds, CRD-derived schemas and the
embedded operators follow it). Only a pinned or candidate version is accepted.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

from harness.core.errors import HarnessError

REPO_ENV = "RAY_KUEUE_REPO"
PACKAGED_REPO = Path(__file__).resolve().with_name("repo-snapshot")


def is_checkout(path: Path) -> bool:
    return (path / "versions.yaml").is_file() and (path / "tools" / "fluxbuild").is_dir()


def find_repo_root(env: dict[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The repository the harness works on (see the module docstring for the order)."""
    env = os.environ if env is None else env
    if env.get(REPO_ENV):
        root = Path(env[REPO_ENV]).expanduser().resolve()
        return root  # without versions.yaml there, reading the pins says so (a HarnessError, not a failed import)
    source = Path(__file__).resolve().parents[2]
    if is_checkout(source):
        return source
    here = (cwd or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if is_checkout(candidate):
            return candidate
    return PACKAGED_REPO


REPO_ROOT = find_repo_root()
VERSIONS_FILE = REPO_ROOT / "versions.yaml"


class VersionsFileError(HarnessError, RuntimeError):
    """versions.yaml cannot be read as pins: not where REPO_ROOT says (a $RAY_KUEUE_REPO that names no checkout), not
    valid YAML, or refused by its schema (harness.core.pin_file): the message names versions.yaml:LINE and the fix."""


def shown(line: int | None = None) -> str:
    """versions.yaml[:LINE] as a message names it: relative to the working directory when inside it."""
    try:
        name = VERSIONS_FILE.relative_to(Path.cwd()).as_posix()
    except ValueError:
        name = str(VERSIONS_FILE)
    return f"{name}:{line}" if line else name


@functools.lru_cache(maxsize=None)
def pins() -> dict:
    """versions.yaml, checked whole first (harness.core.pin_file): VersionsFileError naming the line of its first refusal,
    so no reader of a pin meets a missing key or a wrong type."""
    if not VERSIONS_FILE.is_file():
        named = f"${REPO_ENV}={os.environ[REPO_ENV]}: " if os.environ.get(REPO_ENV) else ""
        raise VersionsFileError(f"{named}no versions.yaml in {REPO_ROOT} (it must name a checkout of this repository)")
    import yaml  # here: the gate's entry point imports this module before it starts its helper, and needs no YAML for that

    from harness.core import pin_file

    text = VERSIONS_FILE.read_text(encoding="utf-8", errors="replace")
    try:  # libyaml's loader where PyYAML has it: read on every gate start
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
        try:  # (yaml.load's steps, the node kept: it says which key is written twice)
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        raise VersionsFileError(f"{shown(mark.line + 1 if mark else None)}: not valid YAML: {getattr(err, 'problem', None) or err}"
                                f"{f', {err.context}' if getattr(err, 'context', None) else ''}; fix the YAML syntax there "
                                "(indentation, a missing ':'); every pinned version is read from this file") from None
    from harness.core.yaml_nodes import written_twice

    twice = written_twice(node)
    if twice:
        key, line, first = twice
        raise VersionsFileError(f"{shown(line)}: key {key!r} is written twice in one mapping (first at line {first}); the "
                                "gate would read only the last; keep one of the two keys (delete the line of the one that is not meant)")
    refused = pin_file.refusals(data, text)
    if refused:
        first, more = refused[0], len(refused) - 1
        raise VersionsFileError(f"{shown(first.line)}: {first.message}; {first.hint}"
                                + (f" (and {more} more: {', '.join(shown(r.line) for r in refused[1:4])})" if more else ""))
    return data


def where(module_path: str, version: str) -> str:
    """versions.yaml:LINE where `module_path` at `version` is written (a pin, a candidate, a `replace`), "" when nowhere."""
    from harness.core import pin_file

    try:
        path = pin_file.written_at(pins(), module_path, version)
    except VersionsFileError:
        return ""
    if path is None:
        return ""
    import yaml

    from harness.core.yaml_nodes import written_line

    return shown(written_line(yaml.compose(VERSIONS_FILE.read_text(encoding="utf-8")), path))


def entry(name: str) -> dict:
    """The pin block of a component; dotted names reach nested ones, e.g. 'flux.source-controller'."""
    block = pins()
    for part in name.split("."):
        if not isinstance(block, dict) or not isinstance(block.get(part), dict):
            raise VersionsFileError(f"{shown()}: no `{name}` entry (a mapping with module and version), which the harness "
                                    f"reads; restore it (harness/schemas-for-data/versions.schema.json)")
        block = block[part]
    return block


SELECT_ENV = "RAY_KUEUE_VERSIONS"
SELECTABLE = ("kueue", "kuberay")  # the components with `candidates:` in versions.yaml


class VersionSelectionError(HarnessError, RuntimeError):
    """$RAY_KUEUE_VERSIONS names a component or version versions.yaml does not list."""


def pinned(name: str) -> str:
    """The production pin's module version of a component, whatever is selected."""
    return entry(name)["version"]


def candidates(name: str) -> list[dict]:
    """The component's `candidates:` entries ({version, chart}), oldest first as listed."""
    return list(entry(name).get("candidates") or [])


def newest_candidate(name: str) -> str | None:
    """The newest of the component's candidates (what `make rehearse` rehearses by default), or None."""
    from harness.core.releases import parse  # releases imports nothing of this module

    listed = [c["version"] for c in candidates(name)]
    return max(listed, key=parse) if listed else None


def selection_text(choice: dict[str, str]) -> str:
    """{"kueue": "v0.18.3", "kuberay": "v1.6.2"} -> "kuberay=v1.6.2,kueue=v0.18.3" ($RAY_KUEUE_VERSIONS)."""
    return ",".join(f"{k}={v}" for k, v in sorted(choice.items()))


def parse_selection(text: str) -> dict[str, str]:
    """"kueue=v0.18.3,kuberay=v1.6.2" -> {"kueue": "v0.18.3", ...}, checked against versions.yaml."""
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, sep, version = item.partition("=")
        name, version = name.strip(), version.strip()
        if not sep or name not in SELECTABLE:
            raise VersionSelectionError(f"${SELECT_ENV}: {item!r} is not COMPONENT=VERSION with COMPONENT one of {', '.join(SELECTABLE)}")
        out[name] = listed_version(name, version, f"${SELECT_ENV}")
    return out


def listed_version(name: str, version: str, source: str) -> str:
    """`version` of component `name` as versions.yaml spells it (the pin or a candidate; "1.6.2" is its "v1.6.2");
    VersionSelectionError naming `source` (where the user wrote it: "$RAY_KUEUE_VERSIONS", "KUEUE=") otherwise."""
    allowed = [pinned(name), *(c["version"] for c in candidates(name))]
    found = next((a for a in allowed if a == version or a.removeprefix("v") == version.removeprefix("v")), None)
    if found is None:
        raise VersionSelectionError(f"{source}: {name} {version} is neither the pin nor a candidate in versions.yaml "
                                    f"(allowed: {', '.join(allowed)})")
    return found


def selection(env: dict[str, str] | None = None) -> dict[str, str]:
    """The versions $RAY_KUEUE_VERSIONS selects (empty: the pins)."""
    env = os.environ if env is None else env
    return dict(_parsed(env.get(SELECT_ENV, "")))  # a copy: the parse is kept per text, and callers add to what they get


@functools.lru_cache(maxsize=None)
def _parsed(text: str) -> dict[str, str]:
    return parse_selection(text)


def module(name: str) -> tuple[str, str]:
    """(module path, version) of a Go component, e.g. module('kueue'): the pin, or the candidate
    $RAY_KUEUE_VERSIONS selects."""
    block = entry(name)
    return block["module"], selection().get(name, block["version"])


def chart_version(name: str, version: str | None = None) -> str:
    """The chart version that goes with a Kueue/KubeRay module version (default: the selected one)."""
    version = version or module(name)[1]
    if version == pinned(name):
        return str(entry(name)["production"])
    for cand in candidates(name):
        if cand["version"] == version:
            return str(cand["chart"])
    raise VersionSelectionError(f"{name} {version}: not in versions.yaml")


def staging_version(kube_version: str) -> str:
    """k8s.io/kubernetes v1.Y.Z goes with the staging modules v0.Y.Z."""
    return "v0." + kube_version.removeprefix("v1.")
