"""The GitHub Actions workflows are valid (actionlint, built from its Go module like every other
tool) and the repository's YAML passes yamllint with .yamllint.yaml, the config pre-commit uses."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.toolchain import builds as tools
from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

WORKFLOWS = sorted((REPO_ROOT / ".github/workflows").glob("*.yml"))
YAML_DIRS = ("base", "overlays", "components", "clusters", "flux", "workloads", ".github")
YAMLLINT_CONFIG = REPO_ROOT / ".yamllint.yaml"


@pytest.fixture(scope="module")
def actionlint() -> Path:
    return tools.ensure("actionlint")["actionlint"].path()


def _actionlint(binary: Path, files: list[Path]) -> list[dict]:
    proc = subprocess.run(
        [str(binary), "-no-color", "-format", "{{json .}}", *map(str, files)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    # 0: nothing found, 1: problems found (listed on stdout); anything else: it could not run.
    assert proc.returncode in (0, 1), f"actionlint could not run (exit {proc.returncode}):\n{proc.stderr}"
    return json.loads(proc.stdout or "[]") or []


def _yamllint(*paths: str | Path) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "yamllint", "-c", str(YAMLLINT_CONFIG), "-f", "parsable", *map(str, paths)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode in (0, 1, 2), f"yamllint could not run (exit {proc.returncode}):\n{proc.stderr}"
    problems = []
    for line in proc.stdout.splitlines():
        m = re.match(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): \[(?P<level>error|warning)\] (?P<message>.*)$", line)
        assert m, f"unexpected yamllint output: {line!r}\n{proc.stderr}"
        problems.append(m.groupdict())
    assert proc.returncode == 0 or problems, f"yamllint failed without reporting a problem:\n{proc.stderr}"
    return problems


def test_there_are_workflows():
    assert WORKFLOWS, "no .github/workflows/*.yml"


def test_actionlint_reports_nothing(actionlint):
    problems = _actionlint(actionlint, WORKFLOWS)
    assert problems == [], "actionlint:\n" + "\n".join(
        f"{p['filepath']}:{p['line']}:{p['column']}: {p['message']} [{p['kind']}]" for p in problems
    )


def test_actionlint_finds_a_broken_workflow(actionlint, tmp_path):
    """The check above is not vacuous: a workflow with an undefined job dependency and an
    untrusted expression inside a script is reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\n"
        "jobs:\n"
        "  a:\n"
        "    runs-on: ubuntu-latest\n"
        "    needs: [missing]\n"
        "    steps:\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n"
    )
    kinds = {p["kind"] for p in _actionlint(actionlint, [bad])}
    assert {"job-needs", "expression"} <= kinds, kinds


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_version_tag(workflow):
    doc = yaml.safe_load(workflow.read_text())
    unpinned = [
        step["uses"]
        for job in doc["jobs"].values()
        for step in job.get("steps", [])
        if "uses" in step and not step["uses"].startswith("./")
        and not re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+\.\d+\.\d+", step["uses"])
    ]
    assert not unpinned, f"{workflow.name}: pin these by a full version tag (vX.Y.Z): {unpinned}"


def test_yamllint_reports_no_errors():
    problems = _yamllint(*YAML_DIRS)
    errors = [p for p in problems if p["level"] == "error"]
    assert not errors, "yamllint (.yamllint.yaml):\n" + "\n".join(
        f"{p['file']}:{p['line']}:{p['col']}: {p['message']}" for p in problems
    )


def test_yamllint_config_catches_real_mistakes(tmp_path):
    """Relaxed for Kubernetes style, not switched off: duplicate keys, `yes` as a boolean and
    bad indentation are still errors."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("metadata:\n  name: a\n  name: b\nspec:\n  suspend: yes\n  list:\n     - x\n")
    rules = {p["message"].rsplit("(", 1)[-1].rstrip(")") for p in _yamllint(bad) if p["level"] == "error"}
    assert {"key-duplicates", "truthy", "indentation"} <= rules, rules


def _cache_inputs(node):
    """Every path pattern a workflow hashes for a cache key (hashFiles(...), cache-dependency-path)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "cache-dependency-path" and isinstance(value, str):
                yield from (line.strip() for line in value.splitlines() if line.strip())
            else:
                yield from _cache_inputs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _cache_inputs(item)
    elif isinstance(node, str):
        for args in re.findall(r"hashFiles\(([^)]*)\)", node):
            yield from re.findall(r"'([^']+)'", args)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_cache_keys_hash_files_that_exist(workflow):
    """A key over a moved file (harness/tools.py once) hashes nothing and never changes."""
    patterns = sorted(set(_cache_inputs(yaml.safe_load(workflow.read_text()))))
    assert patterns, f"{workflow.name}: no cache key inputs found"
    # GitHub's `dir/**` matches the files below dir; pathlib's `**` matches only directories.
    stale = [p for p in patterns if not any(f.is_file() for f in REPO_ROOT.glob(p + "/*" if p.endswith("**") else p))]
    assert not stale, f"{workflow.name}: cache keys hash paths that match no file: {stale}"
