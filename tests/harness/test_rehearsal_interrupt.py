"""`make rehearse` ended by Ctrl-C or SIGTERM to its process group (a terminal, `timeout`, a cancelled CI job):
the rehearsal stops (the other side never starts), its running pytest run tears down and ends, no process it
started survives, no pytest base directory is left, no side is saved as a finished result, and a second signal
prints no traceback.

The rehearsal runs as a real child process (`harness.report.rehearsal.main`); only its steps are stand-ins: the tool
build, gate and scenario steps do nothing, and the candidate's suite is a real pytest run of one test that holds a
harness child process (harness.cluster.Process, in its own session like a cluster's components) and waits.
"""
from __future__ import annotations

import os
import signal
import time

import pytest

from harness.testing import leftovers, processes_under

pytestmark = pytest.mark.harness

DRIVER = """
import sys
from harness.report import rehearsal
test_file, out = sys.argv[1:3]
rehearsal._main_of = lambda module: [sys.executable, "-c", "pass"]
rehearsal.suite_command = lambda suite, junit, basetemp: [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s",
                                                         test_file, f"--basetemp={basetemp}", f"--junitxml={junit}"]
sys.exit(rehearsal.main(["--out", out, "--jobs", "1"]))
"""

SUITE = """
import time
from pathlib import Path
import pytest
from harness.cluster import Process

@pytest.fixture
def component(tmp_path):
    proc = Process("holder", ["/bin/sleep", "600"], tmp_path / "logs").start()
    (tmp_path / "etcd").mkdir()
    (tmp_path / "etcd" / "wal").write_bytes(b"0" * 4096)
    yield proc
    proc.stop()

def test_waits(component):
    print("SUITE RUNNING", flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_the_group_stops_the_rehearsal_and_leaves_nothing(spawn, tmp_path, sig):
    suite, out = tmp_path / "test_suite_stand_in.py", tmp_path / "out"
    suite.write_text(SUITE)
    child = spawn("-c", DRIVER, str(suite), str(out))
    child.wait_line(r"SUITE RUNNING", 120)
    procs = child.descendants()
    assert any(p.name() == "sleep" for p in procs), [p.name() for p in procs]
    assert (out / "candidate" / "pytest-integration").is_dir()

    os.killpg(child.popen.pid, sig)  # as a terminal's Ctrl-C or `timeout` does: the group
    time.sleep(0.5)
    os.killpg(child.popen.pid, sig)  # a second one (make forwards SIGTERM; an impatient Ctrl-C)
    assert child.wait(90) == 130, child.output[-3000:]
    assert "Traceback" not in child.output, child.output[-3000:]
    assert f"rehearse: interrupted ({signal.Signals(sig).name})" in child.output
    assert not leftovers(procs, set()), child.output[-3000:]
    assert not processes_under(tmp_path)
    # pytest was stopped as by Ctrl-C (its fixtures torn down), its base directory removed, nothing saved.
    assert "KeyboardInterrupt" in (out / "candidate" / "integration.log").read_text()
    assert not (out / "candidate" / "pytest-integration").exists()
    assert not list(out.rglob("result.json"))
    assert not (out / "baseline" / "validate.log").exists(), "the baseline side started after the interrupt"


def test_a_killed_rehearsal_s_base_directory_is_cleared_by_the_next_run(tmp_path):
    from harness.report.rehearsal import clear_scratch

    left = tmp_path / "candidate" / "pytest-integration" / "local-cluster0" / "etcd"
    left.mkdir(parents=True)
    (tmp_path / "candidate" / "result.json").write_text("{}")
    clear_scratch(tmp_path / "candidate")
    assert not (tmp_path / "candidate" / "pytest-integration").exists() and (tmp_path / "candidate" / "result.json").exists()


