"""Behaviour that differs between the Kueue / KubeRay versions this repository pins and rehearses
(harness.core.releases): each test states what every version does and checks the one running,
so a rehearsal (`make rehearse`, $RAY_KUEUE_VERSIONS) passes on each version for the right reason
instead of skipping. On the local backend the running version is versions.module(...)."""
from __future__ import annotations

from decimal import Decimal

import pytest
from kubernetes.dynamic.exceptions import DynamicApiError

from harness import toolchain
from harness.cluster import kueue_effective_config, production_kueue_config
from harness.core import parse_quantity, releases, versions
from harness.gate.workloads import pod_sets
from harness.k8s import CLUSTER_QUEUE, LOCAL_QUEUE, RAYJOB, WORKLOAD, Kube, condition, is_true, owned_by
from harness.testing import minimal_queue

pytestmark = pytest.mark.integration

NS = "release-differences"
KUEUE = versions.module("kueue")[1]
EMPTY = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}


def test_effective_configuration_follows_the_version(tmp_path):
    """The Configuration the production HelmRelease gives, as the running Kueue binary fills it in."""
    binary = toolchain.ensure("kueue")["kueue"].path()
    prod = kueue_effective_config(binary, production_kueue_config(), tmp_path / "prod")
    defaults = kueue_effective_config(binary, EMPTY, tmp_path / "empty")
    # The production workaround is applied by every version (kueue#10901).
    assert (prod.get("featureGates") or {}).get("FinishOrphanedWorkloads") is False, prod.get("featureGates")
    wait = prod.get("waitForPodsReady")
    if releases.has("kueue", "wait-for-pods-ready-default", KUEUE):
        # 0.19: on by default, 30 min, admission not blocked (kueue#11855).
        assert wait and wait.get("timeout") == "30m0s" and wait.get("blockAdmission") is False, wait
        assert wait.get("enable", True) is not False, wait
    else:
        assert not wait or wait.get("enable") is False, f"Kueue {KUEUE} enables waitForPodsReady unasked: {wait}"
    qps = (defaults["clientConnection"]["qps"], defaults["clientConnection"]["burst"])
    if releases.has("kueue", "client-qps-raised", KUEUE):
        assert qps[0] > 20 and qps[1] > 30, qps
    else:
        assert qps == (20, 30), qps


@pytest.fixture(scope="module")
def release_queue(kube: Kube):
    """One queue for the module's tests (each removes its own RayJob): a ClusterQueue deleted at one
    test's end and applied again at the next one's start may still be terminating, and Kueue then
    finds none ("ClusterQueue release-cq doesn't exist")."""
    for obj in minimal_queue("release", NS, "8", "16Gi"):
        kube.apply(obj)
    yield "release-lq"
    kube.delete(LOCAL_QUEUE.api_version, LOCAL_QUEUE.kind, "release-lq", NS)
    kube.delete(CLUSTER_QUEUE.api_version, CLUSTER_QUEUE.kind, "release-cq")


def _sidecar_rayjob(queue: str) -> dict:
    def pod(container: str) -> dict:
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.41.0",
                                         "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}

    return {"apiVersion": RAYJOB.api_version, "kind": RAYJOB.kind,
            "metadata": {"name": "sidecar", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"suspend": True, "shutdownAfterJobFinishes": True, "submissionMode": "SidecarMode",
                     "entrypoint": "python -c 'print(1)'",
                     "rayClusterSpec": {"rayVersion": "2.41.0", "headGroupSpec": {"rayStartParams": {}, "template": pod("ray-head")},
                                        "workerGroupSpecs": [{"groupName": "workers", "replicas": 1, "minReplicas": 1,
                                                              "maxReplicas": 1, "rayStartParams": {},
                                                              "template": pod("ray-worker")}]}}}


@pytest.fixture
def submitted(kube: Kube, release_queue):
    """submitted(name, **spec) creates the release queue's RayJob `name` (spec fields replaced) and
    returns its uid; every RayJob it created is deleted after the test, its Workload awaited gone."""
    made: list[tuple[str, str]] = []

    def submit(name: str, **spec) -> str:
        job = _sidecar_rayjob(release_queue)
        job["metadata"]["name"] = name
        job["spec"].update(spec)
        made.append((name, kube.create(job)["metadata"]["uid"]))
        return made[-1][1]

    yield submit
    for name, uid in made:
        kube.delete(RAYJOB.api_version, RAYJOB.kind, name, NS)
        kube.wait_for(*WORKLOAD, lambda wls, uid=uid: not owned_by(wls, uid) or None, f"the Workload of RayJob {name} gone", NS)


def _admitted(kube: Kube, uid: str) -> dict:
    """The RayJob's Workload once Kueue has reserved quota for it."""
    return kube.wait_for(*WORKLOAD, lambda wls: next((w for w in owned_by(wls, uid) if is_true(w, "QuotaReserved")), None),
                         "its Workload admitted (QuotaReserved)", NS)


def _requests(podset: dict) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for c in podset["template"]["spec"]["containers"]:
        for name, qty in ((c.get("resources") or {}).get("requests") or {}).items():
            total[name] = total.get(name, 0) + parse_quantity(qty)
    return total


def test_sidecar_submitter_accounting_follows_the_version(kube, release_queue, submitted):
    """SidecarMode: 0.18 counts the injected submitter (500m / 200Mi) on the head PodSet (kueue#12726),
    0.17 does not; the gate's accounting (harness.gate.workloads.pod_sets) says the same for the version."""
    uid = submitted("sidecar")
    wl = kube.wait_for(*WORKLOAD, lambda wls: next(iter(owned_by(wls, uid)), None), "the Workload of RayJob sidecar", NS)
    sets = {ps["name"]: ps for ps in wl["spec"]["podSets"]}
    assert "submitter" not in sets, list(sets)  # SidecarMode has no submitter Job
    head = _requests(sets["head"])
    counted = releases.has("kueue", "sidecar-submitter-counted", KUEUE)
    expected = {"cpu": parse_quantity("1500m" if counted else "1"), "memory": parse_quantity("1Gi") + (parse_quantity("200Mi") if counted else 0)}
    assert head == expected, f"Kueue {KUEUE} head PodSet requests {head}; expected {expected} (submitter counted: {counted})"
    gate = dict((name, req) for name, _, req in pod_sets(_sidecar_rayjob(release_queue), KUEUE))
    assert gate["head"] == head, f"the gate charges {gate['head']} for the head, Kueue {KUEUE} {head}"


def test_removing_the_queue_name_from_a_running_rayjob_follows_the_version(kube, release_queue, submitted):
    """Removing the kueue.x-k8s.io/queue-name label from an admitted (running) RayJob, which takes it
    out of Kueue's hands while it holds quota: from 0.19 Kueue's webhook validates that update and
    rejects it (the label is immutable while the job runs; ValidateRayAndSparkJobUpdates, kueue#14666);
    before, the webhook skipped every update of a RayJob without the label, and it was accepted."""
    uid = submitted("relabelled")
    kube.wait_for(*RAYJOB, lambda jobs: next((j for j in jobs if j["metadata"]["uid"] == uid and not j["spec"].get("suspend")), None),
                  "RayJob relabelled admitted (unsuspended by Kueue)", NS)
    try:
        kube.merge_patch(RAYJOB.api_version, RAYJOB.kind, "relabelled", NS, {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": None}}})
        refused = None
    except DynamicApiError as err:
        refused = err
    if releases.has("kueue", "queue-name-removal-rejected", KUEUE):
        assert refused is not None, f"Kueue {KUEUE} let the queue-name label go from a running RayJob"
        assert refused.status in (400, 403, 422) and "queue-name" in str(refused.body), refused.body
        labels = kube.get(RAYJOB.api_version, RAYJOB.kind, "relabelled", NS)["metadata"].get("labels") or {}
        assert labels.get("kueue.x-k8s.io/queue-name") == release_queue, labels
    else:
        assert refused is None, f"Kueue {KUEUE} refused the label's removal: {refused.body}"


def test_quota_of_a_rayjob_kuberay_refuses_follows_the_version(kube, submitted):
    """A running RayJob that KubeRay then refuses (an update gives its SidecarMode a submitterConfig,
    which Kueue's webhook accepts: jobDeploymentStatus ValidationFailed, the job can never run):
    Kueue 0.19 releases its quota (QuotaReserved=False, reason OnHold; kueue#14192); before, its
    Workload stays admitted and holds the quota."""
    uid = submitted("refused")
    _admitted(kube, uid)
    # KubeRay: "Currently, SidecarMode doesn't support SubmitterConfig"
    kube.merge_patch(RAYJOB.api_version, RAYJOB.kind, "refused", NS, {"spec": {"submitterConfig": {"backoffLimit": 1}}})
    kube.wait_for(*RAYJOB, lambda jobs: next((j for j in jobs if j["metadata"]["uid"] == uid and (j.get("status") or {}).get(
        "jobDeploymentStatus") == "ValidationFailed"), None), "RayJob refused: jobDeploymentStatus ValidationFailed", NS)

    def on_hold(w: dict) -> bool:
        reserved = condition(w, "QuotaReserved") or {}
        return reserved.get("status") == "False" and reserved.get("reason") == "OnHold"

    if releases.has("kueue", "validation-failed-releases-quota", KUEUE):
        kube.wait_for(*WORKLOAD, lambda wls: next((w for w in owned_by(wls, uid) if on_hold(w)), None),
                      "its Workload on hold (QuotaReserved=False, reason OnHold)", NS)
    else:
        wl = next(iter(owned_by(kube.list(*WORKLOAD, namespace=NS), uid)), None)
        assert wl is not None and is_true(wl, "QuotaReserved") and not is_true(wl, "Finished"), (
            f"Kueue {KUEUE} should keep the refused job's quota reserved: {wl and wl['status'].get('conditions')}")


def test_kueue_events_follow_the_version(kube, submitted):
    """Kueue records its events on a Workload through events.k8s.io/v1 from 0.18 (kueue#10971):
    they carry the `action` that API requires; before, through the core v1 recorder, without one."""
    wl_uid = _admitted(kube, submitted("events"))["metadata"]["uid"]
    events = kube.wait_for("events.k8s.io/v1", "Event", lambda evs: [e for e in evs if (e.get("regarding") or {}).get("uid") == wl_uid] or None,
                           "Kueue's events on the Workload", NS)
    how = sorted({(e.get("reason"), e.get("action") or "", e.get("reportingController") or "") for e in events})
    if releases.has("kueue", "events-v1", KUEUE):
        assert all(action and controller for _, action, controller in how), f"Kueue {KUEUE}: events without action: {how}"
    else:
        assert not any(action for _, action, _ in how), f"Kueue {KUEUE}: events with an action: {how}"
