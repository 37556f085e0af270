"""The gate's reports as CI and people read them: `--format text|json|junit|github|sarif[=DEST]`,
several at once, `-` for stdout, the --json/--junit aliases, --version, and the examples in
docs/example-gate-report/ (what the README shows) equal to what the gate writes."""
from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from harness.core.versions import REPO_ROOT
from harness.gate import RULE_IDS, Finding
from harness.gate import formats
from harness.gate.findings import keep_once
from harness.testing import copy_config

pytestmark = pytest.mark.static
VALIDATE = REPO_ROOT / "scripts" / "validate"
EXAMPLES = REPO_ROOT / "docs" / "example-gate-report"
SCHEMA = json.loads((REPO_ROOT / "harness" / "schemas-for-data" / "validate.schema.json").read_text())
TEAM_B = "overlays/team-queues/team-b.yaml"
# The broken variant the examples were written from: two errors and two warnings.
EDITS = {TEAM_B: [("clusterQueue: team-b-cq", "clusterQueue: nope"), ("cohortName: shared-cohort", "cohortName: other-cohort")]}
COMMAND = re.compile(r"^::(?P<command>error|warning) (?P<props>[^:]*)::(?P<message>.*)$")


def run(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(VALIDATE), *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


def _unescape(text: str) -> str:
    for code, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(code, char)
    return text


def parse_github(text: str) -> list[dict]:
    """The workflow commands, read back as the runner reads them (properties split on ',', then '=')."""
    out = []
    for line in text.splitlines():
        m = COMMAND.match(line)
        assert m, f"not a workflow command: {line!r}"
        props = dict(p.split("=", 1) for p in m["props"].split(","))
        out.append({"command": m["command"], **{k: _unescape(v) for k, v in props.items()}, "message": _unescape(m["message"])})
    return out


def _findings(report: Path) -> list[Finding]:
    return [Finding(**f) for f in json.loads(report.read_text())["findings"]]


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    root = copy_config(tmp_path_factory.mktemp("reports") / "repo")
    for rel, edits in EDITS.items():
        text = (root / rel).read_text()
        for old, new in edits:
            assert old in text, f"stale edit: {old!r} not in {rel}"
            text = text.replace(old, new, 1)
        (root / rel).write_text(text)
    return root


@pytest.fixture(scope="module")
def every_format(broken, tmp_path_factory) -> dict[str, Path]:
    """One run writing every format to its own file (several at once), through both spellings."""
    out = tmp_path_factory.mktemp("out")
    files = {fmt: out / f"gate.{fmt}" for fmt in formats.FORMATS}
    args = [f"--format={fmt}={path}" for fmt, path in files.items() if fmt not in ("json", "junit")]
    proc = run(broken, *args, "--json", files["json"], "--junit", files["junit"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == "" and proc.stderr == "", "every report went to a file: nothing else is printed"
    return files


def test_every_format_written_in_one_run(every_format):
    assert all(p.is_file() and p.stat().st_size for p in every_format.values())


def test_text_report_names_every_finding(every_format):
    text = every_format["text"].read_text()
    found = _findings(every_format["json"])
    for f in found:
        assert f.text() in text
    assert text.splitlines()[-1].startswith("validate: 2 finding(s), 2 warning(s);"), text


def test_json_report_follows_its_schema_and_counts(every_format):
    doc = json.loads(every_format["json"].read_text())
    Draft202012Validator.check_schema(SCHEMA)
    errors = [e.message for e in Draft202012Validator(SCHEMA).iter_errors(doc)]
    assert not errors, errors
    assert (doc["count"], doc["errors"], doc["warnings"]) == (4, 2, 2)
    assert {f["rule"] for f in doc["findings"]} == {"localqueue-clusterqueue", "cohort-alone", "sample-fits"}


def test_json_schema_refuses_what_the_report_never_holds(every_format):
    """The schema is not vacuous: a finding with a line 0, an unknown severity and an absolute path fails."""
    doc = json.loads(every_format["json"].read_text())
    doc["findings"][0].update(line=0, severity="info", file="/abs/path.yaml")
    del doc["warnings"]
    paths = sorted(e.json_path for e in Draft202012Validator(SCHEMA).iter_errors(doc))
    assert paths == ["$", "$.findings[0].file", "$.findings[0].line", "$.findings[0].severity"], paths


def test_junit_report_fails_the_rules_with_errors(every_format):
    cases = {c.get("name"): c for c in ET.parse(every_format["junit"]).getroot().iter("testcase")}
    assert set(RULE_IDS) <= set(cases)
    failed = {name for name, c in cases.items() if c.find("failure") is not None}
    assert failed == {"localqueue-clusterqueue", "sample-fits"}  # cohort-alone is a warning: passes, with output


def test_github_annotations_one_per_finding(every_format):
    commands = parse_github(every_format["github"].read_text())
    found = _findings(every_format["json"])
    assert len(commands) == len(found)
    for c, f in zip(commands, found):
        assert c["command"] == ("error" if f.is_error else "warning")
        assert c["file"] == f.file and c["title"] == f.rule
        assert c.get("line") == (str(f.line) if f.line else None)
        assert f.message in c["message"] and c["message"].endswith(f"\nfix: {f.hint}")


def test_github_escaping_follows_the_runner():
    """'%', CR and LF are escaped in the message; ':' and ',' too in a property (file, title), as
    @actions/core escapes them: read back, every value is what it was."""
    f = Finding("dir,with:odd%/a.yaml", 3, "Kind/x", "rule", "100% sure: a,b\r\nnext", "fix:\nit", severity="warning")
    text = formats.to_github([f])
    assert text.count("\n") == 1 and "%0A" in text and "%0D" in text and "%25" in text
    assert text.startswith("::warning file=dir%2Cwith%3Aodd%25/a.yaml,line=3,title=rule::")
    (c,) = parse_github(text)
    assert (c["file"], c["line"], c["title"]) == (f.file, "3", f.rule)
    assert c["message"] == "Kind/x: 100% sure: a,b\r\nnext\nfix: fix:\nit"


def test_github_annotations_make_control_characters_visible_as_the_text_report_does():
    """An ESC or another control character of a value never reaches the Actions log raw: written as the text report writes
    it (\\x1b), while CR and LF keep the runner's own escapes."""
    f = Finding("base/ns.yaml", 3, "Namespace/Ray\x01\x1b[31m", "rule", "bad \x1b[31m\r\nnext", "fix\x07 it")
    text = formats.to_github([f])
    assert "\x1b" not in text and "\x01" not in text and "\x07" not in text, repr(text)
    (c,) = parse_github(text)
    assert c["message"] == "Namespace/Ray\\x01\\x1b[31m: bad \\x1b[31m\r\nnext\nfix: fix\\x07 it", c["message"]
    assert "Namespace/Ray\\x01\\x1b[31m" in f.text()


def test_sarif_report(every_format):
    doc = json.loads(every_format["sarif"].read_text())
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    (run_,) = doc["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == formats.TOOL and driver["version"] == importlib.metadata.version("aks-ray-kueue-harness")
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    assert ids == sorted(set(ids)) and set(ids) == set(RULE_IDS), "one rule per rule id"
    assert all(r["shortDescription"]["text"] == RULE_IDS[r["id"]] for r in rules)
    found = _findings(every_format["json"])
    assert len(run_["results"]) == len(found)
    for result, f in zip(run_["results"], found):
        rule = rules[result["ruleIndex"]]
        assert rule["id"] == result["ruleId"] == f.rule and f.hint in rule["help"]["text"].splitlines()
        assert result["level"] == ("error" if f.is_error else "warning")
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"] == {"uri": f.file, "uriBaseId": "%SRCROOT%"}
        assert not Path(physical["artifactLocation"]["uri"]).is_absolute()
        assert physical.get("region") == ({"startLine": f.line} if f.line else None)
        assert f.message in result["message"]["text"]
    assert "help" not in next(r for r in rules if r["id"] == "kueue-webhook"), "help comes from the findings' hints"


def test_examples_are_what_the_gate_writes(every_format):
    """docs/example-gate-report/ (the README links it) is this run's output: regenerate it with
    `scripts/validate BROKEN --format json=... --format sarif=... --format github=...` on EDITS."""
    assert json.loads((EXAMPLES / "validate.json").read_text()) == json.loads(every_format["json"].read_text())
    assert (EXAMPLES / "annotations.txt").read_text() == every_format["github"].read_text()
    example, written = (json.loads(p.read_text()) for p in (EXAMPLES / "validate.sarif", every_format["sarif"]))
    for doc in (example, written):  # the harness version moves on; the rest must not
        doc["runs"][0]["tool"]["driver"].update(version="", semanticVersion="")
    assert example == written


def test_dash_is_stdout_and_text_moves_to_stderr(broken, tmp_path):
    proc = run(broken, "--json", "-", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["count"] == 4
    assert "validate: 2 finding(s), 2 warning(s)" in proc.stderr
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("fmt", ["sarif", "github", "junit", "text"])
def test_format_without_destination_is_stdout(broken, fmt):
    proc = run(broken, "--quiet", "--format", fmt)
    assert proc.returncode == 1, proc.stderr
    if fmt == "sarif":
        assert len(json.loads(proc.stdout)["runs"][0]["results"]) == 4
    elif fmt == "github":
        assert len(parse_github(proc.stdout)) == 4
    elif fmt == "junit":
        assert ET.fromstring(proc.stdout).tag == "testsuites"
    else:
        assert proc.stdout.splitlines()[-1].startswith("validate: 2 finding(s)") and proc.stderr == ""
    if fmt != "text":
        assert proc.stderr.splitlines()[-1].startswith("validate: 2 finding(s)"), "the text report is on stderr"


def test_several_reports_at_once_with_stdout(broken, tmp_path):
    proc = run(broken, "--format", "github", "--format", f"sarif={tmp_path / 'g.sarif'}", "--json", tmp_path / "g.json")
    assert proc.returncode == 1
    assert len(parse_github(proc.stdout)) == 4
    assert json.loads((tmp_path / "g.json").read_text())["count"] == len(json.loads((tmp_path / "g.sarif").read_text())["runs"][0]["results"]) == 4


def test_clean_repository_in_every_format(tmp_path):
    proc = run(REPO_ROOT, "--format", "github", "--format", f"sarif={tmp_path / 'g.sarif'}", "--format", f"text={tmp_path / 'g.txt'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    assert json.loads((tmp_path / "g.sarif").read_text())["runs"][0]["results"] == []
    assert "validate: clean" in (tmp_path / "g.txt").read_text()


@pytest.mark.parametrize("args, message", [
    (["--format", "json", "--format", "sarif"], "both json and sarif would be written to stdout"),
    (["--json", "-", "--format", "text=-"], "both json and text would be written to stdout"),
    (["--json", "{tmp}/a", "--format", "sarif={tmp}/../{name}/a"], "would be written to"),
    (["--format", "yaml"], "unknown format 'yaml'"),
    (["--format", "json="], "no destination after '='"),
])
def test_bad_format_arguments_exit_two(tmp_path, args, message):
    args = [a.format(tmp=tmp_path, name=tmp_path.name) for a in args]
    proc = run(REPO_ROOT, *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_to_a_directory_exits_two(tmp_path):
    proc = run(REPO_ROOT, "--quiet", "--format", f"sarif={tmp_path}")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"validate: cannot write {tmp_path}: Is a directory"


def test_version_names_the_harness_and_the_pins():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stderr == ""
    pins = yaml.safe_load((REPO_ROOT / "versions.yaml").read_text())
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{formats.TOOL} {importlib.metadata.version('aks-ray-kueue-harness')}"
    for name, line in zip(("kubernetes", "kueue", "kuberay"), lines[1:], strict=True):
        assert line == f"{name} {pins[name]['production']} (built from {pins[name]['module']} {pins[name]['version']})"


def test_a_finding_repeated_on_several_clusters_is_one_naming_each():
    """The same value found wrong at the same line on two clusters (a sample both list) is one finding whose context
    names both, not the first one's alone."""
    unique: dict = {}
    dev = Finding("workloads/a.yaml", 3, "RayJob/ray/a", "rule", "says", "fix", "cluster dev: samples.yaml")
    assert keep_once(unique, dev)
    assert not keep_once(unique, Finding(*[getattr(dev, f) for f in ("file", "line", "resource", "rule", "message", "hint")], "cluster prod: samples.yaml"))
    assert not keep_once(unique, dev)
    assert [f.context for f in unique.values()] == ["cluster dev: samples.yaml; cluster prod: samples.yaml"]


def test_a_platform_under_a_subdirectory_of_its_git_repository_reports_paths_from_the_git_root(tmp_path, capsys):
    """The platform in platform/ of a bigger Git repository, checked there: every report names the files from the Git
    root, where GitHub resolves annotation paths and SARIF's %SRCROOT% (a path relative to platform/ lands nowhere)."""
    from harness.gate.validate import main

    (tmp_path / ".git").mkdir()
    root = copy_config(tmp_path / "platform")
    for path, edits in EDITS.items():
        text = (root / path).read_text()
        for old, new in edits:
            text = text.replace(old, new)
        (root / path).write_text(text)
    reports = {fmt: tmp_path / f"out.{fmt}" for fmt in ("json", "sarif", "github", "junit", "text")}
    assert main([str(root), *(f"--format={fmt}={path}" for fmt, path in reports.items())]) == 1
    files = {f.file for f in _findings(reports["json"])}
    sarif = json.loads(reports["sarif"].read_text())["runs"][0]["results"]
    github = parse_github(reports["github"].read_text())
    assert files and all(f.startswith("platform/") for f in files), files
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif} == files
    assert {g["file"] for g in github} == files and f"platform/{TEAM_B}:" in reports["text"].read_text()
    assert f"platform/{TEAM_B}" in reports["junit"].read_text()
