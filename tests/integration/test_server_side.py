"""Every overlay and every cluster entry point against the real apiserver and Kueue webhooks:
server-side dry-run first (CEL rules and webhooks that offline schemas cannot run), then a real
server-side apply."""
from __future__ import annotations

import copy

import pytest
from kubernetes.dynamic.exceptions import ApiException

from harness.kube import apply_order
from harness.render import build_directory, render_repository
from harness.versions import REPO_ROOT

pytestmark = pytest.mark.integration

OVERLAYS = ["overlays/single-queue", "overlays/team-queues"]


def cluster_objects() -> dict[str, list[dict]]:
    """Per cluster, the queue layer exactly as Flux renders it (substitution included)."""
    _, clusters = render_repository(REPO_ROOT)
    out = {}
    for c in clusters:
        out[c.name] = [o for b in c.flux for o in b.objects if o.get("apiVersion", "").startswith(("kueue.x-k8s.io/", "v1"))]
    return out


@pytest.mark.parametrize("directory", OVERLAYS)
def test_overlay_passes_dry_run_then_applies(layout, kube, directory):
    objs = apply_order(build_directory(REPO_ROOT, directory))
    for o in objs:
        if o["kind"] == "Namespace":
            kube.apply(o)  # namespaced dry-runs need the namespace to exist
    for o in objs:
        kube.apply(o, dry_run=True)
    layout(directory)  # the real apply, with cleanup


@pytest.mark.parametrize("cluster", sorted(cluster_objects()))
def test_cluster_queue_layer_passes_dry_run(kube, cluster):
    objs = apply_order(cluster_objects()[cluster])
    assert any(o["kind"] == "ClusterQueue" for o in objs)
    for o in objs:
        if o["kind"] == "Namespace":
            kube.apply(o)
    for o in objs:
        kube.apply(o, dry_run=True)


def test_cel_rule_rejects_borrowing_without_cohort(kube):
    cq = copy.deepcopy(next(o for o in build_directory(REPO_ROOT, "overlays/team-queues") if o["kind"] == "ClusterQueue"))
    del cq["spec"]["cohortName"]
    with pytest.raises(ApiException) as rejected:
        kube.apply(cq, dry_run=True)
    assert rejected.value.status == 422
    assert "borrowingLimit" in str(rejected.value.body), rejected.value.body
