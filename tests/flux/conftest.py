"""Fixtures of the Flux end-to-end tests: one local cluster with the real source-controller and
kustomize-controller for the whole directory, bootstrapped from this working tree through the
local Git server; each test starts from that first commit and leaves the fleet there again."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cluster import PoolNodes
from harness.core import REPO_ROOT
from harness.gitops.flux import KUSTOMIZATION, NODES_OF, Fleet, FluxError
from harness.kueue.invariants import InvariantChecker
from harness.k8s.client import Kube
from harness.cluster.local_cluster import ClusterError, LocalCluster
from harness.cluster.processes import ProcessError
from harness.core import timeouts
from harness.kueue.queues import Queues
from harness.gitops.timeline import Timeline
from harness.k8s import CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, RESOURCE_FLAVOR  # Timeline takes ResourceTypes


@dataclass
class FluxRun:
    cluster: LocalCluster
    fleet: Fleet
    timeline: Timeline  # everything seen since before the bootstrap commit
    seed: str           # the commit of this working tree

    @property
    def kube(self) -> Kube:
        return self.fleet.kube

    @property
    def log_dir(self) -> Path:  # component log tails on failure (tests/conftest.py)
        return self.cluster.log_dir


@pytest.fixture(scope="session")
def flux_run(request, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("flux")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    cluster = LocalCluster(workdir)
    fleet = timeline = None
    try:
        with capture.global_and_fixture_disabled():  # start-up progress reaches the terminal
            cluster.start()
            fleet = Fleet(cluster, workdir / "fleet").start()
        timeline = Timeline(cluster.api_client(), [KUSTOMIZATION, CLUSTER_QUEUE, LOCAL_QUEUE, RESOURCE_FLAVOR, NAMESPACE]).start()
        seed = fleet.bootstrap()
        fleet.wait_ready(seed, timeout=timeouts.FLUX_BOOTSTRAP)
        # The pools behind clusters/local's quotas: the jobs Flux's queues admit run their pods there.
        PoolNodes(fleet.kube, Queues(fleet.kube).namespace).add(REPO_ROOT, NODES_OF)
    except (ProcessError, ClusterError, FluxError) as err:
        _teardown(cluster, fleet, timeline)
        pytest.fail(f"Flux on the local cluster did not come up: {err}", pytrace=False)
    except BaseException:
        _teardown(cluster, fleet, timeline)
        raise
    yield FluxRun(cluster, fleet, timeline, seed)
    _teardown(cluster, fleet, timeline)


def _teardown(cluster, fleet, timeline) -> None:
    if timeline:
        timeline.stop()
    try:
        if fleet:
            fleet.stop()
    finally:
        cluster.stop()


@pytest.fixture
def run(flux_run):
    """The fleet at the seed commit, every Kustomization Ready there, no RayJobs; restored after."""
    yield flux_run
    fleet = flux_run.fleet
    Queues(flux_run.kube).remove_jobs()
    fleet.wc.restore(flux_run.seed)
    if fleet.wc.changed():
        fleet.wait_ready(fleet.push("back to the seed commit's tree"))


@pytest.fixture
def queues(run) -> Queues:
    return Queues(run.kube, timeout=timeouts.DECISION)


@pytest.fixture(autouse=True)
def invariants(request):
    """The invariant checker beside every Flux test, as beside every integration test."""
    if "run" not in request.fixturenames:
        yield None
        return
    checker = InvariantChecker(request.getfixturevalue("run").cluster.api_client()).start()
    yield checker
    checker.stop()
    checker.assert_held()
