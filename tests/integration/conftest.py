"""Fixtures of the behavioural tests: one cluster per session on the chosen backend, the queue
layout a test needs (applied with server-side apply, removed afterwards), and the invariant
checker running beside every test."""
from __future__ import annotations

import os

import pytest

from harness.cluster import backends
from harness.kueue.invariants import InvariantChecker
from harness.cluster.isolation import Names
from harness.k8s.client import Kube
from harness.kueue.queues import RAYJOB, WORKLOAD, Queues



@pytest.fixture(scope="session")
def backend(request, tmp_path_factory):
    name = request.config.getoption("--backend")
    workdir = tmp_path_factory.mktemp(f"cluster-{name}")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    try:
        # Tool builds (first run: ~25 min) and start-up print progress; let it reach the terminal.
        with capture.global_and_fixture_disabled():
            b = {"local": lambda: backends.local(workdir), "kind": lambda: backends.kind(workdir), "existing": backends.existing}[name]()
    except backends.BackendUnavailable as why:
        # The default backend must run everywhere, and a CI job dedicated to another backend
        # (RAY_KUEUE_REQUIRE_BACKEND=1) must not go green by skipping everything.
        if name == "local" or os.environ.get("RAY_KUEUE_REQUIRE_BACKEND") == "1":
            pytest.fail(f"{name} backend unavailable: {why}")
        pytest.skip(f"{name} backend unavailable: {why}")
    yield b
    b.close()


@pytest.fixture(scope="session")
def kube(backend) -> Kube:
    return Kube(backend.api_client())


@pytest.fixture(scope="session")
def names(backend, kube):
    """This run's namespace and name prefix; on a shared cluster its own namespace goes at the end."""
    names = Names.for_backend(backend.name)
    yield names
    if backend.name == "existing":
        kube.delete("v1", "Namespace", names.namespace)


@pytest.fixture
def queues(kube, names) -> Queues:
    return Queues(kube, names, timeout=float(os.environ.get("RAY_KUEUE_WAIT", "60")))


@pytest.fixture
def layout(kube, queues):
    """apply("overlays/team-queues") puts that layout on the cluster; everything is removed after."""
    applied: list[dict] = []

    def apply(directory: str) -> list[dict]:
        objs = queues.apply_layout(directory)
        applied.extend(objs)
        return objs

    yield apply
    # RayJobs first, then wait for Kueue to drop their Workloads, so no queue is deleted
    # while it still holds a workload (its finalizer would keep it Terminating).
    ns = queues.namespace
    for job in kube.list(*RAYJOB, namespace=ns):
        kube.delete(*RAYJOB, name=job["metadata"]["name"], namespace=ns)
    kube.wait_for(*RAYJOB, lambda items: not items or None, "all RayJobs deleted", ns, 60)
    kube.wait_for(*WORKLOAD, lambda items: not items or None, "all Workloads deleted", ns, 60)
    for o in reversed(applied):
        if o["kind"] != "Namespace":  # namespace deletion is slow and the next test wants it
            kube.delete(o["apiVersion"], o["kind"], o["metadata"]["name"], (o.get("metadata") or {}).get("namespace"))
    # Wait until every deleted object is really gone: a flavor still Terminating behind its
    # finalizer when the next test re-applies the layout would leave that test's queues inactive.
    kinds = {(o["apiVersion"], o["kind"]) for o in applied if o["kind"] != "Namespace"}
    for api_version, kind in sorted(kinds):
        ours = {o["metadata"]["name"] for o in applied if o["kind"] == kind}
        kube.wait_for(api_version, kind, lambda items: not ours & {i["metadata"]["name"] for i in items} or None,
                      f"the test's {kind} objects deleted", None, 60)


@pytest.fixture(autouse=True)
def invariants(request):
    """Runs the invariant checker beside every integration test and fails it on a violation."""
    if "integration" not in request.keywords or "kube" not in request.fixturenames:
        yield None
        return
    checker = InvariantChecker(request.getfixturevalue("backend").api_client()).start()
    yield checker
    checker.stop()
    checker.assert_held()
