"""The harness as a wheel, outside the checkout (issue 14).

The wheel is built from a clean copy of the repository: the files git tracks, as they are in
the working tree (what CI's clean clone has once they are committed; an untracked file is not
in it, and neither is anything ignored: .venv, build output, egg-info, caches). It must hold
every package and data file; installed with the locked runtime dependencies into a fresh venv,
its entry points load and its gate validates the repository from a directory outside any
checkout. The locks themselves must agree with pyproject.toml.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.core import cache_lock, cache_root, publish_dir
from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
DIST = "aks-ray-kueue-harness"
RUNTIME_LOCK = REPO_ROOT / "locks" / "harness.txt"
DEV_LOCK = REPO_ROOT / "locks" / "dev.txt"
SNAPSHOT = "harness/core/repo-snapshot"  # what the wheel carries of the repository


def _pip(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"pip {' '.join(args)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _outside_env() -> dict[str, str]:
    """The environment of a person using the installed harness: nothing points at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_KUEUE_REPO", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


# -- the clean copy and the wheel ---------------------------------------------------------

def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    return [f for f in out.decode().split("\0") if f and os.path.lexists(REPO_ROOT / f)]  # deleted in the tree: gone


@pytest.fixture(scope="module")
def clean_copy(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("clean") / "repo"
    for rel in _tracked_files():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, dest / rel, follow_symlinks=False)  # symlinks stay symlinks, as git has them
    return dest


@pytest.fixture(scope="module")
def wheel(clean_copy, tmp_path_factory) -> Path:
    # Built by the setuptools the lock pins (no build isolation: nothing else is downloaded).
    out = tmp_path_factory.mktemp("dist")
    _pip("wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(clean_copy))
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _harness_files(root: Path) -> set[str]:
    """Every file under root/harness, following the snapshot's symlinks, as the wheel names them."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root / "harness", followlinks=True):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        found |= {(Path(dirpath) / f).relative_to(root).as_posix() for f in filenames if not f.endswith(".pyc")}
    return found


def test_wheel_holds_every_package_and_data_file(wheel, clean_copy):
    names = set(zipfile.ZipFile(wheel).namelist())
    harness = {n for n in names if n.startswith("harness/")}
    assert {"harness/gate/sku.yaml", "harness/report/__init__.py", "harness/report/__main__.py"} <= harness
    missing, extra = _harness_files(clean_copy) - harness, harness - _harness_files(clean_copy)
    assert not missing, f"in the checkout's harness/ but not in the wheel (package-data in pyproject.toml?): {sorted(missing)}"
    assert not extra, f"in the wheel but not in the checkout: {sorted(extra)}"
    packages = {p.parent.relative_to(clean_copy).as_posix() for p in (clean_copy / "harness").rglob("__init__.py")}
    assert {p.split("/")[1] for p in packages if "/" in p} >= {
        "core", "toolchain", "k8s", "gate", "cluster", "kueue", "gitops", "report", "bench", "testing"}


def test_wheel_carries_the_repository_files_it_needs_unchanged(wheel):
    with zipfile.ZipFile(wheel) as whl:
        carried = {n.removeprefix(SNAPSHOT + "/"): whl.read(n) for n in whl.namelist() if n.startswith(SNAPSHOT + "/")}
    expected = {"versions.yaml"} | {f"tools/{tool}/{p.name}" for tool in ("fluxbuild", "tfeval", "kubecheck")
                                    for p in (REPO_ROOT / "tools" / tool).iterdir() if p.is_file()}
    assert set(carried) == expected
    for rel, data in carried.items():
        assert data == (REPO_ROOT / rel).read_bytes(), f"{SNAPSHOT}/{rel} differs from {rel}"


def test_wheel_declares_the_entry_points(wheel):
    with zipfile.ZipFile(wheel) as whl:
        text = next(whl.read(n).decode() for n in whl.namelist() if n.endswith(".dist-info/entry_points.txt"))
    scripts = dict(re.findall(r"^(\S+) = (\S+)$", text.split("[console_scripts]", 1)[1], re.M))
    assert scripts == PYPROJECT["project"]["scripts"]


# -- a fresh venv with the wheel ------------------------------------------------------------

def _wheelhouse(lock: Path) -> Path:
    """The lock's wheels, downloaded once per lock content into the harness's cache, so a
    fresh venv installs from disk (the pip cache does not keep every index's downloads)."""
    key = hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    target = cache_root() / "wheels" / f"{lock.stem}-{key}"
    if (target / ".complete").exists():
        return target
    with cache_lock("wheels"):
        if (target / ".complete").exists():
            return target
        for old in target.parent.glob(f"{lock.stem}-*"):  # earlier locks' wheels
            shutil.rmtree(old, ignore_errors=True)
        staging = target.with_name(f".{target.name}.{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        _pip("download", "--quiet", "--require-hashes", "--no-deps", "--only-binary=:all:", "-r", str(lock), "-d", str(staging))
        (staging / ".complete").write_text(lock.read_text())
        return publish_dir(staging, target)


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = str(root / "bin" / "python")
    into = ("--python", python)  # .venv's pip, installing into the fresh venv (which has none)
    _pip(*into, "install", "--quiet", "--no-index", "--find-links", str(_wheelhouse(RUNTIME_LOCK)), "--require-hashes",
         "--no-deps", "--no-compile", "-r", str(RUNTIME_LOCK))
    _pip(*into, "install", "--quiet", "--no-index", "--no-deps", "--no-compile", str(wheel))
    _pip(*into, "check")  # the wheel's requirements are met by the runtime lock alone
    return root


def _run(venv: Path, argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(argv, cwd=cwd, env=env or _outside_env(), capture_output=True, text=True, timeout=timeout)


def test_installed_harness_finds_its_repository(venv, clean_copy, tmp_path):
    probe = [str(venv / "bin/python"), "-c", "import harness, harness.core.versions as v; print(harness.__file__); print(v.REPO_ROOT)"]
    outside = _run(venv, probe, tmp_path)
    assert outside.returncode == 0, outside.stderr
    module, root = (Path(p).resolve() for p in outside.stdout.split())
    assert module.is_relative_to(venv.resolve()), f"harness imported from {module}, not from the wheel"
    assert root == module.parent / "core" / "repo-snapshot", "outside a checkout: the wheel's own snapshot"
    inside = _run(venv, probe, clean_copy / "clusters")
    assert Path(inside.stdout.split()[1]) == clean_copy.resolve(), "inside a checkout: that checkout"
    named = _run(venv, probe, tmp_path, dict(_outside_env(), RAY_KUEUE_REPO=str(clean_copy)))
    assert Path(named.stdout.split()[1]) == clean_copy.resolve(), "$RAY_KUEUE_REPO first"


def test_every_entry_point_loads_from_the_wheel(venv, tmp_path):
    code = (f"import importlib.metadata as m; eps = [e for e in m.distribution({DIST!r}).entry_points "
            "if e.group == 'console_scripts']; [e.load() for e in eps]; print(' '.join(sorted(e.name for e in eps)))")
    proc = _run(venv, [str(venv / "bin/python"), "-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == sorted(PYPROJECT["project"]["scripts"])
    assert all((venv / "bin" / name).exists() for name in PYPROJECT["project"]["scripts"])


@pytest.mark.timeout(2400)
def test_gate_runs_from_the_wheel_outside_the_checkout(venv, clean_copy, tmp_path):
    """`ray-kueue-validate REPO_DIR` from an unrelated directory: the wheel's pins and fluxbuild
    source (same content, so the same cached tool builds), the repository's configuration."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = tmp_path / "findings.json"
    proc = _run(venv, [str(venv / "bin/ray-kueue-validate"), str(clean_copy), "--json", str(report), "--quiet"], elsewhere,
                timeout=1800)  # a cold cache builds kustomize, kubeconform and fluxbuild first
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "validate: clean" in proc.stdout, proc.stdout[-2000:]
    assert json.loads(report.read_text())["count"] == 0


# -- the locks ------------------------------------------------------------------------------

def _pins(lock: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of every requirement in a pip-compile lock."""
    pins, current = {}, None
    for line in lock.read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line):
            current = canonicalize_name(m.group(1))
            pins[current] = (m.group(2), 0)
        elif current and re.match(r"^\s+--hash=sha256:[0-9a-f]{64}$", line.rstrip(" \\")):
            pins[current] = (pins[current][0], pins[current][1] + 1)
        elif line and not line.startswith((" ", "#")):
            pytest.fail(f"{lock.relative_to(REPO_ROOT)}: not a pinned requirement: {line!r}")
    return pins


def _unmet(requirements, pins) -> list[str]:
    out = []
    for text in requirements:
        req = Requirement(text)
        pin = pins.get(canonicalize_name(req.name))
        if pin is None or not req.specifier.contains(pin[0], prereleases=True):
            out.append(f"{text} (locked: {pin[0] if pin else 'missing'})")
    return out


def test_locks_pin_every_dependency_with_hashes():
    runtime, dev = _pins(RUNTIME_LOCK), _pins(DEV_LOCK)
    project = PYPROJECT["project"]
    extras = [r for name in ("test", "report") for r in project["optional-dependencies"][name]]
    installers = [ln for ln in (REPO_ROOT / "locks/installers.in").read_text().splitlines() if ln and not ln.startswith("#")]
    assert not _unmet(project["dependencies"], runtime), "locks/harness.txt is stale: run `make lock`"
    assert not _unmet(project["dependencies"] + extras + installers + PYPROJECT["build-system"]["requires"], dev), \
        "locks/dev.txt is stale: run `make lock`"
    assert {n: p for n, p in dev.items() if n in runtime} == runtime, "the two locks pin different versions"
    unhashed = [n for n, (_, hashes) in {**runtime, **dev}.items() if hashes == 0]
    assert not unhashed, f"pinned without a hash: {unhashed}"


def test_bootstrap_installs_from_the_lock_and_its_stamp_follows_it():
    text = (REPO_ROOT / "scripts/bootstrap").read_text()
    assert "lock=locks/dev.txt" in text
    assert re.search(r'^stamp=.*cat pyproject.toml "\$lock" \| sha256sum', text, re.M), "the stamp must hash the lock"
    assert "--require-hashes" in text and "--no-build-isolation" in text
