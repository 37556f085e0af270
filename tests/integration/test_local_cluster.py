"""The embedded local cluster itself: control plane, CRDs, Kueue webhooks, a RayJob admitted by
Kueue and picked up by KubeRay, and a teardown that leaves no process or port behind.

Each test stands on its own, in any order: the queue objects come from an idempotent fixture,
and the teardown test stops a cluster of its own.
"""
from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from harness import toolchain
from harness.cluster import LocalCluster, running
from harness.core import timeouts, versions
from harness.k8s import (CLUSTER_QUEUE, CRD, LOCAL_QUEUE, RAYCLUSTER, RAYJOB, WORKLOAD, Kube,
                         condition, crd_documents, is_true, list_objects, owned_by)
from harness.testing import minimal_queue

pytestmark = pytest.mark.integration

NS = "local-cluster-smoke"
COMPONENTS = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kuberay-operator", "kueue"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("local-cluster"))
    c.start()  # a failed start has already stopped whatever it started
    yield c
    c.stop()


@pytest.fixture(scope="module")
def api(cluster):
    a = cluster.api_client()
    yield a
    a.close()


@pytest.fixture(scope="module")
def smoke_kube(api) -> Kube:  # not `kube`: that name makes the integration conftest start its own cluster
    return Kube(api)


@pytest.fixture(scope="module")
def smoke_queue(smoke_kube):
    """Namespace, ResourceFlavor, ClusterQueue smoke-cq and LocalQueue smoke-lq, applied
    (idempotent, whichever test asks first) and Active; returns the Active ClusterQueue and LocalQueue."""
    for obj in minimal_queue("smoke", NS, "4", "8Gi"):
        smoke_kube.apply(obj)
    cq = smoke_kube.wait_for(*CLUSTER_QUEUE, lambda cqs: next((c for c in cqs if c["metadata"]["name"] == "smoke-cq"
                                                         and is_true(c, "Active")), None), "ClusterQueue smoke-cq Active=True")
    lq = smoke_kube.wait_for(*LOCAL_QUEUE, lambda lqs: next((q for q in lqs if q["metadata"]["name"] == "smoke-lq"
                                                       and is_true(q, "Active")), None), "LocalQueue smoke-lq Active=True", NS)
    return cq, lq


def test_api_answers(cluster, api):
    version = client.VersionApi(api).get_code()
    assert version.git_version == versions.module("kubernetes")[1]
    names = {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert {"default", "kube-system", "kueue-system"} <= names
    assert {"tools", "etcd-seed", "crds", "kueue-readyz", "operators", "start"} <= set(cluster.timings), cluster.timings
    assert all(v >= 0 for v in cluster.timings.values()), cluster.timings
    assert cluster.timings["start"] < cluster.start_timeout, cluster.timings


def test_crds_established(api):
    expected = {c["metadata"]["name"] for c in crd_documents(toolchain.module_dir("kueue") / "config/components/crd/bases")}
    expected |= {c["metadata"]["name"] for c in crd_documents(toolchain.module_dir("kuberay") / "config/crd/bases")}
    assert len([n for n in expected if n.endswith(".kueue.x-k8s.io")]) == 11
    assert {"rayjobs.ray.io", "rayclusters.ray.io", "rayservices.ray.io"} <= expected
    # Plain dicts: client models for megabytes of CRD schema would take seconds to build.
    crds = {c["metadata"]["name"]: c for c in list_objects(api, CRD)["items"]}
    missing = expected - set(crds)
    assert not missing, f"CRDs not installed: {missing}"
    not_established = [n for n in expected if not is_true(crds[n], "Established")]
    assert not not_established, f"CRDs not Established: {not_established}"


def test_queue_objects_can_be_created(smoke_queue):
    cq, lq = smoke_queue
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] == "smoke-flavor"
    assert lq["spec"]["clusterQueue"] == "smoke-cq" and lq["metadata"]["namespace"] == NS


def test_webhook_rejects_invalid_cluster_queue(api):
    # A negative quota passes the CRD schema (quantity pattern) and is caught only by Kueue's webhook.
    bad = {"apiVersion": CLUSTER_QUEUE.api_version, "kind": CLUSTER_QUEUE.kind, "metadata": {"name": "smoke-invalid"},
           "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{
               "name": "smoke-flavor", "resources": [{"name": "cpu", "nominalQuota": "-1"}]}]}]}}
    with pytest.raises(ApiException) as err:
        client.CustomObjectsApi(api).create_cluster_custom_object(CLUSTER_QUEUE.group, CLUSTER_QUEUE.version,
                                                                 CLUSTER_QUEUE.plural, bad)
    assert err.value.status in (400, 403, 422), err.value
    message = json.loads(err.value.body)["message"]
    assert message.startswith('admission webhook "vclusterqueue.kb.io" denied the request'), message
    assert "nominalQuota" in message, message


def rayjob(name: str, queue: str) -> dict:
    def pod(container: str) -> dict:
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.41.0",
                                         "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}]}}

    return {
        "apiVersion": RAYJOB.api_version, "kind": RAYJOB.kind,
        "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "suspend": True,
            "shutdownAfterJobFinishes": True,
            "entrypoint": "python -c 'print(1)'",
            "rayClusterSpec": {
                "rayVersion": "2.41.0",
                "headGroupSpec": {"rayStartParams": {}, "template": pod("ray-head")},
                "workerGroupSpecs": [{"groupName": "workers", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                                      "rayStartParams": {}, "template": pod("ray-worker")}],
            },
        },
    }


def test_suspended_rayjob_is_admitted_and_gets_a_raycluster(smoke_kube, smoke_queue):
    job = smoke_kube.create(rayjob("smoke", "smoke-lq"))
    uid = job["metadata"]["uid"]
    try:
        wl = smoke_kube.wait_for(*WORKLOAD, lambda wls: next((w for w in owned_by(wls, uid) if is_true(w, "Admitted")), None),
                           "an admitted Workload owned by RayJob smoke", NS)
        assert wl["metadata"]["name"].startswith("rayjob-smoke-")
        assert wl["status"]["admission"]["clusterQueue"] == "smoke-cq"
        assert [ps["name"] for ps in wl["spec"]["podSets"]] == ["head", "workers", "submitter"]
        assert is_true(wl, "QuotaReserved"), wl["status"]["conditions"]
        assert (condition(wl, "Admitted") or {}).get("reason") == "Admitted", wl["status"]["conditions"]

        smoke_kube.wait_for(*RAYJOB, lambda jobs: any(j["metadata"]["uid"] == uid and not j["spec"].get("suspend", False)
                                                for j in jobs), "RayJob smoke unsuspended by Kueue", NS)
        rc = smoke_kube.wait_for(*RAYCLUSTER, lambda rcs: next(iter(owned_by(rcs, uid)), None),
                           "a RayCluster owned by RayJob smoke", NS)
        # The RayCluster is the RayJob's, sized as the RayJob asked; without a kubelet its pods never run.
        assert rc["spec"]["workerGroupSpecs"][0]["replicas"] == 1
        assert rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["name"] == "ray-head"
        status = smoke_kube.wait_for(*RAYJOB, lambda jobs: next(((j.get("status") or {}) for j in jobs
                                                           if j["metadata"]["uid"] == uid
                                                           and (j.get("status") or {}).get("rayClusterName")), None),
                               "RayJob smoke reporting its RayCluster", NS)
        assert status["rayClusterName"] == rc["metadata"]["name"], status
        assert status.get("jobStatus") in (None, "", "PENDING"), status  # the job itself never starts
    finally:
        smoke_kube.delete(*RAYJOB, name="smoke", namespace=NS)
        smoke_kube.wait_for(*WORKLOAD, lambda wls: not owned_by(wls, uid) or None, "the Workload of RayJob smoke gone", NS)


def test_stop_leaves_no_process_or_port(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster").start()
    started = cluster.all_processes()
    try:
        assert {p.name for p in started} == COMPONENTS
        assert all(p.alive() for p in started)
    finally:
        t0 = time.monotonic()
        cluster.stop()
        took = time.monotonic() - t0
    assert took < len(started) * timeouts.PROCESS_STOP, f"teardown took {took:.1f}s: some component needed SIGKILL"
    assert cluster.leftovers() == []
    assert not [p for p in running() if p in started]
    cluster.stop()  # idempotent
    assert cluster.leftovers() == []
