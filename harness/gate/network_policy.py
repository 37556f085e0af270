"""The cluster's NetworkPolicies against the traffic the Ray pods of each sample and each Ray object a layer applies need.

terraform/aks.tf enforces NetworkPolicies (Cilium). A policy that selects the Ray pods and lets through neither the
pods of their own RayCluster nor the KubeRay operator (a default-deny ingress in the namespace, the usual first
hardening step), or a default-deny egress that leaves out the cluster DNS, changes nothing Kueue looks at: it admits the job, KubeRay's wait-gcs-ready init container on every
worker then waits for the head's GCS port forever, the operator and the submitter never reach the head's dashboard,
and the job holds its quota without running.

tools/kubecheck op `network` (netpol.go) builds the pods with KubeRay's own builders and judges each connection, at
both ends (ingress, egress), with cyclonus' NetworkPolicy simulator on the policies and Namespaces of the cluster's
rendered set. The KubeRay operator's pod is described as the cluster's KubeRay HelmRelease installs it: its namespace
(helm_values.release_of) and the pod labels of the chart's deployment.yaml at 1.6.x with the release's values
(nameOverride, componentOverride, labels); the chart itself is in no module the proxy serves, so it is not rendered
(helm_values). Without a KubeRay HelmRelease the operator's traffic is not judged.

One finding per set of policies that drop traffic (and direction) on a cluster, at the first policy's podSelector,
naming the Ray objects and the traffic refused.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.core import versions
from harness.gate.cluster_index import ClusterIndex, finding_at
from harness.gate.findings import Finding
from harness.gate.helm_values import release_of
from harness.gate.helper import submit_kept
from harness.gate.schema_check import CheckError, is_ray_workload
from harness.gate.sources import as_map, resource_id

RULES = {
    "ray-network-policy": "the cluster's NetworkPolicies (cyclonus' NetworkPolicy simulator, tools/kubecheck) let through, at both "
                          "ends, the traffic the pods KubeRay would create for a sample or a Ray object a layer applies need: each "
                          "worker to the head's GCS port, every pod of the RayCluster to the others on the ports KubeRay declares "
                          "on their Ray container and Ray's first worker port (min-worker-port, 10002), and to the head's dashboard "
                          "port the KubeRay operator's pod (RayJob, RayService; as its HelmRelease installs it) and a RayJob's "
                          "submitter pod, and every Ray pod to the cluster DNS (CoreDNS in kube-system, UDP 53), by which the "
                          "workers find the head's GCS; else Kueue admits the job, its workers wait for the GCS forever and it holds "
                          "its quota without running",
}
OPERATOR_CHART = "kuberay-operator"  # .Chart.Name of KubeRay's chart (the default of its name and component labels)


def operator_pod(index: ClusterIndex) -> dict | None:
    """The KubeRay operator's pod as the cluster's KubeRay HelmRelease installs it (namespace and labels only), or None."""
    for _, hr in index.of_kind("HelmRelease"):
        if index.chart_of(hr) != versions.entry("kuberay")["chart"]:
            continue
        values = as_map(as_map(hr.get("spec")).get("values"))
        release, namespace = release_of(hr)

        def label(value) -> str:  # the chart's helpers: default .Chart.Name X | trunc 63 | trimSuffix "-"
            return str(value or OPERATOR_CHART)[:63].removesuffix("-")

        labels = {"app.kubernetes.io/name": label(values.get("nameOverride")), "app.kubernetes.io/instance": release,
                  "app.kubernetes.io/component": label(values.get("componentOverride")),
                  **{str(k): str(v) for k, v in as_map(values.get("labels")).items()}}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": OPERATOR_CHART, "namespace": namespace, "labels": labels}}
    return None


def network_rules(ctx, root: Path, cluster, samples: list) -> Callable[[], list[Finding]]:
    """ray-network-policy on `cluster` for `samples` ((name, object, entry line), sample_rules) and the Ray objects its layers
    apply: the request goes to tools/kubecheck now, the returned function makes the findings."""
    index = ClusterIndex.build(root, cluster)
    policies = [(b, o) for b, o in index.objects if o.get("apiVersion") == "networking.k8s.io/v1" and o.get("kind") == "NetworkPolicy"]
    if not policies:
        return lambda: []
    judged = [(obj, "sample " + name) for name, obj, _ in samples]
    judged += [(o, f"applied by {b.dir}") for b, o in index.objects if is_ray_workload(o)]
    if not judged:
        return lambda: []
    related = [o for _, o in policies] + [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": labels}}
                                          for n, labels in index.namespaces.items()]
    operator = operator_pod(index)
    related += [operator] if operator else []
    pending = submit_kept("kubecheck", "network", CheckError, objects=[o for o, _ in judged], related=[related] * len(judged))
    by_id = {resource_id(o): (b, o) for b, o in policies}

    def findings() -> list[Finding]:
        groups: dict[tuple, list[tuple[str, list[str]]]] = {}
        for (obj, label), refusals in zip(judged, pending.result()):
            entry = ctx.sample_entries.get(id(obj))
            named = f"{resource_id(obj)} ({label}{f', {entry[0]}:{entry[1]}' if entry else ''})"
            for r in refusals:
                groups.setdefault((r["direction"], tuple(r["policies"])), []).append((named, r["traffic"]))
        out = []
        for (direction, names), refused in groups.items():
            build, policy = by_id[names[0]]
            namespace = as_map(policy.get("metadata")).get("namespace", "default")
            traffic = "; ".join(f"{who}: {', '.join(t[:4])}{f' and {len(t) - 4} more' if len(t) > 4 else ''}" for who, t in refused[:3])
            more = f"; and {len(refused) - 3} more Ray objects" if len(refused) > 3 else ""
            also = f" (with {', '.join(names[1:])}, which select the same pods and allow none of it)" if len(names) > 1 else ""
            message = (f"{names[0]}{also} selects the {'receiving' if direction == 'ingress' else 'sending'} end of connections the "
                       f"Ray pods need and its {direction} rules allow none of them: "
                       f"{traffic}{more}. Kueue admits the job, {_consequence([t for _, ts in refused for t in ts])}, and the job holds "
                       "its quota without running")
            dns = any("-> cluster DNS" in t for _, ts in refused for t in ts)
            out.append(finding_at(ctx, root, policy, build, ["spec", "podSelector"], "ray-network-policy", message,
                                  _hint(direction, namespace, operator, dns), cluster=cluster.name))
        return out
    return findings


def _consequence(traffic: list[str]) -> str:
    """What the refused connections do to the job, the first cause first."""
    said = []
    if any(t.startswith("worker ") and "-> head pod" in t and ("(GCS)" in t or "(gcs-server)" in t) for t in traffic):
        said.append("its workers wait for the head's GCS forever (KubeRay's wait-gcs-ready init container)")
    elif any("-> cluster DNS" in t for t in traffic):
        said.append("its pods cannot resolve the head service's name, so its workers wait for the head's GCS forever (KubeRay's "
                    "wait-gcs-ready init container)")
    callers = [who for who in ("the KubeRay operator", "submitter") if any(t.startswith(who) for t in traffic)]
    if callers:
        said.append(f"{' and the '.join(callers)} never reach{'es' if len(callers) == 1 else ''} the head's dashboard to submit "
                    "and follow the job")
    return "; ".join(said) or "the Ray pods cannot reach each other (tasks, objects, metrics)"


DNS_EGRESS = ("{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}, podSelector: {matchLabels: "
              "{k8s-app: kube-dns}}}], ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]}")


def _hint(direction: str, namespace: str, operator: dict | None, dns: bool = False) -> str:
    """The rule to add: the RayCluster's own pods on all ports, the operator (and the submitter) on the dashboard port, and
    the cluster DNS when that is refused too."""
    op = as_map(as_map(operator).get("metadata"))
    op_ns, op_name = op.get("namespace", "kuberay-system"), as_map(op.get("labels")).get("app.kubernetes.io/name", OPERATOR_CHART)
    ray = "{podSelector: {matchExpressions: [{key: ray.io/cluster, operator: Exists}]}}"
    submitter = "{podSelector: {matchExpressions: [{key: batch.kubernetes.io/job-name, operator: Exists}]}}"
    if direction == "ingress" and dns and namespace == "kube-system":
        return ("let every pod reach the cluster DNS: add to namespace kube-system `{apiVersion: networking.k8s.io/v1, kind: "
                "NetworkPolicy, metadata: {name: allow-dns, namespace: kube-system}, spec: {podSelector: {matchLabels: {k8s-app: "
                "kube-dns}}, policyTypes: [Ingress], ingress: [{ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]}]}}`")
    if direction == "egress" and namespace == op_ns:
        return (f"let the operator reach the Ray heads' dashboard: add to namespace {op_ns} `{{apiVersion: networking.k8s.io/v1, kind: "
                f"NetworkPolicy, metadata: {{name: allow-kuberay-egress, namespace: {op_ns}}}, spec: {{podSelector: {{matchLabels: "
                f"{{app.kubernetes.io/name: {op_name}}}}}, policyTypes: [Egress], egress: [{{to: [{{namespaceSelector: {{}}, podSelector: "
                "{matchLabels: {ray.io/node-type: head}}}], ports: [{port: 8265, protocol: TCP}]}]}}` (its calls to the apiserver "
                "need their own rule too)")
    if direction == "egress":
        return (f"let the Ray pods reach each other{' and the cluster DNS' if dns else ''}: add to namespace {namespace} `{{apiVersion: "
                f"networking.k8s.io/v1, kind: NetworkPolicy, metadata: {{name: allow-ray-egress, namespace: {namespace}}}, spec: "
                f"{{podSelector: {{}}, policyTypes: [Egress], egress: [{{to: [{ray}]}}{', ' + DNS_EGRESS if dns else ''}]}}}}` (and, "
                f"for a policy in {op_ns}, let the operator reach port 8265 of namespace {namespace})")
    return (f"add to namespace {namespace} `{{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {{name: allow-ray, "
            f"namespace: {namespace}}}, spec: {{podSelector: {{matchExpressions: [{{key: ray.io/cluster, operator: Exists}}]}}, "
            f"policyTypes: [Ingress], ingress: [{{from: [{ray}]}}, {{from: [{submitter}, {{namespaceSelector: {{matchLabels: "
            f"{{kubernetes.io/metadata.name: {op_ns}}}}}, podSelector: {{matchLabels: {{app.kubernetes.io/name: {op_name}}}}}}}], "
            f"ports: [{{port: 8265, protocol: TCP}}]}}]}}}}` (the RayCluster's own pods on all ports, the KubeRay operator and "
            "the submitter on the dashboard port)")
