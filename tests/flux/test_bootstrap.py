"""The first reconcile of clusters/local by the real Flux controllers, and the offline rendering
of the static gate compared with what kustomize-controller applied, object by object."""
from __future__ import annotations

import pytest

from harness.gitops import FLUX_LABELS, KUSTOMIZATION, NAMESPACE, ROOT, inventory_id, managed_paths, rendered_paths, value_at
from harness.k8s import CLUSTER_QUEUE, LOCAL_QUEUE, PRIORITY_CLASS, RESOURCE_FLAVOR, is_true
from harness.gate import render_cluster
from harness.core import REPO_ROOT

pytestmark = pytest.mark.flux

QUEUE_KINDS = (RESOURCE_FLAVOR, CLUSTER_QUEUE, LOCAL_QUEUE, PRIORITY_CLASS)
LAYERS = ("infra-controllers", "queues")


@pytest.fixture(scope="module")
def rendered():
    """The static gate's rendering of clusters/local (postBuild substitution included)."""
    cluster = render_cluster(REPO_ROOT, "local", "clusters/local/entry")
    layers = {b.flux_kustomization["metadata"]["name"]: b for b in cluster.flux}
    for name, build in layers.items():
        assert not build.error, f"Kustomization/{name} does not render offline: {build.error}"
    return layers


def _became_ready(run, name: str) -> float:
    ev = run.timeline.first(lambda e: e.kind == "Kustomization" and e.name == name and is_true(e.obj, "Ready"))
    assert ev, f"Kustomization/{name} never seen Ready; timeline errors: {run.timeline.errors}"
    return ev.at


def test_first_reconcile_follows_the_dependency_order(run):
    """flux-system applies both layers; queues waits for infra-controllers (dependsOn) and not one
    queue object exists before infra-controllers is Ready (its CRD health checks passed)."""
    root, infra, queues = (_became_ready(run, n) for n in (ROOT, *LAYERS))
    assert root <= queues and infra < queues, f"Ready at flux-system +{root:.2f}, infra +{infra:.2f}, queues +{queues:.2f}"
    kueue_objects = run.timeline.events(lambda e: e.kind in ("ClusterQueue", "LocalQueue", "ResourceFlavor"))
    assert kueue_objects, "no Kueue object was ever seen"
    early = [f"{e.kind}/{e.name} {e.type} {infra - e.at:.2f}s before" for e in kueue_objects if e.at < infra]
    assert not early, f"queue objects existed before infra-controllers was Ready: {early}"
    ns = run.timeline.first(lambda e: e.kind == "Namespace" and e.name == "ray")
    assert ns and ns.at > infra, "namespace ray (queue layer) was created before its dependency was Ready"
    for ks in run.fleet.kustomizations():
        assert is_true(ks, "Ready"), f"Kustomization/{ks['metadata']['name']} not Ready: {ks.get('status')}"


def test_flux_controllers_are_alive(run):
    controllers = run.fleet.controllers
    assert {p.name for p in controllers.processes} == {"source-controller", "kustomize-controller"}
    assert controllers.alive() is True, controllers.dead()
    assert controllers.dead() == []


def test_cluster_has_exactly_the_overlays_queues(run, rendered):
    """The cluster's flavors, queues and priority classes are exactly the single-queue layout
    (clusters/local/queues), with the rendered specs, and Kueue reports every queue Active."""
    kube = run.kube
    want = {(o["kind"], o["metadata"]["name"]): o for o in rendered["queues"].objects
            if o["kind"] in {t.kind for t in QUEUE_KINDS}}
    assert {("ClusterQueue", "cluster-queue"), ("LocalQueue", "default")} <= set(want)
    live = {}
    for rtype in QUEUE_KINDS:
        for o in kube.list(*rtype):
            live[(rtype.kind, o["metadata"]["name"])] = o
    assert set(live) == set(want), f"missing {sorted(set(want) - set(live))}, unexpected {sorted(set(live) - set(want))}"
    for key, obj in want.items():
        for path in rendered_paths(obj):
            if path[0] == "spec":
                assert value_at(live[key], path) == value_at(obj, path), f"{key[0]}/{key[1]} {'.'.join(path)}"
        if key[0] in ("ClusterQueue", "LocalQueue"):
            assert is_true(live[key], "Active"), f"{key[0]}/{key[1]} not Active: {live[key].get('status')}"


def test_offline_rendering_equals_what_kustomize_controller_applied(run, rendered):
    """Object by object: the inventory of each layer is the rendered set, every field the static
    gate rendered is the value kustomize-controller applied, and it applied no other field
    (besides its own ownership labels): the offline gate checks what reaches the cluster."""
    kube = run.kube
    for name in LAYERS:
        ks = kube.get(*KUSTOMIZATION, name=name, namespace=NAMESPACE)
        objs = rendered[name].objects
        inventory = {e["id"] for e in ((ks.get("status") or {}).get("inventory") or {}).get("entries") or []}
        assert inventory == {inventory_id(o) for o in objs}, f"Kustomization/{name}: inventory differs from the rendering"
        for obj in objs:
            meta = obj["metadata"]
            live = kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            where = f"Kustomization/{name}: {obj['kind']}/{meta['name']}"
            assert live, f"{where} rendered but not on the cluster"
            want = rendered_paths(obj) | {("metadata", "labels", label) for label in FLUX_LABELS}
            applied = managed_paths(live)
            # Atomic maps (ResourceFlavor nodeLabels) are owned whole: a rendered key inside one
            # counts as that map (the values are compared below).
            want = {next((p[:i] for i in range(1, len(p)) if p[:i] in applied), p) for p in want}
            # A map owned with no children was an empty map in the apply (kustomize-controller
            # sends Namespace `spec: {}`, which the offline rendering omits): it sets nothing.
            got = {p for p in applied if p in want or not isinstance(value_at(live, p), dict)}
            assert got == want, f"{where}: applied but not rendered {sorted(got - want)}; rendered but not applied {sorted(want - got)}"
            for path in rendered_paths(obj):
                assert value_at(live, path) == value_at(obj, path), f"{where} {'.'.join(path)}: applied {value_at(live, path)!r}, rendered {value_at(obj, path)!r}"
            assert live["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == name
