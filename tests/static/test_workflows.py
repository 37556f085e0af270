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


USES = re.compile(r"^\s*(?:- )?uses:\s*(?P<ref>\S+)(?P<rest>.*)$", re.M)
PINNED = re.compile(r"(?P<action>[\w.-]+/[\w./-]+)@(?P<sha>[0-9a-f]{40})")
TAG_COMMENT = re.compile(r"^\s+# (?P<tag>v\d+\.\d+\.\d+)$")


def _uses(workflow: Path) -> list[tuple[str, str]]:
    """(reference, rest of the line) of every `uses:` in the file, read from the text: the tag is a comment."""
    return [(m["ref"], m["rest"]) for m in USES.finditer(workflow.read_text())]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_digest_with_its_tag(workflow):
    """`owner/repo@<40-hex commit>  # vX.Y.Z`: a tag can be moved, a commit cannot; the comment
    says which release it is (Renovate updates both)."""
    uses = _uses(workflow)
    assert uses, f"{workflow.name}: no actions"
    bad = [f"{ref}{rest}" for ref, rest in uses if not ref.startswith("./")
           and not (PINNED.fullmatch(ref) and TAG_COMMENT.match(rest))]
    assert not bad, f"{workflow.name}: pin these by full commit digest with the tag in a comment: {bad}"


def test_one_digest_per_action_and_tag():
    """The same action at the same tag is the same commit in every workflow, and one commit is one tag."""
    seen: dict[tuple[str, str], set[str]] = {}
    for workflow in WORKFLOWS:
        for ref, rest in _uses(workflow):
            if (m := PINNED.fullmatch(ref)) and (t := TAG_COMMENT.match(rest)):
                seen.setdefault((m["action"].split("/", 2)[0] + "/" + m["action"].split("/", 2)[1], m["sha"]), set()).add(t["tag"])
    assert seen
    tags_by_action: dict[tuple[str, str], set[str]] = {}
    for (action, sha), tags in seen.items():
        assert len(tags) == 1, f"{action}@{sha} is labelled {sorted(tags)}"
        tags_by_action.setdefault((action, tags.pop()), set()).add(sha)
    split = {k: v for k, v in tags_by_action.items() if len(v) > 1}
    assert not split, f"one tag, several commits: {split}"


def test_pinned_check_refuses_a_tag():
    """The digest check is not vacuous: a tag, a short digest and a digest without its tag fail."""
    for ref, rest in (("actions/checkout@v4.2.2", ""), ("actions/checkout@11bd719", "  # v4.2.2"),
                      ("actions/checkout@" + "a" * 40, "")):
        assert not (PINNED.fullmatch(ref) and TAG_COMMENT.match(rest)), ref


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
            if key == "if":
                continue  # hashFiles() in a condition tests for a file, it keys no cache
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


CACHING = [w for w in WORKFLOWS if re.search(r"uses: actions/(cache|setup-python)@", w.read_text())]


def test_there_are_caches():
    assert CACHING, "no workflow caches anything: test_cache_keys_hash_files_that_exist checks nothing"


@pytest.mark.parametrize("workflow", CACHING, ids=lambda p: p.name)
def test_cache_keys_hash_files_that_exist(workflow):
    """A key over a moved file (harness/tools.py once) hashes nothing and never changes."""
    patterns = sorted(set(_cache_inputs(yaml.safe_load(workflow.read_text()))))
    assert patterns, f"{workflow.name}: no cache key inputs found"
    # GitHub's `dir/**` matches the files below dir; pathlib's `**` matches only directories.
    stale = [p for p in patterns if not any(f.is_file() for f in REPO_ROOT.glob(p + "/*" if p.endswith("**") else p))]
    assert not stale, f"{workflow.name}: cache keys hash paths that match no file: {stale}"
