"""The gate's pod-validation (tools/kubecheck: KubeRay's own pod builders, then the pinned apiserver's pod
validation, offline) against the real kube-apiserver: each pod KubeRay's builders make of a broken sample
is created with server-side dry-run on the embedded control plane, which must give the same verdict
(accepted, or rejected at the same pod field with the same message)."""
from __future__ import annotations

import copy
import json
import re

import pytest
from kubernetes.dynamic.exceptions import ApiException

from harness.core import REPO_ROOT
from harness.gate import workloads
from harness.gate.schema_check import kuberay_pods, validate
from harness.testing.dry_run import server_verdict

pytestmark = pytest.mark.integration


def _worker(job: dict) -> dict:
    return job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]


def _head(job: dict) -> dict:
    return job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]


def _set(path: list, value):
    def mutate(job: dict) -> None:
        node = job
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


def _gpu(requests: str, limits: str):
    def mutate(job: dict) -> None:
        resources = _worker(job)["containers"][0]["resources"]
        resources["requests"]["nvidia.com/gpu"], resources["limits"]["nvidia.com/gpu"] = requests, limits
    return mutate


def _submitter(container: dict):
    return _set(["spec", "submitterPodTemplate"], {"spec": {"restartPolicy": "Never", "containers": [container]}})


# (case, change to the aurora-finetune sample, rejected)
CASES = [
    ("clean", lambda job: None, False),
    ("gpu-fractional", _gpu("0.5", "0.5"), True),
    ("gpu-requests-below-limits", _gpu("1", "2"), True),
    ("worker-container-uppercase", lambda job: _worker(job)["containers"][0].update(name="Ray_Worker"), True),
    ("mount-of-no-volume", lambda job: _worker(job)["containers"][0]["volumeMounts"][0].update(name="script"), True),
    ("head-toleration-exists-with-value",
     lambda job: _head(job).update(tolerations=[{"key": "sku", "operator": "Exists", "value": "gpu"}]), True),
    ("node-selector-value-with-space", lambda job: _worker(job).update(nodeSelector={"agentpool": "gpu pool"}), True),
    ("env-value-and-value-from",
     lambda job: _worker(job)["containers"][0]["env"][0].update(valueFrom={"fieldRef": {"fieldPath": "metadata.name"}}), True),
    ("duplicate-port-names",
     lambda job: _worker(job)["containers"][0].update(ports=[{"containerPort": 8080, "name": "http"}, {"containerPort": 8081, "name": "http"}]),
     True),
    ("relative-mount-path", lambda job: _worker(job)["containers"][0]["volumeMounts"][0].update(mountPath="home/ray/scripts"), False),
    ("own-shared-memory-volume", lambda job: _worker(job)["volumes"].append({"name": "shared-mem", "emptyDir": {"medium": "Memory"}}), False),
    ("submitter-container-uppercase", _submitter({"name": "Submitter", "image": "rayproject/ray:2.52.0"}), True),
]


def _pod_field(field: str) -> str:
    """A field of the RayJob's template as the field of the pod made of it."""
    return re.sub(r"^.*?(?:\.template|submitterPodTemplate)\.", "", field)


@pytest.fixture(scope="module")
def pod_namespace(kube, names) -> str:
    """The run's namespace, with the ServiceAccount the sample's pods run as (its admission looks it up)."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    kube.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ray-workload", "namespace": names.namespace}})
    return names.namespace


@pytest.mark.parametrize("case,change,rejected", CASES, ids=[c[0] for c in CASES])
def test_offline_pod_verdict_matches_server_dry_run(kube, pod_namespace, case, change, rejected):
    job = copy.deepcopy(workloads.render("aurora-finetune", "team-a", root=REPO_ROOT))
    change(job)
    problem = validate([job])[0]
    offline = problem.errors if problem is not None and problem.stage == "pod" else ()
    assert problem is None or problem.stage == "pod", f"{case}: refused before its pods exist: {problem}"
    assert bool(offline) is rejected, f"{case}: offline {offline or 'accepted'}"
    pods = kuberay_pods([job])[0]
    assert {"head", "worker gpu-workers", "submitter"} <= set(pods), sorted(pods)
    answers = {}
    for role, pod in pods.items():
        pod = {"apiVersion": "v1", "kind": "Pod", **pod, "metadata": {**pod["metadata"], "namespace": pod_namespace}}
        answers[role] = server_verdict(kube, pod, strict=False)
    refused = {role: a for role, a in answers.items() if a is not None}
    assert bool(refused) is rejected, f"{case}: the server {'refused ' + str(refused) if refused else 'accepted every pod'}"
    server = " | ".join(refused.values())
    for err in offline:
        assert _pod_field(err["field"]) in server and err["detail"] in server, \
            f"{case}: offline error {err['message']!r} not in the server's answer: {server}"


# (case, the ResourceQuota's spec.hard in the sample's namespace, refused). aurora-finetune has one head,
# one worker with 1 GPU and the submitter, whose template sets no resources.
QUOTAS = [
    ("gpu-quota-0", {"requests.nvidia.com/gpu": "0"}, True),
    ("gpu-quota-1", {"requests.nvidia.com/gpu": "1"}, False),
    ("pods-quota-2", {"pods": "2"}, True),
    ("limits-cpu-tracked", {"limits.cpu": "1000"}, True),
    ("requests-memory-roomy", {"requests.memory": "1Ti", "requests.nvidia.com/gpu": "8"}, True),
]


@pytest.mark.parametrize("case,hard,refused", QUOTAS, ids=[c[0] for c in QUOTAS])
def test_offline_quota_verdict_matches_the_server(kube, names, case, hard, refused):
    """The pods are created for real, one after another, in a namespace of their own with the quota:
    the ResourceQuota admission (with the quota controller's status) forbids some iff the gate says so."""
    namespace = f"{names.namespace}-{case}"
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "ray-quota", "namespace": "ray"}, "spec": {"hard": hard}}
    job = workloads.render("aurora-finetune", "team-a", root=REPO_ROOT)
    problem = validate([job], [[quota]])[0]
    assert problem is None or problem.stage == "quota", f"{case}: refused before its pods are created: {problem}"
    assert (problem is not None) is refused, f"{case}: offline {problem}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        kube.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ray-workload", "namespace": namespace}})
        kube.apply({**quota, "metadata": {"name": "ray-quota", "namespace": namespace}})
        kube.wait_for("v1", "ResourceQuota", lambda qs: any((q.get("status") or {}).get("hard") for q in qs),
                      "the quota controller to set status.hard", namespace=namespace)
        forbidden = []
        for role, pod in kuberay_pods([job])[0].items():
            try:
                kube.create({"apiVersion": "v1", "kind": "Pod", **pod, "metadata": {**pod["metadata"], "namespace": namespace}})
            except ApiException as err:
                assert err.status == 403, f"{case}: {role}: {err.body}"
                forbidden.append(f"{role}: {json.loads(err.body).get('message')}")
        assert bool(forbidden) is refused, f"{case}: the server forbade {forbidden or 'no pod'}; offline: {problem}"
        if problem is not None:
            text = " ".join(e["message"] for e in problem.errors)
            for resource in hard:
                if resource in " ".join(forbidden):
                    assert resource in text, f"{case}: the server named {resource} ({forbidden}); offline: {text}"
    finally:
        kube.delete("v1", "Namespace", namespace)


PSA = "pod-security.kubernetes.io/"
# (case, the labels of the sample's namespace, change to the aurora-finetune sample, refused)
LEVELS = [
    ("restricted", {f"{PSA}enforce": "restricted"}, lambda job: None, True),
    ("restricted-pinned-version", {f"{PSA}enforce": "restricted", f"{PSA}enforce-version": "v1.30"}, lambda job: None, True),
    ("baseline", {f"{PSA}enforce": "baseline"}, lambda job: None, False),
    ("baseline-host-network", {f"{PSA}enforce": "baseline"}, lambda job: _worker(job).update(hostNetwork=True), True),
    ("warn-only", {f"{PSA}warn": "restricted"}, lambda job: None, False),
]


@pytest.mark.parametrize("case,labels,change,refused", LEVELS, ids=[c[0] for c in LEVELS])
def test_offline_pod_security_verdict_matches_the_server(kube, names, case, labels, change, refused):
    """The PodSecurity admission (the namespace's enforce level): the server forbids exactly the pods the gate says,
    with the same words."""
    namespace = f"{names.namespace}-psa-{case}"
    job = copy.deepcopy(workloads.render("aurora-finetune", "team-a", root=REPO_ROOT))
    change(job)
    problem = validate([job], [[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ray", "labels": labels}}]])[0]
    assert problem is None or problem.stage == "security", f"{case}: refused before its namespace's level is met: {problem}"
    assert (problem is not None) is refused, f"{case}: offline {problem}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}})
    try:
        kube.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ray-workload", "namespace": namespace}})
        server = set()
        for pod in kuberay_pods([job])[0].values():
            verdict = server_verdict(kube, {"apiVersion": "v1", "kind": "Pod", **pod, "metadata": {**pod["metadata"], "namespace": namespace}}, strict=False)
            if verdict is not None:
                assert "is forbidden: " in verdict, f"{case}: not the admission's refusal: {verdict}"
                server.add(verdict.split("is forbidden: ", 1)[1])
        offline = {e["message"] for e in problem.errors} if problem else set()
        assert offline == server, f"{case}: offline {offline}; server {server}"
    finally:
        kube.delete("v1", "Namespace", namespace)


def _submitter_config(**config):
    return _set(["spec", "submitterConfig"], config)


# (case, change to the aurora-finetune sample, rejected): what the apiserver's Job validation refuses of the submitter Job
# KubeRay's RayJob controller creates once the cluster is up, and the pod check of its pod cannot see.
SUBMITTER_JOBS = [
    ("clean", lambda job: None, False),
    ("template-restart-always", _set(["spec", "submitterPodTemplate"], {"spec": {"restartPolicy": "Always", "containers": [
        {"name": "ray-job-submitter", "image": "rayproject/ray:2.52.0"}]}}), True),
    ("template-restart-on-failure", _set(["spec", "submitterPodTemplate"], {"spec": {"restartPolicy": "OnFailure", "containers": [
        {"name": "ray-job-submitter", "image": "rayproject/ray:2.52.0"}]}}), False),
    ("backoff-limit-negative", _submitter_config(backoffLimit=-1), True),
    ("backoff-limit-zero", _submitter_config(backoffLimit=0), False),
]


@pytest.mark.parametrize("case,change,rejected", SUBMITTER_JOBS, ids=[c[0] for c in SUBMITTER_JOBS])
def test_offline_submitter_job_verdict_matches_server_dry_run(kube, pod_namespace, case, change, rejected):
    """The submitter Job kubecheck builds as KubeRay's controller does, created with server-side dry-run: the same
    verdict as the gate's, at the same Job field (reported at the RayJob's submitterPodTemplate or submitterConfig)."""
    job = copy.deepcopy(workloads.render("aurora-finetune", "team-a", root=REPO_ROOT))
    change(job)
    problem = validate([job])[0]
    offline = [e for e in (problem.errors if problem is not None else ()) if "the submitter Job KubeRay creates" in e["message"]]
    assert problem is None or offline, f"{case}: refused for another reason: {problem}"
    assert bool(offline) is rejected, f"{case}: offline {offline or 'accepted'}"
    ((_, submitter),) = kuberay_pods([job], submitter_job=True)
    assert submitter is not None and submitter["kind"] == "Job", submitter
    server = server_verdict(kube, {**submitter, "metadata": {**submitter["metadata"], "namespace": pod_namespace}}, strict=False)
    assert (server is not None) is rejected, f"{case}: the server {'refused: ' + server if server else 'accepted the Job'}"
    for err in offline:
        field = err["field"].replace("spec.submitterPodTemplate.", "spec.template.").replace("spec.submitterConfig.", "spec.")
        assert field in server and err["detail"] in server, f"{case}: offline error {err['message']!r} not in the server's answer: {server}"


# (case, the LimitRange's one limit in the sample's namespace, refused): the LimitRanger's validating admission, which
# judges every container, KubeRay's own included (its wait-gcs-ready init container requests 256Mi).
LIMITS = [
    ("memory-floor-above-kuberays-init-container",
     {"type": "Container", "min": {"memory": "512Mi"}, "default": {"memory": "1Gi"}, "defaultRequest": {"memory": "1Gi"}}, True),
    ("cpu-limit-to-request-ratio", {"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"},
                                    "maxLimitRequestRatio": {"cpu": "1"}}, True),
    ("max-is-the-default-limit", {"type": "Container", "max": {"memory": "1Ti", "cpu": "200"}}, False),  # stored with default = max
    ("max-with-default-limits", {"type": "Container", "max": {"memory": "1Ti", "cpu": "200"},
                                 "default": {"memory": "1Gi", "cpu": "1"}}, False),
]


@pytest.mark.parametrize("case,limit,refused", LIMITS, ids=[c[0] for c in LIMITS])
def test_offline_limit_range_verdict_matches_server_dry_run(kube, names, case, limit, refused):
    """Each pod KubeRay's builders make, created with server-side dry-run in a namespace with the LimitRange: the
    LimitRanger refuses one iff the gate does."""
    namespace = f"{names.namespace}-lr-{LIMITS.index((case, limit, refused))}"
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits", "namespace": "ray"}, "spec": {"limits": [limit]}}
    job = workloads.render("aurora-finetune", "team-a", root=REPO_ROOT)
    problem = validate([job], [[lr]])[0]
    offline = [e for e in (problem.errors if problem is not None else ()) if "LimitRange" in e["message"]]
    assert bool(offline) is refused, f"{case}: offline {problem or 'accepted'}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:  # the namespace goes with its ServiceAccount: later tests wait until no ServiceAccount of that name is left
        kube.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ray-workload", "namespace": namespace}})
        kube.apply({**lr, "metadata": {"name": "limits", "namespace": namespace}})
        answers = {role: server_verdict(kube, {"apiVersion": "v1", "kind": "Pod", **pod, "metadata": {**pod["metadata"], "namespace": namespace}},
                                        strict=False)
                   for role, pod in kuberay_pods([job])[0].items()}
    finally:
        kube.delete("v1", "Namespace", namespace)
    forbidden = {role: a for role, a in answers.items() if a is not None}
    assert bool(forbidden) is refused, f"{case}: the server forbade {forbidden or 'no pod'}; offline: {offline}"
    for err in offline:
        said = err["message"].split(": ", 2)[-1].split(" (a container KubeRay adds")[0]
        assert any(said in a for a in forbidden.values()), f"{case}: offline {said!r} not in the server's answers {forbidden}"
