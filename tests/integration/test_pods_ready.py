"""waitForPodsReady, where the Kueue configuration enables it: a plane of the module's own runs
the production Kueue Configuration plus `waitForPodsReady` (the production HelmRelease leaves it
off; Kueue 0.19 turns it on by default, kueue#11855). A job with a pod no node can take is evicted
when the timeout expires (reason PodsReadyTimeout), its RayJob suspended and its pods deleted, to
be requeued after the backoff.

What this plane cannot show: a RayJob whose pods all run reaching PodsReady=True. Kueue reads it
from the RayJob's status.rayClusterStatus.state, which KubeRay refreshes only after it has asked
the Ray dashboard for the job's state; without Ray that call fails ("Failed to get job info"), so
here every RayJob would time out (seen on this plane: its RayCluster ready, the RayJob's copy not)."""
from __future__ import annotations

import pytest

from harness.cluster import LocalCluster, Names, add_nodes, production_kueue_config
from harness.core import timeouts
from harness.gate import build_directory, render_sample
from harness.k8s import POD, Kube, condition, is_true
from harness.kueue import InvariantChecker, Queues

pytestmark = pytest.mark.integration

PODS_READY_TIMEOUT_S = 20


@pytest.fixture(scope="module")
def ready_plane(request, tmp_path_factory):
    if request.config.getoption("--backend") != "local":
        pytest.skip("a Kueue configuration of the test's own needs the local backend (it restarts no shared Kueue)")
    cfg = production_kueue_config()
    assert "waitForPodsReady" not in cfg, "production enables waitForPodsReady now: test it on the session plane instead"
    # A long backoff keeps the evicted job out of the queue while the test looks at it.
    cfg["waitForPodsReady"] = {"timeout": f"{PODS_READY_TIMEOUT_S}s",
                               "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 3600}}
    cluster = LocalCluster(tmp_path_factory.mktemp("pods-ready") / "cluster", kueue_config=cfg)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        cluster.start()
    yield cluster
    cluster.stop()


def test_pods_that_never_become_ready_are_evicted(ready_plane, two_gpu_worker):
    assert ready_plane.kueue_config["waitForPodsReady"]["timeout"] == f"{PODS_READY_TIMEOUT_S}s"
    kube, names = Kube(ready_plane.api_client()), Names()
    queues = Queues(kube, names)
    checker = InvariantChecker(ready_plane.api_client()).start()
    try:
        add_nodes(kube, two_gpu_worker, "dev-westus3")
        queues.apply_objects(build_directory(two_gpu_worker, "clusters/dev-westus3/queues"))

        # The job that cannot run: its 2-GPU worker fits no node.
        queues.submit(render_sample("aurora-finetune", "default", {"JOB_NAME": "stuck"}, two_gpu_worker))
        queues.wait_admitted("stuck")
        kube.wait_for(*POD, lambda ps: any(p["metadata"]["name"].startswith("stuck-") and "-gpu-workers-" in p["metadata"]["name"]
                                           and "Insufficient nvidia.com/gpu" in (condition(p, "PodScheduled") or {}).get("message", "")
                                           for p in ps) or None,
                      "the 2-GPU worker Unschedulable (Insufficient nvidia.com/gpu)", names.namespace, timeouts.DECISION)
        evicted = queues.wait_workload(
            "stuck", lambda wl: (condition(wl, "Evicted") or {}).get("reason") == "PodsReadyTimeout" or None,
            "Evicted by the PodsReady timeout", timeout=PODS_READY_TIMEOUT_S + timeouts.DECISION)
        assert "PodsReady" in condition(evicted, "Evicted")["message"], condition(evicted, "Evicted")
        assert (evicted["status"].get("requeueState") or {}).get("count") == 1, evicted["status"]
        assert is_true(evicted, "Requeued") is False, "requeued only after the backoff"
        kube.wait_for(*POD, lambda ps: not [p for p in ps if p["metadata"]["name"].startswith("stuck-")] or None,
                      "the evicted job's pods deleted", names.namespace, timeouts.DECISION)
        assert queues.job("stuck")["spec"]["suspend"] is True
        # Evicted at 20 s, inside the checker's 30 s bound for binding: nothing to report.
        assert not checker.take("stuck-")

        queues.remove_jobs()
    finally:
        checker.stop()
    checker.assert_held()
