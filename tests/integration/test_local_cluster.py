"""The embedded local cluster itself: control plane, CRDs, Kueue webhooks, a RayJob admitted by
Kueue and picked up by KubeRay, and a teardown that leaves no process or port behind.

The tests run in file order against one cluster; the last one stops it.
"""
from __future__ import annotations

import json
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from harness.cluster import processes
from harness.toolchain import builds as tools
from harness.core import versions
from harness.cluster.local_cluster import LocalCluster, crd_documents
from harness.core.progress import say

pytestmark = pytest.mark.integration

NS = "local-cluster-smoke"
KUEUE = ("kueue.x-k8s.io", "v1beta2")
RAY = ("ray.io", "v1")
WAIT = 60


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
def custom(api):
    return client.CustomObjectsApi(api)


def cond(obj: dict | None, ctype: str) -> dict:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c.get("type") == ctype), {})


def wait_objects(custom: client.CustomObjectsApi, group_version: tuple[str, str], plural: str, predicate, describe: str,
                 namespace: str | None = None, timeout: float = WAIT):
    """List, then watch, until predicate(objects) is truthy; on timeout report the objects last seen."""
    group, version = group_version
    if namespace:
        lister = lambda **kw: custom.list_namespaced_custom_object(group, version, namespace, plural, **kw)  # noqa: E731
    else:
        lister = lambda **kw: custom.list_cluster_custom_object(group, version, plural, **kw)  # noqa: E731
    deadline = time.monotonic() + timeout
    while True:
        listing = lister()
        state = {o["metadata"]["name"]: o for o in listing["items"]}
        if (value := predicate(list(state.values()))):
            return value
        w = watch.Watch()
        try:
            for ev in w.stream(lister, resource_version=listing["metadata"]["resourceVersion"],
                               timeout_seconds=max(1, int(deadline - time.monotonic()))):
                obj = ev["object"]
                if ev["type"] == "DELETED":
                    state.pop(obj["metadata"]["name"], None)
                elif ev["type"] in ("ADDED", "MODIFIED"):
                    state[obj["metadata"]["name"]] = obj
                if (value := predicate(list(state.values()))):
                    return value
        except ApiException as err:
            if err.status != 410:
                raise
        finally:
            w.stop()
        if time.monotonic() >= deadline:
            seen = "\n".join(f"{n}: spec={o.get('spec')!s:.600} status={o.get('status')}" for n, o in state.items()) or "(none)"
            pytest.fail(f"timed out after {timeout}s waiting for {describe}; last {plural} seen:\n{seen}")


def test_api_answers(cluster, api):
    version = client.VersionApi(api).get_code()
    assert version.git_version == versions.module("kubernetes")[1]
    names = {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert {"default", "kube-system", "kueue-system"} <= names
    say("test", "local cluster start timings (s): " + ", ".join(f"{k}={v:.1f}" for k, v in cluster.timings.items()))


def test_crds_established(custom):
    expected = {c["metadata"]["name"] for c in crd_documents(tools.module_dir("kueue") / "config/components/crd/bases")}
    expected |= {c["metadata"]["name"] for c in crd_documents(tools.module_dir("kuberay") / "config/crd/bases")}
    assert len([n for n in expected if n.endswith(".kueue.x-k8s.io")]) == 11
    assert {"rayjobs.ray.io", "rayclusters.ray.io", "rayservices.ray.io"} <= expected
    # Plain dicts: client models for megabytes of CRD schema would take seconds to build.
    crds = {c["metadata"]["name"]: c for c in
            custom.list_cluster_custom_object("apiextensions.k8s.io", "v1", "customresourcedefinitions")["items"]}
    missing = expected - set(crds)
    assert not missing, f"CRDs not installed: {missing}"
    not_established = [n for n in expected if cond(crds[n], "Established").get("status") != "True"]
    assert not not_established, f"CRDs not Established: {not_established}"


def test_queue_objects_can_be_created(api, custom):
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    custom.create_cluster_custom_object(*KUEUE, "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "smoke-flavor"}})
    custom.create_cluster_custom_object(*KUEUE, "clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "smoke-cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{
                "name": "smoke-flavor",
                "resources": [{"name": "cpu", "nominalQuota": "4"}, {"name": "memory", "nominalQuota": "8Gi"}]}]}],
        }})
    custom.create_namespaced_custom_object(*KUEUE, NS, "localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "smoke-lq", "namespace": NS},
        "spec": {"clusterQueue": "smoke-cq"}})
    wait_objects(custom, KUEUE, "clusterqueues",
                 lambda cqs: any(c["metadata"]["name"] == "smoke-cq" and cond(c, "Active").get("status") == "True" for c in cqs),
                 "ClusterQueue smoke-cq Active=True")
    wait_objects(custom, KUEUE, "localqueues",
                 lambda lqs: any(q["metadata"]["name"] == "smoke-lq" and cond(q, "Active").get("status") == "True" for q in lqs),
                 "LocalQueue smoke-lq Active=True", namespace=NS)


def test_webhook_rejects_invalid_cluster_queue(custom):
    # A negative quota passes the CRD schema (quantity pattern) and is caught only by Kueue's webhook.
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "smoke-invalid"},
           "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{
               "name": "smoke-flavor", "resources": [{"name": "cpu", "nominalQuota": "-1"}]}]}]}}
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object(*KUEUE, "clusterqueues", bad)
    assert err.value.status in (400, 403, 422), err.value
    message = json.loads(err.value.body)["message"]
    assert message.startswith('admission webhook "vclusterqueue.kb.io" denied the request'), message
    assert "nominalQuota" in message, message


def rayjob(name: str, queue: str) -> dict:
    def pod(container: str) -> dict:
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.41.0",
                                         "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}]}}

    return {
        "apiVersion": "ray.io/v1", "kind": "RayJob",
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


def test_suspended_rayjob_is_admitted_and_gets_a_raycluster(api, custom):
    job = custom.create_namespaced_custom_object(*RAY, NS, "rayjobs", rayjob("smoke", "smoke-lq"))
    uid = job["metadata"]["uid"]
    owned = lambda objs: [o for o in objs if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])]  # noqa: E731

    wl = wait_objects(custom, KUEUE, "workloads",
                      lambda wls: next((w for w in owned(wls) if cond(w, "Admitted").get("status") == "True"), None),
                      "an admitted Workload owned by RayJob smoke", namespace=NS)
    assert wl["metadata"]["name"].startswith("rayjob-smoke-")
    assert wl["status"]["admission"]["clusterQueue"] == "smoke-cq"
    assert [ps["name"] for ps in wl["spec"]["podSets"]] == ["head", "workers", "submitter"]

    wait_objects(custom, RAY, "rayjobs",
                 lambda jobs: any(j["metadata"]["name"] == "smoke" and not j["spec"].get("suspend", False) for j in jobs),
                 "RayJob smoke unsuspended by Kueue", namespace=NS)
    rc = wait_objects(custom, RAY, "rayclusters", lambda rcs: next(iter(owned(rcs)), None),
                      "a RayCluster owned by RayJob smoke", namespace=NS)

    # Observations for the other tests (no kubelet: pods stay Pending). Logged, not asserted.
    time.sleep(2)
    job = custom.get_namespaced_custom_object(*RAY, NS, "rayjobs", "smoke")
    pods = client.CoreV1Api(api).list_namespaced_pod(NS).items
    say("test", f"Workload {wl['metadata']['name']} conditions: "
                + ", ".join(f"{c['type']}={c['status']}({c['reason']})" for c in wl["status"]["conditions"]))
    say("test", f"RayJob status: {({k: v for k, v in (job.get('status') or {}).items() if k != 'rayClusterStatus'})}")
    say("test", f"RayCluster {rc['metadata']['name']} status: {(custom.get_namespaced_custom_object(*RAY, NS, 'rayclusters', rc['metadata']['name']).get('status'))}")
    say("test", "pods: " + ", ".join(f"{p.metadata.name}={p.status.phase}" for p in pods))


def test_stop_leaves_no_process_or_port(cluster):
    started = cluster.all_processes()
    assert {p.name for p in started} == {"etcd", "kube-apiserver", "kube-controller-manager", "kuberay-operator", "kueue"}
    t0 = time.monotonic()
    cluster.stop()
    say("test", f"teardown took {time.monotonic() - t0:.1f}s")
    assert cluster.leftovers() == []
    assert not [p for p in processes.running() if p in started]
    cluster.stop()  # idempotent
