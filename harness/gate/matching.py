"""Placement and label-selector questions, answered by the Kubernetes libraries themselves.

`kubecheck match` (tools/kubecheck/match.go) runs component-helpers' FindMatchingUntoleratedTaint
and nodeaffinity.GetRequiredNodeAffinity(pod).Match (what kube-scheduler's TaintToleration and
NodeAffinity filters and Kueue's flavor assigner call) and apimachinery's LabelSelectorAsSelector.
One process per gate run, started on the first question; answers are cached.
"""
from __future__ import annotations

import atexit
import json
import threading

from harness import toolchain as tools
from harness.core import HarnessError


class MatchError(HarnessError, RuntimeError):
    pass


class _Matcher:
    def __init__(self) -> None:
        self._helper = tools.LineProcess("kubecheck match", lambda: [str(tools.ensure("kubecheck")["kubecheck"].path()), "match"],
                                         MatchError)
        self._cache: dict[str, dict] = {}
        self._lock = threading.Lock()

    def ask(self, query: dict) -> dict:
        key = json.dumps(query, sort_keys=True, default=str)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._helper.request([query])[0]
            return self._cache[key]

    def start(self) -> None:
        self._helper.start()

    def close(self) -> None:
        self._helper.close()


_MATCHER = _Matcher()
atexit.register(_MATCHER.close)


def start() -> None:
    """Starts the helper ahead of the first question (it links the Kubernetes libraries, which
    take a moment to initialise), so that the gate's rendering hides its start."""
    _MATCHER.start()


def untolerated(taints: list[dict], tolerations: list[dict], comparison: bool = False) -> dict | None:
    """The first NoSchedule/NoExecute taint that no toleration tolerates, or None; `comparison`
    enables the Lt/Gt toleration operators (Kueue's flavor check does)."""
    answer = _MATCHER.ask({"untolerated": {"taints": taints, "tolerations": tolerations, "comparison": comparison}})
    return answer.get("taint")


def node_matches(labels: dict[str, str], node_selector: dict, affinity: dict | None = None) -> bool:
    """Whether a node with `labels` satisfies a pod's nodeSelector and required node affinity
    (an invalid affinity matches nothing, as the scheduler treats it)."""
    pod = {"nodeSelector": node_selector or None}
    if affinity:
        pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity}}
    answer = _MATCHER.ask({"node": {"labels": labels, "pod": pod}})
    return bool(answer.get("match")) and not answer.get("error")


def selector_matches(selector: dict | None, labels: dict[str, str]) -> tuple[bool, str | None]:
    """(matches, error) of a metav1.LabelSelector against `labels`: an empty selector matches
    everything, a null one nothing (the caller decides what null means), an invalid one is the error."""
    answer = _MATCHER.ask({"selector": {"selector": selector, "labels": labels}})
    return bool(answer.get("match")), answer.get("error") or None
