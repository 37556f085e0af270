"""The gate's CLI in hostile environments (hostile review J): a closed or full stdout or stderr, a locale that is not
UTF-8, an unusable $TMPDIR, a shallow clone. Never a traceback or a hang; the reports asked for are written; the exit code
means what it says (2 only when a report asked for could not be written or the gate could not run)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.core.versions import REPO_ROOT
from harness.testing import copy_config
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static
VALIDATE = REPO_ROOT / "scripts" / "validate"


def shell(redirect: str, *args, env: dict | None = None) -> subprocess.CompletedProcess:
    """scripts/validate ARGS with `redirect` applied by the shell (`>&-` closes stdout, `2>&-` stderr); the stream left
    open is captured."""
    command = 'exec "$0" "$@" ' + redirect
    return subprocess.run(["bash", "-c", command, str(VALIDATE), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.parametrize("args, redirect, code, said", [
    ([REPO_ROOT, "--quiet"], ">&-", 2, "cannot write the text report to stdout: it is closed"),  # the report asked for
    ([REPO_ROOT, "--format", "sarif"], ">&-", 2, "cannot write the sarif report to stdout: it is closed"),
    (["--list-rules"], ">&-", 2, "cannot write the rule table to stdout: it is closed"),
    (["--version"], ">&-", 2, "cannot write the version to stdout: it is closed"),
    (["--list-rules"], ">/dev/full", 2, "cannot write the rule table to stdout: No space left on device"),
    (["--version"], ">/dev/full", 2, "cannot write the version to stdout: No space left on device"),
    ([REPO_ROOT, "--quiet"], "2>&-", 0, "validate: clean"),  # a closed stderr alone changes nothing
    ([REPO_ROOT, "--format", "github"], "2>&-", 0, ""),
])
def test_a_closed_or_full_standard_stream_is_never_a_traceback(args, redirect, code, said):
    proc = shell(redirect, *args)
    out = proc.stdout + proc.stderr
    assert proc.returncode == code and said in out and "Traceback" not in out, out
    if code == 2:
        assert proc.stderr.splitlines()[-1] == f"validate: {said}", out


@pytest.mark.parametrize("redirect", [">&-", ">/dev/full"])
def test_reports_to_files_need_no_stdout(tmp_path, redirect):
    """Every report asked for goes to a file: they are written and the exit code is the verdict, whatever stdout is (the
    text report nobody asked for moves to stderr, or is left out)."""
    proc = shell(redirect, REPO_ROOT, "--json", tmp_path / "x.json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads((tmp_path / "x.json").read_text())["count"] == 0
    proc = shell(redirect, REPO_ROOT, "--format", f"json={tmp_path / 'y.json'}", "--format", f"text={tmp_path / 't.txt'}")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "validate: clean" in (tmp_path / "t.txt").read_text() and (tmp_path / "y.json").is_file()


def test_a_non_utf8_locale_with_non_ascii_paths_and_values(tmp_path):
    """LC_ALL=C without Python's UTF-8 mode: the helpers' pipes, the gate's files and its reports are UTF-8 all the same
    (the pipes once hung the gate forever on a non-ASCII value); no read or write falls back to the locale's encoding."""
    repo = copy_config(tmp_path / "é dir" / "repo")
    edit(repo, "base/namespace.yaml", "  name: ray\n", '  name: ray\n  annotations:\n    note: "café"\n')
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONWARNDEFAULTENCODING": "1"}
    proc = subprocess.run([str(VALIDATE), str(repo), "--quiet", "--json", str(tmp_path / "f.json")], capture_output=True,
                          timeout=300, env=env)
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 0 and "validate: clean" in out and "Traceback" not in out, out
    assert not [ln for ln in out.splitlines() if "EncodingWarning" in ln and "harness" in ln], out
    edit(repo, "base/namespace.yaml", '    note: "café"\n', '    "café": x\n')  # a key the apiserver refuses: in the reports
    proc = subprocess.run([str(VALIDATE), str(repo), "--quiet", "--format", "github", "--format", f"text={tmp_path / 't.txt'}"],
                          capture_output=True, timeout=300, env=env)
    assert proc.returncode == 1 and "annotations[café]" in proc.stdout.decode("utf-8"), proc.stdout + proc.stderr
    assert "annotations[café]" in (tmp_path / "t.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("tmpdir", ["missing", "file"])
def test_an_unusable_tmpdir_is_named(tmp_path, tmpdir):
    path = tmp_path / tmpdir
    if tmpdir == "file":
        path.write_text("x")
    proc = subprocess.run([str(VALIDATE), str(REPO_ROOT), "--quiet"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(path)})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"$TMPDIR is {path}, where no directory can be made" in proc.stderr and "Traceback" not in proc.stderr


def test_a_base_ref_missing_from_a_shallow_clone_says_how_to_fetch(tmp_path):
    source = copy_config(tmp_path / "source")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one"],
                 ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "two"]):
        subprocess.run(["git", "-C", str(source), *args], check=True, capture_output=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{source}", str(clone)], check=True, capture_output=True)
    proc = subprocess.run([str(VALIDATE), str(clone), "--quiet", "--base", "HEAD~1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "the clone is shallow" in proc.stderr and "fetch-depth: 0" in proc.stderr and "git fetch --deepen" in proc.stderr
    assert "git fetch origin HEAD" not in proc.stderr, proc.stderr  # no branch to fetch by that name
    full = subprocess.run([str(VALIDATE), str(source), "--quiet", "--base", "nope"], capture_output=True, text=True, timeout=300)
    assert full.returncode == 2 and "shallow" not in full.stderr and "git fetch origin nope" in full.stderr, full.stderr


def test_reports_to_a_closed_stream_and_a_file(tmp_path, monkeypatch):
    """write_outputs: a closed stream (None) fails its report, the file is written all the same; the text report nobody
    asked for moves to the other stream."""
    import io
    from harness.gate import formats
    monkeypatch.setattr("sys.stdout", None)
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    implied = formats.plan_outputs([formats.Output("json", str(tmp_path / "a.json"))])
    formats.write_outputs([(o, f"{o.format} report") for o in implied])
    assert (tmp_path / "a.json").read_text() == "json report" and err.getvalue() == "text report\n"
    asked = [formats.Output("sarif"), formats.Output("json", str(tmp_path / "b.json"))]
    with pytest.raises(formats.ReportError, match="sarif report to stdout: it is closed"):
        formats.write_outputs([(o, "x") for o in formats.plan_outputs(asked)])
    assert Path(tmp_path / "b.json").read_text() == "x"
