"""The one list-then-watch loop (harness.k8s.watch) against a scripted fake apiserver: it watches
on from the last version seen, lists again after a broken stream (counted in `reconnects`) and
after 410 Gone (`expired`), reports objects deleted in between, stops at once, and the waits
and the invariant checker built on it report what they saw."""
from __future__ import annotations

import json
import socket
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client

from harness.k8s import CLUSTER_QUEUE, RAYJOB, WORKLOAD, ListWatch, WaitTimeout, wait_for
from harness.kueue import InvariantChecker

pytestmark = pytest.mark.static

HANG = ("hang",)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        watching = query.get("watch") == "true"
        self.server.requests.append((url.path, watching, query))
        script = self.server.script[(url.path, watching)]
        step = script.pop(0) if script else (HANG if watching else ("list", [], "1"))
        if step[0] == "status":
            self.send_json(step[1], {"kind": "Status", "code": step[1], "message": "scripted"})
        elif step[0] == "list":
            self.send_json(200, {"items": step[1], "metadata": {"resourceVersion": step[2]}})
        elif step[0] == "events":
            body = "".join(json.dumps(e) + "\n" for e in step[1]).encode()
            broken = step[2] == "broken"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) + (100 if broken else 0)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            if broken:  # the apiserver went away mid-stream
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
        else:  # an open watch on which nothing happens, until its timeoutSeconds or the end of the test
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            self.server.closing.wait(float(query.get("timeoutSeconds", 30)))
            try:
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass

    def send_json(self, status: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def fake():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.script = defaultdict(list)  # (path, watch?) -> scripted responses, in order
    server.requests = []
    server.closing = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{server.server_address[1]}"
    server.api = client.ApiClient(cfg)
    yield server
    server.closing.set()
    server.shutdown()
    server.api.close()


def obj(name: str, rv: str, **spec) -> dict:
    return {"apiVersion": CLUSTER_QUEUE.api_version, "kind": CLUSTER_QUEUE.kind,
            "metadata": {"name": name, "resourceVersion": rv}, "spec": spec}


def event(etype: str, o: dict) -> dict:
    return {"type": etype, "object": o}


GONE = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"}}


def until(check, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def watch_versions(fake, path: str) -> list[str]:
    return [q["resourceVersion"] for p, watching, q in fake.requests if p == path and watching]


def test_watches_on_lists_again_after_a_break_and_after_410_and_stops_at_once(fake):
    path = CLUSTER_QUEUE.path()
    a, b, b2 = obj("a", "5"), obj("b", "11"), obj("b", "12", cohort="x")
    fake.script[(path, False)] = [("list", [a], "10"), ("list", [b2], "20"), ("list", [b2], "30")]
    fake.script[(path, True)] = [
        ("events", [event("ADDED", b)], "ok"),                # the window ends: watch on from 11
        ("events", [event("MODIFIED", b2)], "broken"),        # the stream breaks (its data is lost): list
        ("events", [GONE], "ok"),                             # again (b as modified, a gone); 410: list again
        HANG,
    ]
    seen: list[tuple[str, str]] = []
    lw = ListWatch(fake.api, CLUSTER_QUEUE, on_event=lambda t, o: seen.append((t, o["metadata"]["name"])), retry=0.05)
    lw.start()
    until(lambda: len(watch_versions(fake, path)) == 4)
    t = time.monotonic()
    lw.stop()
    assert time.monotonic() - t < 2, "stop() waited for the open watch to time out"
    assert not lw.alive and lw.failure is None
    assert watch_versions(fake, path) == ["10", "11", "20", "30"]
    assert seen == [("ADDED", "b"), ("DELETED", "a")]
    assert (lw.reconnects, lw.expired) == (1, 1), lw.errors
    assert set(lw.state) == {(None, "b")} and lw.state[(None, "b")]["spec"] == {"cohort": "x"}


def test_wait_for_returns_the_value_or_reports_the_last_state(fake):
    path = CLUSTER_QUEUE.path()
    fake.script[(path, False)] = [("list", [obj("a", "5")], "10")]
    fake.script[(path, True)] = [("events", [event("ADDED", obj("b", "11", cohort="x"))], "ok")]
    found = wait_for(fake.api, CLUSTER_QUEUE, lambda items: next((o for o in items if o["metadata"]["name"] == "b"), None),
                     "ClusterQueue b", timeout=5)
    assert found["spec"] == {"cohort": "x"}

    # A timeout reports each object's conditions in one readable line (name, type=status, reason, message), never its JSON.
    stopped = obj("a", "5", cohort="y")
    stopped["status"] = {"conditions": [{"type": "Active", "status": "False", "reason": "Stopped",
                                         "message": "Can't admit new workloads: is stopped."}],
                         "flavorsUsage": [{"name": f"flavor-{i}", "resources": [{"name": "cpu", "total": "0"}]} for i in range(50)]}
    fake.script[(path, False)] = [("list", [stopped, *(obj(f"q{i}", "5") for i in range(30))], "10")]
    with pytest.raises(WaitTimeout) as err:
        wait_for(fake.api, CLUSTER_QUEUE, lambda items: None, "something that never happens", timeout=1)
    text = str(err.value)
    assert "waiting for something that never happens" in text
    assert "ClusterQueue a: Active=False (Stopped: Can't admit new workloads: is stopped.)" in text, text
    assert "flavor-" not in text and "{" not in text, text
    assert len(text.splitlines()) <= 23 and "(and 11 more)" in text, text


def test_errors_no_retry_heals_are_raised_at_once(fake):
    fake.script[(CLUSTER_QUEUE.path(), False)] = [("status", 403)]
    t = time.monotonic()
    with pytest.raises(client.ApiException) as err:
        wait_for(fake.api, CLUSTER_QUEUE, lambda items: True, "anything", timeout=30)
    assert err.value.status == 403 and time.monotonic() - t < 5


def test_invariant_checker_fails_on_what_its_watches_deliver_and_counts_reconnects(fake):
    over = {"apiVersion": WORKLOAD.api_version, "kind": WORKLOAD.kind,
            "metadata": {"name": "w1", "namespace": "ray", "uid": "u1", "resourceVersion": "11", "ownerReferences": []},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}],
                       "admission": {"clusterQueue": "solo", "podSetAssignments": [{
                           "name": "workers", "flavors": {"nvidia.com/gpu": "gpu"}, "resourceUsage": {"nvidia.com/gpu": "9"}}]}}}
    solo = obj("solo", "3", resourceGroups=[{"coveredResources": ["nvidia.com/gpu"], "flavors": [
        {"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}])
    fake.script[(CLUSTER_QUEUE.path(), False)] = [("list", [solo], "10")]
    fake.script[(WORKLOAD.path(), False)] = [("list", [], "10"), ("list", [over], "12")]
    fake.script[(WORKLOAD.path(), True)] = [("events", [], "broken")]  # the apiserver goes away, then the workload is there
    fake.script[(RAYJOB.path(), False)] = [("list", [], "10")]
    checker = InvariantChecker(fake.api).start()
    try:
        until(lambda: checker.violations)
        assert checker.reconnects >= 1, checker.errors
    finally:
        checker.stop()
    assert any("ClusterQueue solo holds 9 nvidia.com/gpu" in v for v in checker.violations), checker.violations
    with pytest.raises(AssertionError, match="invariants violated"):
        checker.assert_held()
