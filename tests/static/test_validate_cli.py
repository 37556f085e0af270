"""scripts/validate as CI and people call it: exit codes, text, JSON and JUnit output."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static
VALIDATE = REPO_ROOT / "scripts" / "validate"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(VALIDATE), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_clean_repository_exits_zero(tmp_path):
    proc = run(REPO_ROOT, "--json", tmp_path / "f.json", "--junit", tmp_path / "f.xml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "validate: clean" in proc.stdout
    assert json.loads((tmp_path / "f.json").read_text())["count"] == 0
    suite = ET.parse(tmp_path / "f.xml").getroot()
    assert int(suite.find("testsuite").get("tests")) >= 20 and int(suite.find("testsuite").get("failures")) == 0


def test_findings_exit_one_with_file_rule_and_hint(repo_copy, tmp_path):
    lq = repo_copy / "overlays/team-queues/team-b.yaml"
    lq.write_text(lq.read_text().replace("clusterQueue: team-b-cq", "clusterQueue: nope"))
    proc = run(repo_copy, "--json", tmp_path / "f.json", "--junit", tmp_path / "f.xml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "overlays/team-queues/team-b.yaml:" in proc.stdout and "LocalQueue/ray/team-b localqueue-clusterqueue" in proc.stdout
    assert "fix:" in proc.stdout
    found = json.loads((tmp_path / "f.json").read_text())["findings"]
    assert {f["rule"] for f in found} == {"localqueue-clusterqueue"}
    assert all(f["line"] for f in found)
    failures = [c for c in ET.parse(tmp_path / "f.xml").getroot().iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failures] == ["localqueue-clusterqueue"]


def test_not_a_checkout_exits_two(tmp_path):
    proc = run(tmp_path)
    assert proc.returncode == 2
    assert "does not look like a checkout" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("below", ["terraform", "clusters", "terraform/clusters"])
def test_without_an_argument_the_repository_above_the_working_directory_is_checked(repo_copy, below):
    """From terraform/ (whose clusters/ holds tfvars files) or clusters/, the gate checks the repository they are in, as
    git finds its work tree; outside any repository it exits 2 with the reason."""
    from harness.gate.entry import repository_root

    assert repository_root(repo_copy / below) == repo_copy.resolve()
    proc = subprocess.run([str(VALIDATE), "--quiet"], capture_output=True, text=True, timeout=300, cwd=repo_copy / below)
    assert proc.returncode == 0 and "validate: clean" in proc.stdout, proc.stdout + proc.stderr


def test_without_an_argument_outside_a_repository_exits_two(tmp_path):
    (tmp_path / "terraform").mkdir()
    proc = subprocess.run([str(VALIDATE)], capture_output=True, text=True, timeout=300, cwd=tmp_path / "terraform")
    assert proc.returncode == 2 and "does not look like a checkout" in proc.stderr and "here or above" in proc.stderr


def test_readme_rule_table_is_generated_from_the_code():
    from harness.core import REPO_ROOT
    from harness.gate.validate import RULE_IDS, RULE_SOURCES, rule_table

    readme = (REPO_ROOT / "README.md").read_text()
    block = readme.split("<!-- rules:begin -->\n", 1)[1].split("<!-- rules:end -->", 1)[0]
    assert block == rule_table(), "README's rule table is stale: paste `scripts/validate --list-rules` between the markers"
    assert len(RULE_IDS) == sum(len(r) for r in RULE_SOURCES.values()), "two modules define the same rule id"


@pytest.mark.parametrize("setting,said", [
    ({"RAY_KUEUE_VERSIONS": "/nonexistent"}, "$RAY_KUEUE_VERSIONS: '/nonexistent' is not COMPONENT=VERSION"),
    ({"RAY_KUEUE_VERSIONS": "kueue=v9"}, "kueue v9 is neither the pin nor a candidate"),
    ({"RAY_KUEUE_REPO": "/nonexistent"}, "$RAY_KUEUE_REPO=/nonexistent: no versions.yaml in /nonexistent"),
], ids=["selection-not-a-pair", "selection-unknown-version", "repo-not-a-checkout"])
@pytest.mark.parametrize("command", [["ray-kueue-validate", str(REPO_ROOT)], ["ray-kueue-bench", "validate", "--runs", "1"]],
                         ids=["validate", "bench"])
def test_a_setting_the_harness_reads_at_start_is_one_line_and_exit_two(setting, said, command):
    """Read while the modules load (versions.yaml, the version selection): one line naming the setting, exit 2 (could
    not run), never a traceback with exit 1, which means findings."""
    proc = subprocess.run([str(Path(sys.executable).parent / command[0]), *command[1:]], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **setting})
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
