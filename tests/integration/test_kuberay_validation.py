"""The gate's kuberay-validation rule (tools/fluxbuild: KubeRay's own RayJob validation at the
pinned version) against the real KubeRay operator: a sample RayJob the gate says KubeRay refuses
is marked jobDeploymentStatus ValidationFailed on the embedded control plane, and the unchanged
sample, which the gate passes, is not. Submitted without a queue label and suspended, so only
KubeRay acts on them."""
from __future__ import annotations

import pytest

from harness.gate import render_sample
from harness.gate.schema_check import validate
from harness.k8s import RAYJOB, Kube

pytestmark = pytest.mark.integration

CASES = [
    ("valid", lambda job: None, None),
    ("min-above-max", lambda job: job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(minReplicas=2, maxReplicas=1),
     "minReplicas 2 greater than maxReplicas 1"),
    ("negative-ttl", lambda job: job["spec"].update(ttlSecondsAfterFinished=-5), "TTLSecondsAfterFinished must be a non-negative integer"),
]


def _gate_verdict(obj: dict, refusal: str | None):
    """The gate's verdict on `obj`, asserted: accepted, or refused by kuberay-validation with `refusal` in its message."""
    (problem,) = validate([obj])
    if refusal is None:
        assert problem is None, problem
    else:
        assert problem is not None and problem.rule == "kuberay-validation", problem
        assert refusal in problem.errors[0]["message"], problem
    return problem


@pytest.mark.parametrize("case,change,refusal", CASES, ids=[c[0] for c in CASES])
def test_gate_and_kuberay_agree_on_what_kuberay_refuses(kube: Kube, names, create, case, change, refusal):
    job = render_sample("aurora-finetune", "none")
    job["metadata"].update(name=f"{names.prefix}kuberay-{case}", namespace=names.namespace)
    job["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")
    change(job)
    problem = _gate_verdict(job, refusal)
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    create([job])
    name = job["metadata"]["name"]

    def decided(jobs):
        status = next(((j.get("status") or {}).get("jobDeploymentStatus") for j in jobs if j["metadata"]["name"] == name), None)
        return status or None  # KubeRay has acted on it

    status = kube.wait_for(*RAYJOB, decided, f"KubeRay's verdict on RayJob {name}", names.namespace)
    assert (status == "ValidationFailed") == (refusal is not None), f"{case}: KubeRay says {status}, the gate says {problem}"


RAYCLUSTER_CASES = [
    ("valid", lambda spec: None, None),
    ("min-above-max", lambda spec: spec["workerGroupSpecs"][0].update(minReplicas=2, maxReplicas=1), "minReplicas 2 greater than maxReplicas 1"),
]


@pytest.mark.parametrize("case,change,refusal", RAYCLUSTER_CASES, ids=[c[0] for c in RAYCLUSTER_CASES])
def test_gate_and_kuberay_agree_on_what_kuberay_refuses_of_a_raycluster(kube: Kube, names, create, case, change, refusal):
    """A RayCluster a layer applies: the gate's verdict (KubeRay's RayCluster controller validation) against the real
    operator's, an InvalidRayClusterSpec event and no pods, or the head pod created."""
    spec = render_sample("aurora-finetune", "none")["spec"]["rayClusterSpec"]
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": f"{names.prefix}rc-{case}", "namespace": names.namespace},
               "spec": spec}
    change(spec)
    _gate_verdict(cluster, refusal)
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    create([cluster])
    name = cluster["metadata"]["name"]

    def refused(events):
        return next((e["reason"] for e in events if (e.get("involvedObject") or {}).get("name") == name
                     and e.get("reason") == "InvalidRayClusterSpec"), None)

    def head(pods):
        return next((p["metadata"]["name"] for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/cluster") == name), None)

    if refusal is None:
        assert kube.wait_for("v1", "Pod", head, f"KubeRay creating the head pod of RayCluster {name}", names.namespace)
    else:
        assert kube.wait_for("v1", "Event", refused, f"KubeRay's InvalidRayClusterSpec event for RayCluster {name}", names.namespace)
