"""Isolation: runs at the same time on one machine, and pytest-xdist workers within a run, never
share a port, a data directory or a kubeconfig, and each sees only its own cluster.

Every LocalCluster writes cluster.json (ports, etcd data dir, kubeconfig, its harness pid) into
its workdir when it is ready; the tests compare those records across concurrent runs and check
them against what the processes really listen on.
"""
from __future__ import annotations

import itertools
import re
import signal

import pytest
from kubernetes import client, config

from harness.testing import cluster_records, leftovers, listening_ports, processes_under

pytestmark = pytest.mark.harness

START = 180  # two or three clusters starting at once on two cores
STOP = 60    # a run's teardown after SIGINT
SUITES = 900  # two pytest runs, three clusters, side by side


def assert_disjoint(records: list[dict]) -> None:
    for a, b in itertools.combinations(records, 2):
        shared = set(a["ports"].values()) & set(b["ports"].values())
        assert not shared, f"{a['workdir']} and {b['workdir']} share ports {shared}"
        for key in ("workdir", "kubeconfig", "etcd_data", "logs"):
            assert a[key] != b[key], f"both runs use {key} {a[key]}"
            assert not a[key].startswith(b[key] + "/") and not b[key].startswith(a[key] + "/"), (a[key], b[key])


def core(kubeconfig: str) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))


def test_two_clusters_at_once_share_nothing(spawn, tmp_path):
    runs = [spawn("-m", "harness.cluster", "--workdir", str(tmp_path / name)) for name in ("a", "b")]
    for run in runs:
        run.wait_line(r"^KUBECONFIG=", START)
    records = [cluster_records(tmp_path / name)[0] for name in ("a", "b")]
    assert_disjoint(records)
    procs = [run.descendants() for run in runs]
    bound = [listening_ports(p) for p in procs]
    assert not bound[0] & bound[1], f"processes of both runs listen on {bound[0] & bound[1]}"
    for record, ports in zip(records, bound):
        assert set(record["ports"].values()) <= ports, (record["ports"], ports)

    # Each kubeconfig reaches its own apiserver and etcd: what one run creates, the other never sees.
    a, b = (core(r["kubeconfig"]) for r in records)
    a.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="only-in-a")))
    assert "only-in-a" in {n.metadata.name for n in a.list_namespace().items}
    assert "only-in-a" not in {n.metadata.name for n in b.list_namespace().items}

    for run in runs:
        run.signal(signal.SIGINT)
    for run in runs:
        assert run.wait(STOP) == 0, run.output[-3000:]
    assert not leftovers(procs[0] + procs[1], bound[0] | bound[1])


def test_concurrent_pytest_runs_and_xdist_workers_get_their_own_clusters(spawn, tmp_path):
    """Run A with two xdist workers (one cluster each) and run B beside it: three clusters, all
    tests green, nothing shared, nothing left behind."""
    env = {"RAY_KUEUE_WAIT": "180"}  # three clusters at once on two cores: Kueue decides slower
    a = spawn("-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q", "--basetemp", str(tmp_path / "a"),
              "tests/integration/test_team_queues.py", "tests/integration/test_priorities.py", env=env)
    b = spawn("-m", "pytest", "-p", "no:cacheprovider", "-q", "--basetemp", str(tmp_path / "b"),
              "tests/integration/test_single_queue.py", "tests/integration/test_bad_submissions.py", env=env)
    rcs = [run.wait(SUITES) for run in (a, b)]
    assert rcs == [0, 0], f"run A:\n{a.output[-3000:]}\nrun B:\n{b.output[-3000:]}"
    # Every test of both selections passed: the summary names nothing but passes (no skip, xfail or error).
    assert all(re.search(r"^\d+ passed in [\d.]+s", run.output, re.M) for run in (a, b)), (a.output[-1500:], b.output[-1500:])

    records_a, records_b = cluster_records(tmp_path / "a"), cluster_records(tmp_path / "b")
    assert len(records_a) == 2, f"each xdist worker of run A should start its own cluster: {records_a}"
    assert len(records_b) == 1, records_b
    assert len({r["harness_pid"] for r in records_a}) == 2, "both of A's clusters came from one worker"
    assert_disjoint(records_a + records_b)
    assert not processes_under(tmp_path), "left running after both runs ended"
    ports = {p for r in records_a + records_b for p in r["ports"].values()}
    assert not leftovers([], ports)
