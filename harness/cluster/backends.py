"""Cluster backends for the behavioural tests: one interface, three ways to get a cluster.

  local     the embedded control plane (etcd, kube-apiserver, kube-controller-manager, Kueue,
            KubeRay operator as local processes); the default, needs no Docker, never skips
  kind      a kind cluster of the pinned node image (Kubernetes 1.35, by digest), created with kind
            and kubectl built from their pinned modules, one cluster name per run, its files in
            the run's work directory; the pinned Kueue and KubeRay installed. Needs a Docker
            engine and the registries the images come from (harness/cluster/kind_cluster.py)
  existing  the cluster of a kubeconfig (RAY_KUEUE_KUBECONFIG), e.g. a staging AKS cluster
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kubernetes import client, config

from harness.cluster.kind_cluster import KindCluster, kind_plan
from harness.cluster.kind_install import install_controllers
from harness.core import HarnessError, timeouts


class BackendUnavailable(HarnessError):
    """The backend cannot run on this machine; the message says why (tests skip with it)."""


@dataclass
class Backend:
    name: str
    kubeconfig: Path
    log_dir: Path | None = None
    _close: Callable[[], None] = field(default=lambda: None, repr=False)

    def api_client(self) -> client.ApiClient:
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=cfg)
        return client.ApiClient(cfg)

    def close(self) -> None:
        self._close()


def local(workdir: Path) -> Backend:
    from harness.cluster.local_cluster import LocalCluster

    cluster = LocalCluster(workdir)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return Backend("local", cluster.kubeconfig, cluster.log_dir, cluster.stop)


def docker_problem() -> str | None:
    """Why kind cannot run here, or None when a Docker engine answers."""
    if not shutil.which("docker"):
        return "no docker CLI on PATH"
    proc = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                          timeout=timeouts.DOCKER_PROBE)
    if proc.returncode != 0:
        return f"no Docker engine answers (`docker info`: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'})"
    return None


def kind(workdir: Path) -> Backend:
    """A kind cluster by kind_plan(workdir); builds kind and kubectl only once Docker answers."""
    problem = docker_problem()
    if problem:
        raise BackendUnavailable(f"kind backend needs a Docker engine: {problem}")
    cluster = KindCluster(kind_plan(workdir / "kind"))
    cluster.create()
    try:
        install_controllers(cluster)
    except BaseException:
        cluster.delete(export_logs=True)
        raise
    return Backend("kind", cluster.kubeconfig, None, cluster.delete)


def existing() -> Backend:
    path = os.environ.get("RAY_KUEUE_KUBECONFIG")
    if not path:
        raise BackendUnavailable("existing backend needs RAY_KUEUE_KUBECONFIG=<kubeconfig of a staging cluster>")
    if not Path(path).is_file():
        raise BackendUnavailable(f"RAY_KUEUE_KUBECONFIG={path} is not a file")
    return Backend("existing", Path(path))
