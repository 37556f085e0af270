"""The gate's offline validation (tools/fluxbuild: the apiserver's and Kueue's own code) against
server-side dry-run on the embedded control plane: for every broken variant of
tests/static/test_gate_apiserver.py, each object the change touches gets the same verdict from
both (accepted, or rejected at the same field paths with the same messages)."""
from __future__ import annotations

import json
import time

import pytest

from harness.gate import render_repository
from harness.gate.schema_check import validate
from harness.testing import copy_config
from harness.testing.dry_run import server_verdict
from tests.static.test_gate_apiserver import CASES

pytestmark = pytest.mark.integration

# Flux kinds need the Flux CRDs (tests/integration/test_server_side.py installs them); the
# cases here change Kueue objects, which the local cluster serves with Kueue's webhooks running.
CHECKED_GROUPS = ("kueue.x-k8s.io", "ray.io")


def _objects(root) -> list[dict]:
    builds, clusters = render_repository(root)
    objs = [o for b in builds for o in b.objects] + [o for c in clusters for b in c.flux for o in b.objects]
    return [o for o in objs if str(o.get("apiVersion", "")).split("/")[0] in CHECKED_GROUPS]


def _key(obj: dict) -> str:
    return json.dumps(obj, sort_keys=True)


@pytest.fixture(scope="module")
def clean_objects(tmp_path_factory) -> set[str]:
    return {_key(o) for o in _objects(copy_config(tmp_path_factory.mktemp("clean") / "repo"))}


@pytest.mark.parametrize("case,rule,file,line,text,mutate", CASES, ids=[c[0] for c in CASES])
def test_offline_verdict_matches_server_dry_run(tmp_path, kube, names, clean_objects, case, rule, file, line, text, mutate):
    root = copy_config(tmp_path / "repo")
    mutate(root)
    changed = [o for o in _objects(root) if _key(o) not in clean_objects]
    assert changed, f"{case}: the mutation changed no Kueue or Ray object"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    compared = 0
    for obj, problem in zip(changed, validate(changed)):
        local = names.localize(obj)  # this run's names; the field paths do not change
        server = server_verdict(kube, local)
        where = f"{case}: {obj['kind']}/{obj['metadata'].get('name')}"
        if problem is None:
            assert server is None, f"{where}: accepted offline, rejected by the server: {server}"
            continue
        assert server is not None, f"{where}: rejected offline ({problem.stage}: {problem.errors}), accepted by the server"
        for err in problem.errors:
            assert err["field"] in server and err["detail"] in server, \
                f"{where}: offline {problem.stage} error {err['message']!r} not in the server's answer: {server}"
        compared += 1
    assert compared, f"{case}: no object was rejected offline"


# Built-in kinds: what the apiserver's validation refuses beyond the OpenAPI schema: metadata, a
# ConfigMap's or Secret's keys (tools/fluxbuild builtinmeta.go, apimachinery's own functions), and the
# spec, by the apiserver's REST strategy of the kind (tools/kubecheck). (case, object, rejected)
BUILTIN = [
    ("namespace-uppercase", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Parity-Ray"}}, True),
    ("namespace-64-characters", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "p" * 64}}, True),
    ("namespace-dotted", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "parity.ray"}}, True),
    # The PodSecurity admission's check of a Namespace's level labels.
    ("namespace-pod-security-level-unknown", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "parity-psa-strict", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}}, True),
    ("namespace-pod-security-version-bad", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "parity-psa-version", "labels": {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "1.30"}}}, True),
    ("namespace-pod-security-restricted", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "parity-psa-ok", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}, False),
    ("configmap-dotted-name", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "parity.ray"}, "data": {"a": "b"}}, False),
    ("label-with-space", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p", "labels": {"team": "ML Platform"}}}, True),
    ("label-key-64-characters", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p", "labels": {"k" * 64: "v"}}}, True),
    ("annotation-key-with-space", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p", "annotations": {"a key": "v"}}}, True),
    ("configmap-key-with-space", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}, "data": {"a key": "v"}}, True),
    ("secret-key-with-slash", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "p"}, "data": {"a/b": "dg=="}}, True),
    ("service-name-starts-with-digit", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc"},
                                        "spec": {"ports": [{"port": 80}]}}, True),
    ("role-name-with-colon", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "parity:reader"},
                              "rules": []}, False),
    ("service-account-dotted", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "parity.sa"}}, False),
    # Beyond the metadata: the spec, by the REST strategy of the kind (tools/kubecheck).
    ("limit-range-min-above-max", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "p"},
                                   "spec": {"limits": [{"type": "Container", "min": {"cpu": "4"}, "max": {"cpu": "2"}}]}}, True),
    ("limit-range-within", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "p"},
                            "spec": {"limits": [{"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}}]}}, False),
    ("priority-class-above-1e9", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "parity-high"},
                                  "value": 2000000000}, True),
    ("configmap-key-in-data-and-binary-data", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"},
                                               "data": {"a": "x"}, "binaryData": {"a": "eA=="}}, True),
    ("resource-quota-negative", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "p"},
                                 "spec": {"hard": {"requests.nvidia.com/gpu": "-1"}}}, True),
    ("daemonset-selector-misses-labels", {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "p"},
                                          "spec": {"selector": {"matchLabels": {"app": "p"}},
                                                   "template": {"metadata": {"labels": {"app": "q"}},
                                                                "spec": {"containers": [{"name": "p", "image": "busybox"}]}}}}, True),
    ("network-policy-port-70000", {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "p"},
                                   "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 70000}]}]}}, True),
    ("job-restart-always", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "p"},
                            "spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "p", "image": "busybox"}]}}}}, True),
    # What only the apiserver's decoding refuses (the OpenAPI schema has no pattern for a quantity); its message names no field.
    ("deployment-quantity-unparsable", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p"},
                                        "spec": {"selector": {"matchLabels": {"app": "p"}}, "template": {"metadata": {"labels": {"app": "p"}},
                                                 "spec": {"containers": [{"name": "p", "image": "busybox", "resources": {"limits": {"cpu": "2 cores"}}}]}}}},
     True),
    ("limit-range-quantity-unparsable", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "p"},
                                         "spec": {"limits": [{"type": "Container", "default": {"memory": "4 GiB"}}]}}, True),
]


@pytest.mark.parametrize("case,obj,rejected", BUILTIN, ids=[c[0] for c in BUILTIN])
def test_builtin_metadata_verdict_matches_server_dry_run(kube, names, case, obj, rejected):
    if obj["kind"] != "Namespace":
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
        obj = {**obj, "metadata": {**obj["metadata"], "namespace": names.namespace}}
    server = server_verdict(kube, obj)
    assert (server is not None) == rejected, f"{case}: the server {'rejected' if server else 'accepted'} it: {server}"
    problem = validate([obj])[0]
    if problem is None:
        assert server is None, f"{case}: accepted offline, rejected by the server: {server}"
        return
    assert problem.rule == "api-validation" and server is not None, f"{case}: offline {problem}, server accepted it"
    for err in problem.errors:  # a label or annotation is named offline by its key, the server names the whole map
        field = err["field"].split("[")[0] if err["field"].startswith(("metadata.labels[", "metadata.annotations[")) else err["field"]
        field = "" if "cannot be handled as" in err["detail"] else field  # a decoding refusal: offline locates the value, the server names none
        assert field in server and err["detail"] in server, f"{case}: offline {err['message']!r} not in the server's answer: {server}"


def _pool_node(name: str, labels: dict, taints: list) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}}


# The apiserver's part of capacity-node-settings (tools/kubecheck op node-pools, ValidateNode): a pool's Node created for
# real; the kubelet's --node-labels rule is the kubelet's, not the apiserver's, so it is left out here.
NODE_POOLS = [
    ("taint-effect-typo", _pool_node("parity-pool-a", {}, [{"key": "sku", "value": "gpu", "effect": "NoSchedul"}]), True),
    ("label-value-with-space", _pool_node("parity-pool-b", {"gpu": "A100 80GB"}, []), True),
    ("taint-key-with-space", _pool_node("parity-pool-c", {}, [{"key": "gpu sku", "value": "a100", "effect": "NoSchedule"}]), True),
    ("tainted-and-labelled", _pool_node("parity-pool-d", {"team": "ml", "node.kubernetes.io/gpu-class": "a100"},
                                        [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]), False),
]


@pytest.mark.parametrize("case,node,rejected", NODE_POOLS, ids=[c[0] for c in NODE_POOLS])
def test_node_pool_verdict_matches_server_dry_run(kube, case, node, rejected):
    from harness.gate.helper import helper
    from harness.gate.node_settings import NodeSettingsError

    server = server_verdict(kube, node)
    assert (server is not None) == rejected, f"{case}: the server {'rejected' if server else 'accepted'} it: {server}"
    offline = helper("kubecheck").call("node-pools", NodeSettingsError, objects=[node])[0]["errors"]
    assert bool(offline) == rejected, f"{case}: offline {offline}"
    for err in offline:
        assert err["detail"] in server, f"{case}: offline {err['message']!r} not in the server's answer: {server}"


def test_a_second_default_priority_class_is_refused_as_the_gate_says(kube, names):
    """priority-class-default: with one PriorityClass marked globalDefault on the cluster, the apiserver's Priority
    admission refuses another (value 0: nothing else on the cluster is moved while the first exists)."""
    first, second = (names.priority(n) for n in ("parity-default-a", "parity-default-b"))
    kube.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": first}, "value": 0, "globalDefault": True})
    try:
        deadline, server = time.monotonic() + 10, None
        while server is None and time.monotonic() < deadline:  # the plugin reads PriorityClasses from its informer's cache
            server = server_verdict(kube, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": second},
                                            "value": 0, "globalDefault": True})
            time.sleep(0.2)
        assert server is not None and "already marked as default" in server, server
    finally:
        kube.delete("scheduling.k8s.io/v1", "PriorityClass", first)
