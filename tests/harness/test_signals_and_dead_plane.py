"""A stop signal delivered twice, and a plane that dies under a run: the teardown still runs to its end, says so, and
leaves no process and no etcd data; a run that cannot go on says why in one line (exit 2), never a traceback.

`make cluster` killed by process group (what `timeout`, a CI cancel, `docker stop` or a closing terminal do): the
harness gets SIGTERM from the group kill and once more from make (GNU make sends SIGTERM on to its children).
"""
from __future__ import annotations

import shutil
import signal
import sys
import time

import pytest

from harness.testing import Child, leftovers, listening_ports, processes_under

pytestmark = pytest.mark.harness

START = 180  # a cluster start on a loaded 2-core machine
STOP = 60


@pytest.fixture
def children():
    started: list[Child] = []
    yield started
    for child in started:
        child.kill_all()


@pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")
def test_make_cluster_killed_by_group_tears_down_to_the_end(children, tmp_path):
    run = tmp_path / "run"
    child = Child(["make", "--no-print-directory", "cluster", f"WORKDIR={run}"])
    children.append(child)
    child.wait_line(r"^KUBECONFIG=", START)
    procs = child.descendants()
    ports = listening_ports(procs)
    assert any(p.name() == "etcd" for p in procs) and (run / "etcd").is_dir()

    harness = next(p for p in procs if "harness.cluster" in " ".join(p.cmdline()))
    child.signal_group(signal.SIGTERM)
    # make's own SIGTERM to its child comes at once; signals that arrive before Python's handler runs count as one, so
    # the second is sent again once the teardown is under way (as make's did on a loaded machine).
    child.wait_line(r"\[cluster\] stopping", 10)
    time.sleep(0.3)
    harness.send_signal(signal.SIGTERM)
    child.wait(STOP)
    out = child.output
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    tail = out[out.index("[cluster] stopping"):]
    assert tail.index("[cluster] stopped") < tail.index(f"[cluster] logs kept in {run / 'logs'}"), tail
    assert not leftovers(procs, ports), out[-3000:]
    assert not (run / "etcd").exists() and (run / "logs" / "etcd.log").is_file(), sorted(p.name for p in run.iterdir())


SIGTERMED_TWICE = """
import sys, time
from pathlib import Path
from harness.cluster import LocalCluster
with LocalCluster(Path(sys.argv[1])) as cluster:
    print("KUBECONFIG=" + str(cluster.kubeconfig), flush=True)
    while True:
        time.sleep(1)
"""


def test_a_second_sigterm_does_not_interrupt_a_teardown_under_pytest_or_a_script(children, tmp_path):
    """The registry's SIGTERM handler (what a pytest run or any script using LocalCluster has): the first SIGTERM exits
    through the finally blocks (143), a second one in the teardown is ignored."""
    child = Child([sys.executable, "-c", SIGTERMED_TWICE, str(tmp_path / "run")])
    children.append(child)
    child.wait_line(r"^KUBECONFIG=", START)
    procs = child.descendants()
    ports = listening_ports(procs)
    child.signal(signal.SIGTERM)
    time.sleep(0.3)  # the teardown (seven processes stopped in order) takes seconds
    child.signal(signal.SIGTERM)  # lands in the teardown the first started
    assert child.wait(STOP) == 128 + signal.SIGTERM, child.output[-3000:]
    assert "Traceback" not in child.output and "[cluster] stopped" in child.output, child.output[-3000:]
    assert not leftovers(procs, ports), child.output[-3000:]


def test_report_with_its_apiserver_killed_says_which_component_died_in_one_line(children, tmp_path):
    """make report's embedded plane loses kube-apiserver mid-scenario: exit 2 and one line naming it and the kept logs;
    the teardown of the scenario's queues is best effort (the plane is gone), the plane is stopped, nothing is left."""
    child = Child([sys.executable, "-m", "harness.report", "--base", "HEAD", "--out", str(tmp_path / "out"),
                   "--scenario", "single-queue", "--no-gate"], env={"TMPDIR": str(tmp_path)})
    children.append(child)
    child.wait_line(r"base: scenario single-queue", START)
    procs = child.descendants()
    ports = listening_ports(procs)
    apiserver = next(p for p in procs if p.name() == "kube-apiserver")
    apiserver.kill()
    assert child.wait(STOP * 3) == 2, child.output[-3000:]
    out = child.output
    assert "Traceback" not in out, out[-3000:]
    last = out.strip().splitlines()[-1]
    assert last.startswith("report: could not run: kube-apiserver exited (killed by signal 9) during scenario single-queue "
                           "(base); component logs kept in "), last
    assert not leftovers(procs, ports), out[-3000:]
    assert not processes_under(tmp_path) and not (tmp_path / "out").exists()
