"""The local Flux entry point (clusters/local) and the local Git server it is served from."""
from __future__ import annotations

import pytest

from harness.gitops.gitserver import GitServer, WorkingCopy, git
from harness.gate.render import is_flux_kustomization, render_cluster
from harness.core.versions import REPO_ROOT

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
