"""A run on a shared cluster gets its own namespace and prefixed cluster-scoped Kueue names."""
from __future__ import annotations

import pytest

from harness.cluster import Names
from harness.gate import build_directory
from harness.core import REPO_ROOT

pytestmark = pytest.mark.static


def by_kind(objs, kind):
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def test_own_backends_use_the_repository_names():
    objs = build_directory(REPO_ROOT, "overlays/team-queues")
    assert [Names().localize(o) for o in objs] == objs


def test_shared_cluster_run_is_isolated():
    names = Names(namespace="ray-e2e-7", prefix="e2e-7-")
    objs = [names.localize(o) for o in build_directory(REPO_ROOT, "overlays/team-queues")]
    assert set(by_kind(objs, "Namespace")) == {"ray-e2e-7"}
    assert set(by_kind(objs, "ClusterQueue")) == {"e2e-7-team-a-cq", "e2e-7-team-b-cq"}
    assert set(by_kind(objs, "ResourceFlavor")) == {"e2e-7-default", "e2e-7-gpu"}
    assert set(by_kind(objs, "WorkloadPriorityClass")) == {"e2e-7-high", "e2e-7-low"}
    cq = by_kind(objs, "ClusterQueue")["e2e-7-team-a-cq"]["spec"]
    assert cq["cohortName"] == "e2e-7-shared-cohort"
    assert {f["name"] for g in cq["resourceGroups"] for f in g["flavors"]} == {"e2e-7-default", "e2e-7-gpu"}
    assert cq["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "ray-e2e-7"}}
    lq = by_kind(objs, "LocalQueue")["team-a"]
    assert lq["metadata"]["namespace"] == "ray-e2e-7" and lq["spec"]["clusterQueue"] == "e2e-7-team-a-cq"


def test_priority_label_follows_the_prefix():
    job = {"kind": "RayJob", "metadata": {"name": "j", "namespace": "ray", "labels": {"kueue.x-k8s.io/priority-class": "high"}}}
    out = Names("ray-e2e-7", "e2e-7-").localize(job)
    assert out["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "e2e-7-high"
    assert out["metadata"]["namespace"] == "ray-e2e-7"
