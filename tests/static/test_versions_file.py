"""A mistake in versions.yaml (harness/core/pin_file.py): the gate's own pins stop every command that reads them with one
line naming versions.yaml:LINE and the fix (exit 2), never a traceback, an "internal error" or a Go error without its
reason; a checked repository's versions.yaml is one finding at that line (versions-schema, or versions-drift at a
Kueue or KubeRay chart or production)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core import versions
from harness.gate.validate import validate_repository
from harness.toolchain import builds
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

# (id, old text of versions.yaml, new text, line of the refusal, what the one line must say)
BROKEN = [
    ("yaml-slip-under-candidates", "      chart: 0.19.2\n", "      chart: 0.19.2\n     oops\n", 48, "not valid YAML"),
    ("candidate-key-misspelt", "- version: v0.19.2 ", "- vesion: v0.19.2 ", 46, "rename vesion to version"),
    ("pin-without-its-v", "  version: v0.17.1 ", "  version: 0.17.1 ", 38, "set kueue.version: v0.17.1"),
    ("component-misspelt", "\nkueue:\n", "\nkueu:\n", 34, "rename kueu to kueue"),
    ("candidate-older-than-the-pin", "- version: v0.18.3 ", "- version: v0.17.0 ", 44, "not newer than the pin v0.17.1"),
    ("candidate-listed-twice", "- version: v0.19.2 ", "- version: v0.18.3 ", 46, "listed twice"),
    ("candidate-chart-of-another-release", "      chart: 0.18.3\n", "      chart: 0.18.2\n", 45, "set chart: 0.18.3"),
    ("production-unquoted-number", "  production: 0.17.1\n", "  production: 0.17\n", 35, "as a quoted string"),
    ("candidates-not-a-list", "  candidates:\n    - version: v1.6.2       # v1.7.0's module zip is refused by the proxy: not buildable here\n"
     "      chart: 1.6.2\n", "  candidates: v1.6.2\n", 54, "as an array"),
    ("unknown-key-of-a-pin", "kwok:                       #", "kwok:\n  modul: sigs.k8s.io/kwok\n  #", 29, "rename modul to module"),
    ("key-written-twice", "  production: 0.17.1\n", "  production: 0.17.1\n  production: 0.17.3\n", 36, "written twice in one mapping (first at line 35)"),
    ("required-component-removed", "etcd:\n  module: go.etcd.io/etcd/server/v3\n", "etcdd:\n  module: go.etcd.io/etcd/server/v3\n", 31,
     "rename etcdd to etcd"),
]


def _broken_pins(tmp_path: Path, monkeypatch, old: str, new: str) -> Path:
    path = tmp_path / "versions.yaml"
    text = versions.VERSIONS_FILE.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    monkeypatch.setattr(versions, "VERSIONS_FILE", path)
    monkeypatch.chdir(tmp_path)
    versions.pins.cache_clear()
    return path


@pytest.fixture(autouse=True)
def _fresh_pins():
    versions.pins.cache_clear()
    yield
    versions.pins.cache_clear()


@pytest.mark.parametrize("case,old,new,line,said", BROKEN, ids=[b[0] for b in BROKEN])
def test_the_gates_own_versions_file_stops_every_reader_with_its_line(tmp_path, monkeypatch, case, old, new, line, said):
    """Every reader of a pin (here versions.module, what the gate's modules read at import) gets VersionsFileError, a
    HarnessError every CLI prints as one line and exit 2: versions.yaml:LINE, what is wrong and the fix."""
    _broken_pins(tmp_path, monkeypatch, old, new)
    with pytest.raises(versions.VersionsFileError) as err:
        versions.module("kueue")
    message = str(err.value)
    assert message.startswith(f"versions.yaml:{line}: ") and said in message and "\n" not in message, message


def test_rehearse_refuses_a_broken_versions_file_in_one_line(tmp_path, monkeypatch, capsys):
    """`make rehearse KUEUE=v0.18.3` with a misspelt candidate key: one line naming versions.yaml:LINE, exit 2 (was a
    KeyError traceback)."""
    from harness.report import rehearsal

    _broken_pins(tmp_path, monkeypatch, "- version: v0.19.2 ", "- vesion: v0.19.2 ")
    assert rehearsal.main(["--kueue", "v0.18.3", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rehearse: versions.yaml:46: ") and "rename vesion to version" in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case,old,new,line,said", [BROKEN[0], BROKEN[1], BROKEN[2]], ids=[b[0] for b in BROKEN[:3]])
def test_the_gate_command_with_a_broken_versions_file_is_one_line_exit_two(repo_copy, case, old, new, line, said):
    """The reviewer's three edits (P#3 a, b, c) through the gate's command line, reading the copy's versions.yaml as its
    own ($RAY_KUEUE_REPO): exit 2 and one line, never a traceback, an internal error or a Go error without its reason."""
    edit(repo_copy, "versions.yaml", old, new)
    harness = Path(versions.__file__).resolve().parents[2]  # this checkout's harness (the console script may be another's)
    proc = subprocess.run([sys.executable, "-c", "import sys; from harness.gate.entry import cli; sys.argv[0] = 'validate'; cli()",
                           str(repo_copy)], capture_output=True, text=True, timeout=300, cwd=repo_copy,
                          env={**os.environ, versions.REPO_ENV: str(repo_copy), "PYTHONPATH": str(harness)})
    err = proc.stderr.strip()
    assert proc.returncode == 2 and err.startswith(f"validate: versions.yaml:{line}: ") and said in err, proc.stderr
    assert "\n" not in err and "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize("case,old,new,line,rule", [
    ("candidate-key-misspelt", "- version: v0.19.2 ", "- vesion: v0.19.2 ", 46, "versions-schema"),
    ("pin-without-its-v", "  version: v0.17.1 ", "  version: 0.17.1 ", 38, "versions-schema"),
    ("candidate-older-than-the-pin", "- version: v0.18.3 ", "- version: v0.17.0 ", 44, "versions-schema"),
    ("component-misspelt", "\netcd:\n", "\netc:\n", 31, "versions-schema"),
    ("production-unquoted-number", "  production: 0.17.1\n", "  production: 0.17\n", 35, "versions-drift"),
])
def test_a_checked_repositorys_versions_file_is_one_finding_at_its_line(repo_copy, case, old, new, line, rule):
    edit(repo_copy, "versions.yaml", old, new)
    found = [(f.rule, f.file, f.line) for f in validate_repository(repo_copy).findings]
    assert found == [(rule, "versions.yaml", line)], found


def test_a_new_tool_pin_in_a_checked_versions_file_is_clean(repo_copy):
    """A pin the schema allows (another Go tool with module and version, a comment between a candidate's keys) is no
    finding."""
    edit(repo_copy, "versions.yaml", "\nkwok:", "\nexample-tool:\n  module: example.com/tool\n  version: v1.2.3-rc.1\nkwok:")
    edit(repo_copy, "versions.yaml", "      chart: 0.19.2\n", "      # the newest\n      chart: 0.19.2\n")
    assert [f.text() for f in validate_repository(repo_copy).findings] == []


def test_a_version_the_proxy_refuses_names_its_line_and_gos_reason(monkeypatch):
    """`go mod download -json` prints Go's reason as JSON on stdout and exits 1: the error keeps it, one line, and names
    the versions.yaml line that writes the module version."""
    reason = ("sigs.k8s.io/kueue@v0.17.1: reading https://proxy.golang.org/sigs.k8s.io/kueue/@v/v0.17.1.info: 403 Forbidden\n"
              "\tserver response: This module version is not available.")

    def refused(cmd, **_):
        return subprocess.CompletedProcess(cmd, 1, stdout=json.dumps({"Path": "sigs.k8s.io/kueue", "Version": "v0.17.1",
                                                                       "Error": reason}), stderr="")

    monkeypatch.setattr(builds.subprocess, "run", refused)
    with pytest.raises(builds.ToolBuildError) as err:
        builds.module_info("sigs.k8s.io/kueue", "v0.17.1")
    message = str(err.value)
    assert message.startswith(f"{versions.shown(38)}: sigs.k8s.io/kueue@v0.17.1 ") and "This module version is not available" in message
    assert "\n" not in message, message
