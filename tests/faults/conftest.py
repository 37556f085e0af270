"""Fixtures of the fault tests: every test breaks its own local cluster, so each gets a fresh one,
with the invariant checker following it through every restart; teardown proves nothing of it
is left running or bound."""
from __future__ import annotations

import pytest

from harness.core import timeouts
from harness.k8s import Kube
from harness.kueue import InvariantChecker, Queues


@pytest.fixture
def cluster(fresh_cluster):
    return fresh_cluster


@pytest.fixture
def kube(cluster) -> Kube:
    return Kube(cluster.api_client())


@pytest.fixture
def queues(kube) -> Queues:
    return Queues(kube, timeout=timeouts.LONG_DECISION)  # decisions behind a restart


@pytest.fixture
def invariants(cluster):
    checker = InvariantChecker(cluster.api_client()).start()
    yield checker
    checker.stop()
    checker.assert_held()
