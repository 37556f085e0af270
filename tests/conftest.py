"""Shared pytest wiring: the cluster backend option and a copy of the repository to break."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from harness.core import StopSignals
from harness.testing import copy_config

pytest_plugins = ["harness.testing.pytest_summary"]


def pytest_configure(config):
    # SIGTERM and SIGHUP (timeout, a cancelled CI job, `make rehearse` stopping a side) end the run as Ctrl-C does:
    # pytest reports it interrupted (exit 2) after tearing down its clusters. The SystemExit harness.cluster would
    # raise instead is, inside a test, only that test's failure, and the run went on.
    StopSignals(signals=(signal.SIGTERM, signal.SIGHUP)).install()


def pytest_addoption(parser):
    parser.addoption(
        "--backend",
        default=os.environ.get("RAY_KUEUE_BACKEND", "local"),
        choices=("local", "kind", "existing"),
        help="cluster backend for integration tests (env RAY_KUEUE_BACKEND): local (embedded control plane, "
        "default), kind (the pinned kind and kindest/node 1.35 image, needs Docker) or existing (RAY_KUEUE_KUBECONFIG of a staging cluster)",
    )


@pytest.fixture
def kueue_config():
    """The Kueue Configuration of fresh_cluster: None, the production HelmRelease's; a test module
    overrides this fixture to run another (tests/faults/test_restarts.py: as the upgrade would)."""
    return None


@pytest.fixture
def fresh_cluster(request, tmp_path, kueue_config):
    """A LocalCluster of the test's own (faults break it, scale loads it); teardown proves that
    nothing of it is left running or bound."""
    from harness.cluster import ClusterError, LocalCluster, ProcessError

    capture = request.config.pluginmanager.getplugin("capturemanager")
    c = LocalCluster(tmp_path / "cluster", kueue_config=kueue_config)
    try:
        with capture.global_and_fixture_disabled():  # start-up progress reaches the terminal
            c.start()
    except (ProcessError, ClusterError) as err:
        pytest.fail(f"local cluster did not start: {err}", pytrace=False)
    yield c
    c.stop()
    assert not c.leftovers(), f"left behind after stop(): {c.leftovers()}"


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A throwaway copy of the repository's configuration, for tests that break it on purpose."""
    return copy_config(tmp_path / "repo")


def pytest_collection_modifyitems(config, items):
    """Tests marked `kind` check the kind and kubectl builds, which only `--backend=kind` makes
    (scripts/build-tools --group kind): on any other backend they are deselected, not skipped."""
    if config.getoption("--backend") == "kind":
        return
    kept = [i for i in items if "kind" not in i.keywords]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if "kind" in i.keywords])
        items[:] = kept


# Tests that run on the embedded control plane; in CI none of them may skip there.
CLUSTER_MARKERS = ("integration", "flux", "faults", "harness", "scale")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (report.skipped and os.environ.get("CI") and item.config.getoption("--backend") == "local"
            and any(m in item.keywords for m in CLUSTER_MARKERS)):
        # The embedded control plane runs everywhere; a skip there hides a missing component.
        report.outcome = "failed"
        report.longrepr = f"test skipped on the local backend in CI: {report.longrepr}"
        return
    if report.when == "call" and report.failed:
        tails = [_log_tails(d) for d in _log_dirs(item)]
        if tails:
            report.sections.append(("component logs", "\n".join(tails)))


def _log_dirs(item) -> list[Path]:
    """The log directories of the clusters this test used: any fixture value with a log_dir."""
    dirs = []
    for value in getattr(item, "funcargs", {}).values():
        d = getattr(value, "log_dir", None)
        if isinstance(d, Path) and d.is_dir() and d not in dirs:
            dirs.append(d)
    return dirs


def _log_tails(log_dir: Path, lines: int = 15) -> str:
    out = []
    for log in sorted(log_dir.glob("*.log")):
        tail = [line[:300] for line in log.read_text(errors="replace").splitlines()[-lines:]]
        out.append(f"--- {log.name} (last {len(tail)} lines; full log kept at {log}) ---\n" + "\n".join(tail))
    return "\n".join(out)
