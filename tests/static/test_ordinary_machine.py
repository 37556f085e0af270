"""Running as an ordinary user on an ordinary machine: Debian's Python 3.11.2 (no tarfile extraction filters), a
read-only checkout, a small or full temporary directory, an odd XDG cache, a dead apiserver, make's own arguments. Each
ends in one line naming the place and the fix, never a traceback."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from harness.core import REPO_ROOT, versions

pytestmark = pytest.mark.static


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def small_repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "sub" / "d").mkdir(parents=True)
    (repo / "sub" / "d" / "f").write_text("a\n")
    (repo / "sub" / "link").symlink_to("d/f")
    (repo / "run").write_text("#!/bin/sh\n")
    (repo / "run").chmod(0o755)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    (repo / "run").write_text("changed\n")  # the working tree differs: the export is the commit's
    return repo


def test_a_commit_tree_is_written_by_git_without_tarfile(small_repo, tmp_path, monkeypatch):
    """make report's base tree and the gate's --base tree: no tarfile extraction (its `filter=` needs Python 3.11.4+, and
    an unfiltered one trusts the archive's paths); modes and symlinks as git checks them out; the checkout's index is
    untouched; a subdirectory gives its subtree, as git archive run there did."""
    from harness.report.__main__ import extract_tree
    from harness.core import export_tree

    def no_tarfile(*_a, **_k):
        raise AssertionError("tarfile used")

    monkeypatch.setattr(tarfile, "open", no_tarfile)
    index_before = (small_repo / ".git" / "index").read_bytes()
    out = extract_tree(small_repo, _git(small_repo, "rev-parse", "HEAD"), tmp_path / "base")
    assert (out / "run").read_text() == "#!/bin/sh\n" and os.access(out / "run", os.X_OK)
    assert (out / "sub" / "link").is_symlink() and os.readlink(out / "sub" / "link") == "d/f"
    assert (small_repo / ".git" / "index").read_bytes() == index_before and _git(small_repo, "status", "--porcelain") == "M run"
    sub = export_tree(small_repo / "sub", "HEAD", tmp_path / "sub")
    assert sorted(p.name for p in sub.iterdir()) == ["d", "link"]


def test_the_gate_base_tree_needs_no_tarfile(monkeypatch):
    from harness.gate import updates

    assert "tarfile" not in vars(updates) and "extractall" not in Path(updates.__file__).read_text()


def test_a_relative_xdg_cache_home_is_ignored_and_go_does_not_see_it(monkeypatch, tmp_path):
    """XDG Base Directory spec: a relative path is invalid and ignored (Go refuses it: "GOCACHE is not defined")."""
    from harness.core import cache_root
    from harness.toolchain import go_env

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert cache_root() == tmp_path / ".cache" / "aks-ray-kueue"
    assert "XDG_CACHE_HOME" not in go_env()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "abs"))
    assert cache_root() == tmp_path / "abs" / "aks-ray-kueue" and go_env()["XDG_CACHE_HOME"] == str(tmp_path / "abs")


def test_an_unwritable_cache_is_named_with_what_picks_it(monkeypatch, tmp_path):
    from harness.core import HarnessError, cache_root

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # even root cannot make a directory under a file
    with pytest.raises(HarnessError) as err:
        cache_root()
    text = str(err.value)
    assert text.startswith(f"cannot write the tool cache {tmp_path / 'file' / 'aks-ray-kueue'} (") and "XDG_CACHE_HOME" in text
    assert "\n" not in text


def test_the_gate_says_an_unwritable_cache_in_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    proc = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['validate', '.']; from harness.gate.entry import cli; cli()"], cwd=REPO_ROOT,
                          capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "file")}, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot write the tool cache" in proc.stderr and "XDG_CACHE_HOME" in proc.stderr, proc.stderr


def test_make_cluster_in_a_checkout_it_cannot_write_says_where_and_the_fix(tmp_path, capsys):
    """A read-only checkout (here: a path under a file, which even root cannot create): one line, before anything
    starts, naming the directory and WORKDIR=."""
    from harness.cluster.__main__ import main

    (tmp_path / "file").write_text("")
    assert main(["--workdir", str(tmp_path / "file" / "run")]) == 2
    out = capsys.readouterr()
    line = (out.out + out.err).strip()
    assert line.startswith(f"[cluster] failed: cannot write {tmp_path / 'file' / 'run'} (") and "WORKDIR=DIR" in line, line
    assert "\n" not in line and "Traceback" not in line


def test_make_rehearse_refuses_the_pins_as_candidate_and_an_unwritable_out(tmp_path, capsys, monkeypatch):
    from harness.report.rehearsal import main

    monkeypatch.delenv(versions.SELECT_ENV, raising=False)
    out = tmp_path / "out"
    assert main(["--kueue", versions.pinned("kueue"), "--kuberay", versions.pinned("kuberay"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rehearse: kueue ") and "are the pins" in err and err.count("\n") == 1, err
    (tmp_path / "file").write_text("")
    assert main(["--suites", "", "--out", str(tmp_path / "file" / "rehearsal")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rehearse: cannot write {tmp_path / 'file' / 'rehearsal'}") and "OUT=DIR" in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")
def test_make_passes_an_empty_suites_a_rehearsal_out_and_a_cluster_workdir():
    def dry(*args: str) -> str:
        return subprocess.run(["make", "-n", "-s", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout

    assert '--suites "" --out /x/reh ' in dry("rehearse", "SUITES=", "OUT=/x/reh")
    assert "--out build/rehearsal " in dry("rehearse")  # OUT's default is the report's: not taken
    assert "--workdir /x/run" in dry("cluster", "WORKDIR=/x/run")


def test_a_seed_copy_into_a_full_filesystem_names_tmpdir_and_the_room_needed(tmp_path, monkeypatch):
    """shutil.copytree raises shutil.Error(list of (src, dst, why)): one line naming the directory, its free room, what
    a cluster needs and TMPDIR (the report's clusters run there), not the list's repr."""
    from harness.cluster import seed
    from harness.cluster.operators import ClusterError

    member = tmp_path / "seed" / "member"
    (member / "wal").mkdir(parents=True)
    (member / "wal" / "0.wal").write_bytes(b"\0" * 2**20)
    monkeypatch.setattr(seed, "seed_dir", lambda *_: member.parent)
    monkeypatch.setattr(seed.tempfile, "gettempdir", lambda: str(tmp_path))
    full = shutil.Error([(str(member / "wal" / "0.wal"), "dst", "[Errno 28] No space left on device: 'a' -> 'b'")])

    def copytree(src, dst, *a, **k):
        raise full

    monkeypatch.setattr(seed.shutil, "copytree", copytree)
    data = tmp_path / "report-x" / "cluster" / "etcd"
    data.mkdir(parents=True)
    with pytest.raises(ClusterError) as err:
        seed.seed_etcd([], {}, data, tmp_path)
    text = str(err.value)
    assert text.startswith(f"no space left in {data.parent} (") and "needs about 11 MB" in text, text
    assert f"set TMPDIR to a larger filesystem (it is {tmp_path})" in text and "\n" not in text and "[(" not in text
    monkeypatch.setattr(seed.tempfile, "gettempdir", lambda: "/nonexistent-tmp")
    with pytest.raises(ClusterError, match=r"WORKDIR=DIR"):
        seed.seed_etcd([], {}, data, tmp_path)


def test_a_dead_apiserver_is_one_harness_error_naming_it():
    """The one client (harness.k8s): urllib3's MaxRetryError becomes ApiUnreachable, for the dynamic client (also its
    discovery) and for the REST requests."""
    from kubernetes import client

    from harness.cluster import port_is_free
    from harness.k8s import NAMESPACE, ApiUnreachable, Kube, get_object

    port = next(p for p in range(39990, 40100) if port_is_free(p))
    cfg = client.Configuration()
    cfg.host, cfg.verify_ssl = f"https://127.0.0.1:{port}", False
    api = client.ApiClient(cfg)
    for call in (lambda: Kube(api).get("v1", "Namespace", "ray"), lambda: get_object(api, NAMESPACE, "ray")):
        with pytest.raises(ApiUnreachable) as err:
            call()
        assert str(err.value) == f"the apiserver at https://127.0.0.1:{port} does not answer: [Errno 111] Connection refused"


class _Dead:
    name, pid, returncode = "kube-apiserver", 1, -9

    def alive(self):
        return False


class _Alive(_Dead):
    name = "etcd"

    def alive(self):
        return True


class _Plane:
    def all_processes(self):
        return [_Alive(), _Dead()]


def test_a_failed_call_names_the_dead_component_of_the_plane(tmp_path):
    from kubernetes import client

    from harness.k8s import ApiUnreachable
    from harness.report.scenarios import plane_failure

    err = plane_failure(_Plane(), ApiUnreachable("x"), "during scenario single-queue (base)", tmp_path)
    assert str(err) == f"kube-apiserver exited (killed by signal 9) during scenario single-queue (base); component logs kept in {tmp_path}"
    err = plane_failure(None, client.ApiException(status=503, reason="Service Unavailable"), "during scenario s (head)", None)
    assert str(err) == "the apiserver answered 503 Service Unavailable during scenario s (head)"


def test_gitignore_ignores_a_symlinked_venv():
    lines = (REPO_ROOT / ".gitignore").read_text().splitlines()
    assert ".venv" in lines and ".venv/" not in lines  # a trailing slash matches only a directory, not a symlink to one


def test_bootstrap_refuses_an_old_python_in_one_line(tmp_path):
    """scripts/bootstrap on a machine whose python3 is older than 3.11 (pyproject's requires-python)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "bootstrap", repo / "scripts" / "bootstrap")
    for name in ("pyproject.toml", "locks"):
        (shutil.copytree if (REPO_ROOT / name).is_dir() else shutil.copy)(REPO_ROOT / name, repo / name)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\ncase \"$1\" in -V) echo 'Python 3.10.12';; *) exit 1;; esac\n")
    (fake / "python3").chmod(0o755)
    go = Path(shutil.which("go") or "/usr/local/go/bin/go").parent
    proc = subprocess.run([str(repo / "scripts" / "bootstrap")], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{fake}:{go}:/usr/bin:/bin"})
    assert proc.returncode == 1 and proc.stderr.strip() == \
        "bootstrap: Python 3.11 or newer is required as python3 (found: Python 3.10.12)", proc.stderr
