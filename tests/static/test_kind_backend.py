"""The kind backend's plan: the commands it would run and the files it would write, checked
without Docker (this machine has none; the CI `kind` job runs the plan for real)."""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import toolchain as tools
from harness.toolchain import builds
from harness.cluster import KindCluster, KindError, backends, kind_plan, node_image, run_name
from harness.core import cache_root, versions
from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

KIND_NAME_RULE = re.compile(r"^[a-z0-9.-]+$")  # kind's pkg/internal/apis/config/validate.go


def _inside(path: Path, root: Path) -> bool:
    path, root = path.resolve(), root.resolve()
    return path == root or root in path.parents


def test_plan_runs_the_cached_builds_of_the_pinned_kind_and_kubectl(tmp_path):
    plan = kind_plan(tmp_path)
    kind, kubectl = tools.tool("kind"), tools.tool("kubectl")
    assert kind.version == versions.module("kind")[1] == "v0.33.0"
    assert plan.kind == kind.bin_dir() / "kind" and _inside(plan.kind, cache_root())
    assert plan.kind.parent.name == f"kind-{versions.module('kind')[1]}"
    assert plan.kubectl == kubectl.bin_dir() / "kubectl" and _inside(plan.kubectl, cache_root())
    assert plan.kubectl.parent.name == f"kubectl-{versions.module('kubernetes')[1]}"
    assert plan.create_command()[0] == plan.delete_command()[0] == plan.export_logs_command()[0] == str(plan.kind)
    assert plan.kubectl_command("get", "nodes")[0] == str(plan.kubectl)


def test_plan_creates_the_pinned_node_image_by_digest(tmp_path):
    plan = kind_plan(tmp_path)
    pinned = versions.entry("kind")["node_image"]
    line = re.escape(str(versions.entry("kubernetes")["production"]))
    assert re.fullmatch(rf"kindest/node:v{line}\.\d+@sha256:[0-9a-f]{{64}}", pinned), pinned
    assert plan.image == pinned and plan.node_version == pinned.split(":")[1].split("@")[0]
    cmd = plan.create_command()
    assert cmd[1:4] == ["create", "cluster", "--name"]
    assert cmd[cmd.index("--image") + 1] == pinned
    assert cmd[cmd.index("--name") + 1] == plan.name
    assert cmd[cmd.index("--kubeconfig") + 1] == str(plan.kubeconfig)
    assert "--wait" in cmd, "create must wait for the control plane"
    delete = plan.delete_command()
    assert delete[1:3] == ["delete", "cluster"] and delete[delete.index("--name") + 1] == plan.name
    assert plan.kubectl_command("apply", "-f", "-")[1:3] == ["--kubeconfig", str(plan.kubeconfig)]


def test_each_run_gets_its_own_cluster_name(tmp_path):
    names = {kind_plan(tmp_path).name for _ in range(5)}
    assert len(names) == 5, names
    assert all(KIND_NAME_RULE.match(n) and str(os.getpid()) in n for n in names), names
    assert run_name(pid=7, token="abc") == "ray-kueue-7-abc"
    with pytest.raises(KindError, match="does not match"):
        kind_plan(tmp_path, name="Ray_Kueue")


def test_kubeconfig_logs_and_working_directory_stay_outside_the_checkout(tmp_path):
    plan = kind_plan(tmp_path / "kind")
    for path in (plan.workdir, plan.kubeconfig, plan.log_dir):
        assert not _inside(path, REPO_ROOT) and _inside(path, tmp_path), path
    assert plan.env()["KUBECONFIG"] == str(plan.kubeconfig)
    paths = [a for cmd in (plan.create_command(), plan.delete_command(), plan.export_logs_command()) for a in cmd if a.startswith("/")]
    assert not [p for p in paths if _inside(Path(p), REPO_ROOT)], paths
    for inside in (REPO_ROOT, REPO_ROOT / "build" / "kind", REPO_ROOT / ".pytest-kind"):
        with pytest.raises(KindError, match="inside the checkout"):
            kind_plan(inside)


@pytest.mark.parametrize("image, problem", [
    ("kindest/node:v1.35.8", "is not kindest/node"),  # a tag alone may be a build for another kind release
    ("kindest/node:v1.34.11@sha256:" + "0" * 64, "not the pinned"),
    ("docker.io/kindest/node:v1.35.8@sha256:" + "0" * 63, "is not kindest/node"),
])
def test_a_node_image_without_digest_or_off_the_pinned_line_is_refused(monkeypatch, tmp_path, image, problem):
    monkeypatch.setitem(versions.entry("kind"), "node_image", image)
    with pytest.raises(KindError, match=problem):
        node_image()
    with pytest.raises(KindError, match=problem):
        kind_plan(tmp_path)


def test_without_docker_the_backend_is_unavailable_and_builds_nothing(monkeypatch, tmp_path):
    """The skip here (no Docker engine) says why, before any kind or kubectl build starts."""
    def no_builds(*names):
        raise AssertionError(f"the kind backend built {names} without a Docker engine")

    monkeypatch.setenv("PATH", str(tmp_path))  # no docker CLI
    monkeypatch.setattr(tools, "ensure", no_builds)
    with pytest.raises(backends.BackendUnavailable, match="kind backend needs a Docker engine: no docker CLI on PATH"):
        backends.kind(tmp_path)
    assert not (tmp_path / "kind").exists()


def test_the_default_test_path_never_builds_kind_or_kubectl(monkeypatch):
    default = {*tools.STATIC_TOOLS, *tools.CLUSTER_TOOLS, *tools.FLUX_TOOLS, *tools.DEFAULT_TOOLS}
    assert {"kind", "kubectl"} <= set(tools.KIND_TOOLS)
    assert not {"kind", "kubectl"} & default, default
    built = []
    monkeypatch.setattr(builds, "ensure", lambda *names: built.extend(names))
    assert builds.main([]) == 0 and built == list(tools.DEFAULT_TOOLS)  # `make tools`, `make test`
    built.clear()
    assert builds.main(["--group", "default", "--group", "kind"]) == 0  # `make tools BACKEND=kind`
    assert set(built) == {*tools.DEFAULT_TOOLS, *tools.KIND_TOOLS} and len(built) == len(set(built))
    make = subprocess.run(["make", "-n", "tools", "BACKEND=kind"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert "scripts/build-tools --group default --group kind" in make.stdout, make.stdout


def test_nothing_uses_pytest_kind_and_its_directory_is_ignored():
    """pytest-kind downloads kind v0.17.0 and kubectl v1.25.3 and writes .pytest-kind/ into the
    working directory; the backend drives the pinned builds itself."""
    users = [str(p.relative_to(REPO_ROOT)) for p in sorted((REPO_ROOT / "harness").rglob("*.py"))
             if re.search(r"^\s*(from|import) pytest_kind", p.read_text(), re.M)]
    assert not users, users
    assert ".pytest-kind/" in (REPO_ROOT / ".gitignore").read_text().splitlines()


def test_ci_kind_job_builds_the_kind_tools_through_the_harness():
    job = yaml.safe_load((REPO_ROOT / ".github/workflows/pull-request.yml").read_text())["jobs"]["kind"]
    runs = [s.get("run", "") for s in job["steps"]]
    build = next(i for i, r in enumerate(runs) if r.startswith("scripts/build-tools"))
    test = next(i for i, r in enumerate(runs) if "-m integration --backend=kind" in r)
    assert build < test and "--group kind" in runs[build], runs
    env = job["steps"][test].get("env") or {}
    assert env.get("RAY_KUEUE_REQUIRE_BACKEND") == "1", "the kind job must fail, not skip, when kind cannot start"
    text = "\n".join(map(str, job["steps"]))
    assert not re.search(r"kind-action|releases/download|dl\.k8s\.io|KIND_VERSION|KUBECTL_VERSION", text), text


@pytest.mark.kind
def test_cached_builds_report_the_pinned_versions(tmp_path):
    """Where kind and kubectl are built (`--backend=kind`: the CI kind job builds them first;
    KindCluster.create checks kubectl again before it creates a cluster)."""
    tools.ensure("kind", "kubectl")  # cached: a no-op after `scripts/build-tools --group kind`
    plan = kind_plan(tmp_path)
    out = subprocess.run([str(plan.kind), "version"], capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.startswith(f"kind {versions.module('kind')[1]} "), out
    KindCluster(plan).check_kubectl()  # raises unless `kubectl version --client` says the pinned version
    assert plan.kubectl_version == versions.module("kubernetes")[1]


def test_the_kind_build_check_runs_only_with_the_kind_backend():
    """Deselected (never skipped) on the default path, which never builds kind or kubectl; the CI
    kind job selects it with --backend=kind."""
    args = ["-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "tests/static/test_kind_backend.py"]
    default = subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    kind = subprocess.run([sys.executable, *args, "--backend=kind"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    name = "test_cached_builds_report_the_pinned_versions"
    assert name not in default.stdout and "1 deselected" in default.stdout, default.stdout[-1500:]
    assert name in kind.stdout, kind.stdout[-1500:]


FAKE_KIND = """#!/bin/sh
echo "kind|$PWD|$KUBECONFIG|$*" >> "$FAKE_LOG"
"""
FAKE_KUBECTL = """#!/bin/sh
echo "kubectl|$PWD|$KUBECONFIG|$*" >> "$FAKE_LOG"
case "$*" in
  *--client*) echo '{"clientVersion": {"gitVersion": "v1.35.4"}}' ;;
  *version*) echo "{\\"serverVersion\\": {\\"gitVersion\\": \\"$FAKE_SERVER\\"}}" ;;
esac
"""


def _fake_cluster(monkeypatch, tmp_path, server: str) -> tuple[KindCluster, Path]:
    """A KindCluster whose plan runs stand-ins for kind and kubectl that log their calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("kind", FAKE_KIND), ("kubectl", FAKE_KUBECTL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_SERVER", server)
    monkeypatch.setattr(tools, "ensure", lambda *names: None)  # the real builds are not the point here
    plan = dataclasses.replace(kind_plan(tmp_path / "run", name="ray-kueue-1-test"),
                               kind=bin_dir / "kind", kubectl=bin_dir / "kubectl", kubectl_version="v1.35.4")
    return KindCluster(plan), log


def _calls(log: Path) -> list[tuple[str, str, str, str]]:
    return [tuple(line.split("|", 3)) for line in log.read_text().splitlines()]


def test_kind_cluster_runs_its_plan_in_the_work_directory(monkeypatch, tmp_path):
    cluster, log = _fake_cluster(monkeypatch, tmp_path, server="v1.35.8")
    cluster.create()
    cluster.delete()
    plan = cluster.plan
    calls = _calls(log)
    assert all(cwd == str(plan.workdir) for tool, cwd, _, _ in calls if tool == "kind"), calls
    assert all(kubeconfig == str(plan.kubeconfig) for _, _, kubeconfig, _ in calls), calls
    kind_args = [args for tool, _, _, args in calls if tool == "kind"]
    assert kind_args == [" ".join(plan.create_command()[1:]), " ".join(plan.delete_command()[1:])]


def test_kind_cluster_on_the_wrong_kubernetes_keeps_logs_and_deletes_itself(monkeypatch, tmp_path):
    cluster, log = _fake_cluster(monkeypatch, tmp_path, server="v1.25.3")  # what pytest-kind used to create
    with pytest.raises(KindError, match="runs Kubernetes v1.25.3, not v1.35.8"):
        cluster.create()
    kind_args = [args for tool, _, _, args in _calls(log) if tool == "kind"]
    assert kind_args == [" ".join(cmd[1:]) for cmd in (cluster.plan.create_command(), cluster.plan.export_logs_command(),
                                                        cluster.plan.delete_command())]
