"""Fixtures of the behavioural tests: one cluster per session on the chosen backend, the queue
layout a test needs (applied with server-side apply, removed afterwards), a scenario of
harness.kueue.scenarios run on its layout, and the invariant checker running beside every test."""
from __future__ import annotations

import os

import pytest

from harness.cluster import Names, PoolNodes, backends
from harness.core import REPO_ROOT, timeouts
from harness.k8s import Kube
from harness.kueue import Hook, InvariantChecker, Queues, Scenario, ScenarioRun, run_scenario
from tests.static.test_gate_corpus import edit


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
    return Queues(kube, names, timeout=float(os.environ.get("RAY_KUEUE_WAIT", timeouts.DECISION)))


@pytest.fixture
def layout(queues):
    """apply("overlays/team-queues") puts that layout on the cluster; everything is removed after."""
    yield queues.apply_layout
    queues.teardown()


@pytest.fixture
def nodes(kube, backend, queues, names):
    """nodes(root, cluster): that cluster's pool nodes on the local plane; afterwards the test's
    jobs and their pods go first (KWOK plays the kubelet that lets a bound pod go), then the nodes."""
    if backend.name != "local":
        pytest.skip(f"simulated (KWOK) nodes need the local backend; {backend.name} brings its own nodes")
    pool_nodes = PoolNodes(kube, names.namespace)
    yield pool_nodes.add
    queues.remove_jobs()
    pool_nodes.close()


@pytest.fixture
def scenario(request, backend, layout, queues):
    """scenario(scenarios.TEAM_QUEUES) applies its layout and runs it, every expectation awaited.
    A scenario that names a cluster runs with that cluster's pool nodes on the local plane (its
    pods are bound and become Running, the invariant checker requires it); kind has its own."""
    def run(sc: Scenario, hooks: list[Hook] = ()) -> ScenarioRun:
        layout(sc.layout)
        if sc.cluster and backend.name == "local":
            request.getfixturevalue("nodes")(REPO_ROOT, sc.cluster)
        return run_scenario(queues, sc, hooks)

    return run


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


@pytest.fixture
def two_gpu_worker(repo_copy):
    """A repository copy whose dev-westus3 cluster has two Standard_NC24ads_A100_v4 nodes (1 GPU
    each) and queue quota for both, and whose aurora-finetune sample's worker asks for 2 GPUs:
    admitted by quota (a sum over nodes), placeable on no node."""
    nc24 = "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml"
    edit(repo_copy, "terraform/clusters/dev-westus3.tfvars", "gpu_node_count = 1", "gpu_node_count = 2")
    edit(repo_copy, nc24, 'resources/0/nominalQuota, value: "23"}', 'resources/0/nominalQuota, value: "46"}')
    edit(repo_copy, nc24, "resources/1/nominalQuota, value: 200Gi}", "resources/1/nominalQuota, value: 400Gi}")
    edit(repo_copy, nc24, '/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "1"}',
         '/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "2"}')
    for _ in ("requests", "limits"):
        edit(repo_copy, "workloads/aurora-finetune.yaml", 'nvidia.com/gpu: "1"}', 'nvidia.com/gpu: "2"}')
    return repo_copy



@pytest.fixture
def create(kube: Kube):
    """create(objects) creates them, what a ClusterQueue names first (Cohorts, then flavors, checks
    and configs, then ClusterQueues, LocalQueues, Workloads: Kueue judges a Workload on what it has
    seen, and keeps that verdict's message); everything created is deleted after the test."""
    made: list[dict] = []
    order = {"Cohort": 0, "ClusterQueue": 2, "LocalQueue": 3, "Workload": 4}

    def create_all(objects: list[dict]) -> None:
        for obj in sorted(objects, key=lambda d: order.get(d["kind"], 1)):
            made.append(kube.create(obj))

    yield create_all
    for obj in reversed(made):
        kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
