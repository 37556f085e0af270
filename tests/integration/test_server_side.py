"""Every overlay and every cluster entry point against the real apiserver and Kueue webhooks:
server-side dry-run first (CEL rules and webhooks that offline schemas cannot run), then a real
server-side apply."""
from __future__ import annotations

import pytest
from kubernetes.dynamic.exceptions import ApiException

from harness.gate import schemas
from harness.k8s import apply_order, is_true
from harness.gate.render import build_directory, cluster_dirs, render_repository
from harness.gate.sources import parse_yaml_all
from harness.core import REPO_ROOT, timeouts

pytestmark = pytest.mark.integration

OVERLAYS = ["overlays/single-queue", "overlays/team-queues"]


FLUX_CRD_GROUPS = ("source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io")


@pytest.fixture(scope="module")
def flux_crds(kube, backend):
    """The pinned Flux CRDs, so a cluster's Flux objects (Kustomizations, OCIRepositories,
    HelmReleases) are checked by the apiserver too. The controllers themselves do not run here.
    A shared (existing) cluster keeps its own Flux CRDs; they only have to be there."""
    crd_names = []
    for path in schemas.crd_files():
        for crd in parse_yaml_all(path.read_text()):
            if crd and crd.get("spec", {}).get("group") in FLUX_CRD_GROUPS:
                if backend.name != "existing":
                    kube.apply(crd)
                crd_names.append(crd["metadata"]["name"])
    if backend.name == "existing":
        present = {c["metadata"]["name"] for c in kube.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")}
        missing = sorted(set(crd_names) - present)
        if missing:
            pytest.skip(f"the existing cluster has no Flux CRDs {', '.join(missing)}: its Flux objects cannot be dry-run there")
    kube.wait_for("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                  lambda items: all(any(i["metadata"]["name"] == n and is_true(i, "Established") for i in items) for n in crd_names) or None,
                  "Flux CRDs Established", None, timeouts.CRDS_ESTABLISHED)
    return crd_names


def cluster_objects(name: str) -> list[dict]:
    """Everything the cluster's Flux entry point applies, rendered as Flux renders it."""
    _, clusters = render_repository(REPO_ROOT)
    cluster = next(c for c in clusters if c.name == name)
    return [o for _, o in cluster.applied()]


@pytest.mark.parametrize("directory", OVERLAYS)
def test_overlay_passes_dry_run_then_applies(layout, kube, names, directory):
    objs = apply_order([names.localize(o) for o in build_directory(REPO_ROOT, directory)])
    for o in objs:
        if o["kind"] == "Namespace":
            kube.apply(o)  # namespaced dry-runs need the namespace to exist
    for o in objs:
        kube.apply(o, dry_run=True)
    layout(directory)  # the real apply, with cleanup


@pytest.mark.parametrize("cluster", [d.name for d in cluster_dirs(REPO_ROOT)])
def test_cluster_entry_point_passes_dry_run(kube, flux_crds, backend, names, cluster):
    objs = apply_order([names.localize(o) for o in cluster_objects(cluster)])
    kinds = {o["kind"] for o in objs}
    assert {"ClusterQueue", "LocalQueue", "Kustomization", "HelmRelease", "OCIRepository"} <= kinds, kinds
    # flux-system is created by `flux bootstrap` or the AKS Flux extension, not by this repository;
    # a shared cluster has it and the controller namespaces already, and gets only the run's own.
    shared = backend.name == "existing"
    if not shared:
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}})
    for o in objs:
        if o["kind"] == "Namespace" and (not shared or o["metadata"]["name"] == names.namespace):
            kube.apply(o)
    for o in objs:
        kube.apply(o, dry_run=True)


def test_cel_rule_rejects_borrowing_without_cohort(kube, names):
    cq = names.localize(next(o for o in build_directory(REPO_ROOT, "overlays/team-queues") if o["kind"] == "ClusterQueue"))
    del cq["spec"]["cohortName"]
    with pytest.raises(ApiException) as rejected:
        kube.apply(cq, dry_run=True)
    assert rejected.value.status == 422
    assert "borrowingLimit" in str(rejected.value.body), rejected.value.body
