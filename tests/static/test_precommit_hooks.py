""".pre-commit-hooks.yaml lets other repositories run the gate as a pre-commit hook: a well-formed
manifest (the keys pre-commit's manifest schema has) whose hook installs this package and runs
one of its console scripts."""
from __future__ import annotations

import importlib
import re
import tomllib

import pytest
import yaml

from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

MANIFEST = REPO_ROOT / ".pre-commit-hooks.yaml"
GATE = "ray-kueue-validate"
REQUIRED = {"id", "name", "entry", "language"}
# pre-commit's MANIFEST_HOOK_DICT (pre_commit/clientlib.py): anything else is refused there.
OPTIONAL = {"alias", "files", "exclude", "types", "types_or", "exclude_types", "additional_dependencies", "args",
            "always_run", "fail_fast", "pass_filenames", "description", "language_version", "log_file",
            "minimum_pre_commit_version", "require_serial", "stages", "verbose"}
SCRIPTS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def problems(hooks) -> list[str]:
    if not isinstance(hooks, list) or not hooks:
        return ["the manifest must be a non-empty list of hooks"]
    out = []
    if len({h.get("id") for h in hooks}) != len(hooks):
        out.append("hook ids must be unique")
    for hook in hooks:
        name = hook.get("id")
        if REQUIRED - set(hook):
            out.append(f"{name}: missing {sorted(REQUIRED - set(hook))}")
        if set(hook) - REQUIRED - OPTIONAL:
            out.append(f"{name}: keys pre-commit does not know: {sorted(set(hook) - REQUIRED - OPTIONAL)}")
        if not all(isinstance(hook.get(k), str) and hook.get(k) for k in REQUIRED):
            out.append(f"{name}: {sorted(REQUIRED)} must be non-empty strings")
        if not all(isinstance(hook.get(k, False), bool) for k in ("pass_filenames", "require_serial", "always_run")):
            out.append(f"{name}: pass_filenames, require_serial and always_run are booleans")
    gate = [h for h in hooks if h.get("id") == GATE]
    if len(gate) != 1:
        return out + [f"no hook {GATE!r}"]
    gate = gate[0]
    if gate.get("language") != "python":
        out.append(f"{GATE}: language must be python (installs this package into the hook's environment)")
    if gate.get("pass_filenames") is not False:
        out.append(f"{GATE}: pass_filenames must be false (the gate validates the whole repository)")
    out += skipped_commits(gate)
    command = str(gate.get("entry", "")).split()[:1]
    if not command or command[0] not in SCRIPTS:
        out.append(f"{GATE}: entry {gate.get('entry')!r} is not a console script of pyproject.toml ({sorted(SCRIPTS)})")
    return out


# Commits whose staged files (pre-commit passes only files that still exist) are inputs the gate reads:
# a hook that pre-commit skips on any of them lets that commit pass unchecked.
COMMITS = [(), ("terraform/envs/prod-eastus2.tfvars.json",), (".sourceignore",), ("clusters/prod/Kustomization",),
           ("terraform/.terraform.lock.hcl",), (".ray-kueue-gate.yaml",), ("versions.yaml",),
           ("workloads/aurora/values.env",), ("clusters/prod-eastus2/samples.yaml",), ("overlays/x/quota.properties",)]


def skipped_commits(hook: dict) -> list[str]:
    """The commits pre-commit would skip the hook on: `_run_single_hook` (pre_commit/commands/run.py)
    runs a hook when a staged file matches its `files`/`exclude` or when `always_run` is true."""
    if hook.get("always_run") is True:
        return []
    include, exclude = re.compile(hook.get("files", "")), re.compile(hook.get("exclude", "^$"))
    if hook.get("types", ["file"]) != ["file"] or hook.get("types_or") or hook.get("exclude_types"):
        return [f"{hook.get('id')}: filters by file type; it must run on every commit (always_run: true)"]
    return [f"{hook.get('id')}: skipped on a commit of {list(paths) or 'deletions only'} (always_run: true runs it)"
            for paths in COMMITS if not any(include.search(p) and not exclude.search(p) for p in paths)]


def test_manifest_is_well_formed_and_runs_the_console_script():
    hooks = yaml.safe_load(MANIFEST.read_text())
    assert not problems(hooks), "\n".join(problems(hooks))
    (gate,) = [h for h in hooks if h["id"] == GATE]
    module, _, attr = SCRIPTS[gate["entry"].split()[0]].partition(":")
    assert callable(getattr(importlib.import_module(module), attr)), SCRIPTS[gate["entry"]]


@pytest.mark.parametrize("edit, expected", [
    (lambda h: h.update(entry="scripts/validate ."), "is not a console script"),
    (lambda h: h.update(language="system"), "language must be python"),
    (lambda h: h.update(pass_filenames=True), "pass_filenames must be false"),
    (lambda h: h.update(args_=["--quiet"]), "keys pre-commit does not know"),
    (lambda h: h.pop("name"), "missing ['name']"),
    (lambda h: h.update(always_run=False, files=r"\.(ya?ml|tf|tfvars)$"), "skipped on a commit of ['.sourceignore']"),
    (lambda h: h.update(always_run=False), "skipped on a commit of deletions only"),
])
def test_the_check_catches_a_broken_manifest(edit, expected):
    hooks = yaml.safe_load(MANIFEST.read_text())
    edit(next(h for h in hooks if h["id"] == GATE))
    assert any(expected in p for p in problems(hooks)), problems(hooks)


def test_the_gate_runs_on_every_commit_here_too():
    """The repository's own hook (.pre-commit-config.yaml) runs the gate on every commit as well."""
    config = yaml.safe_load((REPO_ROOT / ".pre-commit-config.yaml").read_text())
    (hook,) = [h for repo in config["repos"] for h in repo["hooks"] if h["id"] == "validate"]
    assert hook.get("pass_filenames") is False and not skipped_commits(hook), skipped_commits(hook)
