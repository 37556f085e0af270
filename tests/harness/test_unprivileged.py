"""`make cluster` as an ordinary user (issue 19): GitHub's hosted runners and most laptops run the
harness without root. Run as root (this project's CI machine), the cluster runs as `nobody` with
only the tools readable (harness.testing.Sandbox); otherwise as the current user. Either way it
must come up with Kueue's webhooks answering, stop cleanly on Ctrl-C, and leave nothing in
world-writable places outside its sandbox."""
from __future__ import annotations

import signal
import sys

import pytest
from kubernetes import client, config

from harness.core import timeouts
from harness.testing import Child, Sandbox, leftovers, listening_ports, processes_under

pytestmark = pytest.mark.harness

SEED_AND_START = timeouts.CLUSTER_START + timeouts.CRDS_ESTABLISHED  # nobody builds its own seed etcd


@pytest.fixture
def sandbox():
    box = Sandbox()
    yield box
    box.remove()


def test_cluster_runs_and_stops_as_an_ordinary_user(sandbox):
    before = sandbox.snapshot()
    run = Child(sandbox.argv([sys.executable, "-m", "harness.cluster", "--workdir", str(sandbox.work / "run")]),
                env=sandbox.env())
    try:
        kubeconfig = run.wait_line(r"^KUBECONFIG=(\S+)", SEED_AND_START).group(1)
        processes = run.descendants()
        ports = listening_ports(processes)
        assert {p.uids().real for p in processes} == {sandbox.uid}, "every component runs as the sandbox's user"
        api = config.new_client_from_config(kubeconfig)
        try:
            names = {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
            crds = {c.metadata.name for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items}
        finally:
            api.close()
        assert {"kueue-system", "default"} <= names
        assert {"clusterqueues.kueue.x-k8s.io", "rayjobs.ray.io"} <= crds
    finally:
        run.signal(signal.SIGINT)
        code = run.wait(timeouts.PROCESS_STOP * 6)
    assert code == 0, run.output[-4000:]
    left = leftovers(list(run.seen.values()), ports) + processes_under(sandbox.root)
    assert not left, f"left running or bound after Ctrl-C: {left}"
    assert not sandbox.stray_files(before), f"written outside the sandbox: {sandbox.stray_files(before)}"
