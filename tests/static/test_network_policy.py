"""ray-network-policy: the cluster's NetworkPolicies against the traffic KubeRay's pods need (harness/gate/network_policy.py,
tools/kubecheck netpol.go). The broken variants are in test_gate_corpus.py CORPUS; here what must stay clean, and the fix
the finding gives, applied, must make it clean."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static

DENY = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: default-deny-ingress, namespace: ray}\n" \
       "spec: {podSelector: {}, policyTypes: [Ingress]}\n"


def _add(root: Path, name: str, text: str) -> None:
    (root / "base" / name).write_text(text)
    kustomization = root / "base/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - priority-classes.yaml\n", f"  - priority-classes.yaml\n  - {name}\n"))


def _rule(report) -> list:
    return [f for f in report.findings if f.rule == "ray-network-policy"]


def test_default_deny_with_the_hints_allow_rules_is_clean(repo_copy: Path):
    """The finding's own fix (its YAML, as given), added beside the default-deny policy, lets every connection through."""
    _add(repo_copy, "deny.yaml", DENY)
    found = _rule(validate_repository(repo_copy))
    assert found and found[0].file == "base/deny.yaml", found
    allow = yaml.safe_load(re.search(r"`(\{apiVersion: networking.k8s.io/v1.*\})`", found[0].hint).group(1))
    assert allow["kind"] == "NetworkPolicy" and allow["metadata"]["namespace"] == "ray"
    _add(repo_copy, "allow-ray.yaml", yaml.safe_dump(allow))
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_policies_that_do_not_select_the_ray_pods_or_allow_them_are_clean(repo_copy: Path):
    """A default-deny in another namespace, and one in `ray` that selects pods KubeRay does not create: nothing to say."""
    _add(repo_copy, "deny.yaml", DENY.replace("namespace: ray", "namespace: default") + "---\n" + DENY.replace(
        "default-deny-ingress, namespace: ray", "web-only, namespace: ray").replace("podSelector: {}", "podSelector: {matchLabels: {app: web}}"))
    assert _rule(validate_repository(repo_copy)) == []


def test_a_same_namespace_policy_names_the_operator_only(repo_copy: Path):
    """Pods of namespace ray may talk: only the KubeRay operator's (kuberay-system) call to the dashboard is refused."""
    _add(repo_copy, "deny.yaml", DENY.replace("policyTypes: [Ingress]}", "policyTypes: [Ingress], ingress: [{from: [{podSelector: {}}]}]}"))
    found = _rule(validate_repository(repo_copy))
    assert found, "expected ray-network-policy"
    assert all("the KubeRay operator pod (kuberay-system) -> head pod TCP 8265 (dashboard)" in f.message for f in found), found
    assert all("6379" not in f.message and "submitter pod ->" not in f.message for f in found), found


EGRESS = DENY.replace("default-deny-ingress", "same-namespace-egress").replace(
    "policyTypes: [Ingress]}", "policyTypes: [Egress], egress: [{to: [{podSelector: {}}]}]}")


def test_an_egress_policy_without_the_cluster_dns_names_it_and_its_fix_is_clean(repo_copy: Path):
    """Pods of namespace ray may reach each other, not CoreDNS: the finding names the DNS traffic (UDP 53 to kube-system's
    k8s-app=kube-dns pods) and nothing else, and its fix, applied, is clean."""
    _add(repo_copy, "deny.yaml", EGRESS)
    found = _rule(validate_repository(repo_copy))
    assert found and all(f.file == "base/deny.yaml" for f in found), found
    assert all("-> cluster DNS (kube-system pods k8s-app=kube-dns) UDP 53" in f.message and "TCP" not in f.message
               and "resolve the head service's name" in f.message for f in found), [f.message for f in found]
    allow = yaml.safe_load(re.search(r"`(\{apiVersion: networking.k8s.io/v1.*\})`", found[0].hint).group(1))
    _add(repo_copy, "allow-ray.yaml", yaml.safe_dump(allow))
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_an_egress_policy_that_allows_dns_to_kube_system_is_clean(repo_copy: Path):
    _add(repo_copy, "deny.yaml", EGRESS.replace("egress: [{to: [{podSelector: {}}]}]", "egress: [{to: [{podSelector: {}}]}, {to: "
         "[{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}}], ports: [{port: 53, protocol: UDP}]}]"))
    assert _rule(validate_repository(repo_copy)) == []
