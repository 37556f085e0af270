"""Process hygiene: however a run ends (Ctrl-C, SIGTERM, a failure, pytest interrupted, even the
harness SIGKILLed), no process it started survives and no port it bound stays bound.

Each test runs the harness as a child process, records that child's descendants and their
listening ports while the cluster is up, ends the run, and checks both are gone.
"""
from __future__ import annotations

import signal

import pytest

from harness.testing import cluster_records, leftovers, listening_ports, processes_under

pytestmark = pytest.mark.harness

READY = r"^KUBECONFIG="  # what `python -m harness.cluster` prints once the cluster, its nodes and queues are up
START = 120  # bound on a cluster start (warm tool cache: ~8 s)
STOP = 60    # bound on its teardown after the signal


def up(child):
    """The run's processes and ports once its cluster is ready: all five components, each listening."""
    child.wait_line(READY, START)
    procs = child.descendants()
    names = {p.name() for p in procs}
    assert {"etcd", "kube-apiserver", "kube-controller-manager", "kueue", "ray-operator", "kube-scheduler", "kwok"} <= names, names
    ports = listening_ports(procs)
    assert len(ports) >= 8, f"expected etcd, kube-apiserver, controller-manager, scheduler, KWOK, Kueue and KubeRay ports, got {ports}"
    return procs, ports


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_make_cluster_interrupted_leaves_nothing(spawn, tmp_path, sig):
    child = spawn("-m", "harness.cluster", "--workdir", str(tmp_path / "run"))
    procs, ports = up(child)
    record = cluster_records(tmp_path / "run")[0]
    assert set(record["ports"].values()) <= ports, (record["ports"], ports)

    child.signal(sig)
    assert child.wait(STOP) == 0, child.output[-3000:]
    assert not leftovers(procs, ports), child.output[-3000:]
    # The etcd data (~70 MB) goes once every process has stopped; the logs stay, and where is said last.
    run = tmp_path / "run"
    assert not (run / "etcd").exists() and (run / "logs" / "etcd.log").is_file(), sorted(p.name for p in run.iterdir())
    tail = child.output[child.output.index("[cluster] stopping"):]
    assert tail.index("stopped") < tail.index(f"logs kept in {run / 'logs'}"), tail


def test_make_cluster_signalled_twice_still_tears_down(spawn, tmp_path):
    """SIGTERM to make's process group: the run gets it, then once more from make (GNU make sends SIGTERM to its
    children when it gets one, src/commands.c fatal_error_signal). The second must not cut the teardown short."""
    child = spawn("-m", "harness.cluster", "--workdir", str(tmp_path / "run"))
    procs, ports = up(child)
    child.signal(signal.SIGTERM)
    child.wait_line(r"\[cluster\] stopping", STOP)
    child.signal(signal.SIGTERM)
    assert child.wait(STOP) == 0, child.output[-3000:]
    assert "Traceback" not in child.output, child.output[-3000:]
    assert not leftovers(procs, ports), child.output[-3000:]
    run = tmp_path / "run"
    assert not (run / "etcd").exists() and f"logs kept in {run / 'logs'}" in child.output, child.output[-3000:]


def test_interrupted_while_starting_leaves_nothing(spawn, tmp_path):
    """SIGTERM when kube-apiserver is starting: the half-started cluster is torn down too."""
    child = spawn("-m", "harness.cluster", "--workdir", str(tmp_path / "run"))
    child.wait_line(r"starting kube-apiserver", START)
    procs = child.descendants()
    assert any(p.name() == "etcd" for p in procs), [p.name() for p in procs]
    ports = listening_ports(procs)

    child.signal(signal.SIGTERM)
    child.wait(STOP)
    assert not leftovers(child.descendants() + procs, ports), child.output[-3000:]
    assert "ready in" not in child.output
    assert child.output.index("[cluster] stopping") < child.output.index("[cluster] stopped"), child.output[-3000:]


def test_harness_sigkilled_leaves_nothing(spawn, tmp_path):
    """No finally block runs on SIGKILL: the components die because the kernel tells them their
    parent did (PR_SET_PDEATHSIG), so a crashed or OOM-killed harness leaks nothing either."""
    child = spawn("-m", "harness.cluster", "--workdir", str(tmp_path / "run"))
    procs, ports = up(child)
    child.signal(signal.SIGKILL)
    assert child.wait(STOP) == -signal.SIGKILL
    assert not leftovers(procs, ports)
    assert not processes_under(tmp_path)


FAILING_RUN = """
import sys
from pathlib import Path
from harness.cluster import LocalCluster
with LocalCluster(Path(sys.argv[1])) as cluster:
    print("KUBECONFIG=" + str(cluster.kubeconfig), flush=True)
    raise RuntimeError("a test failed while the cluster was up")
"""


def test_failing_run_leaves_nothing(spawn, tmp_path):
    child = spawn("-c", FAILING_RUN, str(tmp_path / "run"))
    child.wait_line(READY, START)
    procs = child.descendants()
    ports = listening_ports(procs)
    assert child.wait(STOP) == 1
    assert "RuntimeError: a test failed while the cluster was up" in child.output
    assert not leftovers(procs, ports), child.output[-3000:]


def test_pytest_run_interrupted_leaves_nothing(spawn, tmp_path):
    """Ctrl-C in the middle of a behavioural test: pytest unwinds the session's cluster fixture."""
    base = tmp_path / "pytest"
    child = spawn("-m", "pytest", "tests/integration/test_team_queues.py", "-p", "no:cacheprovider",
                  "--basetemp", str(base), "-q", "-x")
    child.wait_line(r"\[cluster\] ready in", START)
    procs = child.descendants()
    ports = listening_ports(procs)
    records = cluster_records(base)
    assert len(records) == 1 and set(records[0]["ports"].values()) <= ports, (records, ports)

    child.signal(signal.SIGINT)
    rc = child.wait(STOP)
    assert rc == 2, f"pytest should report an interrupted run (exit code 2), got {rc}:\n{child.output[-3000:]}"
    assert "KeyboardInterrupt" in child.output
    assert not leftovers(procs, ports), child.output[-3000:]
    assert not processes_under(base)
