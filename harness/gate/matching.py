"""Placement and label-selector questions, answered by the Kubernetes libraries themselves.

`kubecheck match` (tools/kubecheck/match.go) runs component-helpers' FindMatchingUntoleratedTaint
and nodeaffinity.GetRequiredNodeAffinity(pod).Match (what kube-scheduler's TaintToleration and
NodeAffinity filters and Kueue's flavor assigner call) and apimachinery's LabelSelectorAsSelector.
One process per gate run, started on the first question; answers are cached.
"""
from __future__ import annotations

import atexit
import json
import subprocess
import tempfile
import threading

from harness import toolchain as tools
from harness.core import HarnessError


class MatchError(HarnessError, RuntimeError):
    pass


class _Matcher:
    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._cache: dict[str, dict] = {}
        self._lock = threading.Lock()

    def ask(self, query: dict) -> dict:
        key = json.dumps(query, sort_keys=True, default=str)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._send([query])[0]
            return self._cache[key]

    def _send(self, queries: list[dict]) -> list[dict]:
        if self._proc is None or self._proc.poll() is not None:
            binary = tools.ensure("kubecheck")["kubecheck"].path()
            self._stderr = tempfile.TemporaryFile(mode="w+")
            self._proc = subprocess.Popen([str(binary), "match"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, text=True)
        try:
            self._proc.stdin.write(json.dumps(queries, default=str) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            self._stderr.seek(0)
            raise MatchError(f"kubecheck match failed: {self._stderr.read().strip()[-2000:]}")
        return json.loads(line)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stdin.close()
            self._proc.wait()
            self._proc = None


_MATCHER = _Matcher()
atexit.register(_MATCHER.close)


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
