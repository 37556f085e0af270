"""Placement and label-selector questions, answered by the Kubernetes libraries themselves.

The gate's Go helper (tools/fluxbuild/match.go) runs component-helpers' FindMatchingUntoleratedTaint
and nodeaffinity.GetRequiredNodeAffinity(pod).Match (what kube-scheduler's TaintToleration and
NodeAffinity filters and Kueue's flavor assigner call), apimachinery's LabelSelectorAsSelector, and
Kueue's own accounting of a pod's requests (workload.NewInfo).
Answers are cached for the process.
"""
from __future__ import annotations

import json

from harness.gate.helper import helper
from harness.core import HarnessError


class MatchError(HarnessError, RuntimeError):
    pass


_CACHE: dict[str, dict] = {}


def _ask(query: dict) -> dict:
    key = json.dumps(query, sort_keys=True, default=str)
    if key not in _CACHE:
        _CACHE[key] = helper().call("match", MatchError, queries=[query])[0]
    return _CACHE[key]


def start() -> None:
    """Starts the helper ahead of the first question, so that the gate's rendering hides its start."""
    helper().start()


def taint_dict(text: str) -> dict:
    """An AKS/Terraform taint "key=value:Effect" as a Node's taint object."""
    kv, _, effect = str(text).partition(":")
    key, _, value = kv.partition("=")
    return {"key": key, "value": value, "effect": effect}


def taint_text(taint: dict) -> str:
    """A taint object as AKS and Terraform write it, "key=value:Effect"."""
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + str(value) if value not in (None, '') else ''}:{taint.get('effect')}"


def untolerated(taints: list[dict], tolerations: list[dict], comparison: bool = False) -> dict | None:
    """The first NoSchedule/NoExecute taint that no toleration tolerates, or None; `comparison`
    enables the Lt/Gt toleration operators (Kueue's flavor check does)."""
    answer = _ask({"untolerated": {"taints": taints, "tolerations": tolerations, "comparison": comparison}})
    return answer.get("taint")


def node_matches(labels: dict[str, str], node_selector: dict, affinity: dict | None = None) -> bool:
    """Whether a node with `labels` satisfies a pod's nodeSelector and required node affinity
    (an invalid affinity matches nothing, as the scheduler treats it)."""
    pod = {"nodeSelector": node_selector or None}
    if affinity:
        pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity}}
    answer = _ask({"node": {"labels": labels, "pod": pod}})
    return bool(answer.get("match")) and not answer.get("error")


def selector_matches(selector: dict | None, labels: dict[str, str]) -> tuple[bool, str | None]:
    """(matches, error) of a metav1.LabelSelector against `labels`: an empty selector matches
    everything, a null one nothing (the caller decides what null means), an invalid one is the error."""
    answer = _ask({"selector": {"selector": selector, "labels": labels}})
    return bool(answer.get("match")), answer.get("error") or None


def pod_requests(template: dict | None, limit_ranges: list[dict] = ()) -> dict[str, str]:
    """What the pinned Kueue charges its ClusterQueue for one pod of `template` ({resource: quantity}): the larger of
    the biggest init container and the containers plus sidecars, after the defaults of `limit_ranges` (the LimitRanges
    of the pod's namespace; the cluster's RuntimeClasses among them add the overhead of the one the pod names) and with
    limits standing in for missing requests (Kueue's workload.NewInfo after AdjustResources). {} for a template that
    does not decode (the schema check reports it)."""
    query = {"template": template if isinstance(template, dict) else {}, "related": list(limit_ranges)}
    return _ask({"podRequests": query}).get("requests") or {}
