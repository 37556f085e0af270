"""The local Flux entry point (clusters/local) and the local Git server it is served from."""
from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from harness.cluster import Process
from harness.gitops import FluxControllers, GitServer, WorkingCopy, git
from harness.gate import is_flux_kustomization, render_cluster
from harness.core import REPO_ROOT

pytestmark = pytest.mark.static


def test_local_entry_point_renders_every_layer_through_flux():
    """clusters/local/entry is no gate cluster (no Terraform pools), so its layers are rendered here,
    with the substitution sources of clusters/local, as kustomize-controller will render them."""
    cluster = render_cluster(REPO_ROOT, "local", "clusters/local/entry")
    assert not cluster.entry.error, cluster.entry.error
    layers = {b.flux_kustomization["metadata"]["name"]: b for b in cluster.flux}
    assert set(layers) == {o["metadata"]["name"] for o in cluster.entry.objects if is_flux_kustomization(o)}
    assert set(layers) == {"infra-controllers", "queues"}
    for name, build in layers.items():
        assert not build.error, f"Kustomization/{name}: {build.error}"
        assert not build.undefined, f"Kustomization/{name}: variables without a value: {build.undefined}"
    kinds = {(o["kind"], o["metadata"]["name"]) for o in layers["queues"].objects}
    assert {("ClusterQueue", "cluster-queue"), ("LocalQueue", "default")} <= kinds


def test_git_server_serves_what_was_pushed(tmp_path):
    """A push over smart HTTP lands in the bare repository, and a fresh clone gets that commit."""
    with GitServer(tmp_path / "srv", tmp_path / "logs") as server:
        server.create_repository("fleet")
        wc = WorkingCopy.clone(server.url("fleet"), tmp_path / "wc")
        sha = wc.seed(REPO_ROOT, ("clusters/local",))
        wc.write("clusters/local/queues/kustomization.yaml", "# changed\n")
        second = wc.commit_and_push("change the layout")
        assert second != sha
        other = WorkingCopy.clone(server.url("fleet"), tmp_path / "other")
        assert other.head() == second
        assert other.read("clusters/local/queues/kustomization.yaml") == "# changed\n"
        assert git("rev-list", "--count", "HEAD", cwd=other.path).strip() == "2"


def test_flux_controllers_alive_only_while_every_controller_runs(tmp_path):
    """alive() is True while both controllers run and False once one exits; dead() names the exited one."""
    controllers = FluxControllers(SimpleNamespace(log_dir=tmp_path / "logs"), tmp_path)
    assert controllers.alive() is False, "nothing started yet"
    sleep, true = shutil.which("sleep"), shutil.which("true")
    try:
        controllers.processes = [Process("source-controller", [sleep, "60"], tmp_path / "logs").start(),
                                 Process("kustomize-controller", [sleep, "60"], tmp_path / "logs").start()]
        assert controllers.alive() is True
        assert controllers.dead() == []
        controllers.processes[1].kill()
        assert controllers.alive() is False
        dead = controllers.dead()
        assert len(dead) == 1 and dead[0].startswith("kustomize-controller (exited"), dead
        controllers.processes.append(Process("exits-at-once", [true], tmp_path / "logs").start())
        controllers.processes[-1].popen.wait(10)
        assert [d.split(" ")[0] for d in controllers.dead()] == ["kustomize-controller", "exits-at-once"]
    finally:
        controllers.stop()
