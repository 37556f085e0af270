"""The local cluster: the embedded control plane plus the real Kueue and KubeRay operator,
all as local processes (no containers).

    cluster = LocalCluster(workdir)
    cluster.start()          # CRDs, KubeRay, Kueue, Kueue's webhooks; bounded, raises with log tails
    cluster.kubeconfig       # admin kubeconfig
    cluster.api_client()     # kubernetes.client.ApiClient
    cluster.log_dir          # one log file per component, kept after stop()
    cluster.stop()

The operators run as their production HelmReleases configure them (harness.cluster.operators).
The CRDs (Kueue's config/components/crd/bases and KubeRay's config/crd/bases, from the pinned
Go modules) come with the etcd data, copied from a cached seed (harness.cluster.seed).

    python -m harness.cluster      # what `make cluster` / scripts/cluster run
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

from kubernetes import client

from harness.cluster.controlplane import ControlPlane
from harness.cluster.kueue_certs import mount_serving_cert, wire_webhook_service
from harness.cluster.nodes import kwok_process, node_objects, scheduler_process
from harness.cluster.operators import (KUEUE_NAMESPACE, ClusterError, apply_webhook_configurations, kuberay_process,
                                       kueue_process, kueue_webhook_configurations, local_kueue_config,
                                       production_kueue_config, webhook_probe)
from harness.cluster.processes import (Process, ProcessError, Startable, free_port, http_check, https_context, port_is_free, stop_in_reverse,
                                      wait_until)
from harness.cluster.seed import seed_etcd
from harness.core import atomic_write, say, timeouts
from harness.k8s import WaitTimeout, crd_documents, ensure_namespace, wait_crds_established

__all__ = ["ClusterError", "LocalCluster", "local_kueue_config", "production_kueue_config"]


class LocalCluster(Startable):
    def __init__(self, workdir: Path, *, log_dir: Path | None = None, start_timeout: float = timeouts.CLUSTER_START,
                 kueue_config: dict | None = None):
        """`kueue_config`: the Kueue Configuration to run instead of the production HelmRelease's
        (e.g. with waitForPodsReady); the changes a process outside the cluster needs go on top."""
        self.workdir = Path(workdir).resolve()
        self._kueue_base = kueue_config
        self.log_dir = Path(log_dir).resolve() if log_dir else self.workdir / "logs"
        self.start_timeout = start_timeout
        self.control_plane = ControlPlane(self.workdir, log_dir=self.log_dir, start_timeout=start_timeout)
        self.processes: list[Process] = []  # KubeRay and Kueue; the control plane keeps its own
        self.ports: dict[str, int] = {}
        self.timings: dict[str, float] = {}
        self.kueue_config_path = self.workdir / "kueue" / "config.yaml"
        self.kueue_config: dict = {}  # the Configuration Kueue runs with, once started
        self._api: client.ApiClient | None = None
        self._stopped = False
        self._healthy: dict[str, Callable[[], object]] = {}  # kube-scheduler, kwok: their /healthz checks

    @property
    def kubeconfig(self) -> Path:
        return self.control_plane.kubeconfig

    def api_client(self) -> client.ApiClient:
        """A new kubernetes-client ApiClient with admin (system:masters) credentials."""
        return self.control_plane.api_client()

    @property
    def record_path(self) -> Path:
        """cluster.json in the workdir, written once the cluster is ready: what it runs and binds."""
        return self.workdir / "cluster.json"

    def describe(self) -> dict:
        return {"harness_pid": os.getpid(), "workdir": str(self.workdir), "kubeconfig": str(self.kubeconfig),
                "etcd_data": str(self.workdir / "etcd"), "logs": str(self.log_dir), "ports": self.all_ports(),
                "processes": {p.name: p.pid for p in self.all_processes()}}

    def all_processes(self) -> list[Process]:
        return self.control_plane.processes + self.processes

    def all_ports(self) -> dict[str, int]:
        return {**self.control_plane.ports, **self.ports}

    # -- start (Startable.start: a failed start stops what it started) --------------------------
    def _start(self) -> None:
        from harness import toolchain as tools  # a cached build is only checked; a missing one is built with progress

        t0 = time.monotonic()
        t = tools.ensure(*tools.CLUSTER_TOOLS)
        kueue_src, kuberay_src = tools.module_dir("kueue"), tools.module_dir("kuberay")
        self.timings["tools"] = time.monotonic() - t0

        crds = crd_documents(kueue_src / "config/components/crd/bases") + crd_documents(kuberay_src / "config/crd/bases")
        t1 = time.monotonic()
        seed_etcd(crds, self.control_plane.binaries(), self.workdir / "etcd", self.log_dir / "seed", self.start_timeout)
        self.timings["etcd-seed"] = time.monotonic() - t1
        self.control_plane.start_apiserver()
        self._api = self.api_client()

        self.ports.update({"kueue-webhook": free_port(), "kueue-health": free_port(),
                           "kuberay-metrics": free_port(), "kuberay-health": free_port()})
        cert_dir = self.workdir / "kueue" / "certs"

        t2 = time.monotonic()
        ensure_namespace(self._api, KUEUE_NAMESPACE)
        try:
            wait_crds_established(self._api, {c["metadata"]["name"] for c in crds}, timeouts.DECISION)
        except WaitTimeout as err:
            raise ClusterError(str(err)) from None
        self.timings["crds"] = time.monotonic() - t2
        base = self._kueue_base if self._kueue_base is not None else production_kueue_config()
        self.kueue_config = local_kueue_config(base, webhook_port=self.ports["kueue-webhook"],
                                               cert_dir=cert_dir, health_port=self.ports["kueue-health"])
        # Installed before Kueue starts, as the chart installs them: its cert rotator injects their CA.
        wire_webhook_service(self._api, KUEUE_NAMESPACE, self.ports["kueue-webhook"])
        apply_webhook_configurations(self._api, kueue_webhook_configurations(
            kueue_src / "config/components/webhook/manifests.yaml", self.ports["kueue-webhook"], self.kueue_config))

        # The controller-manager and both operators start together: they only need the CRDs.
        self.control_plane.start_controller_manager()
        self.timings.update({f"control-plane/{k}": v for k, v in self.control_plane.timings.items()})
        kuberay = self._spawn(kuberay_process(t["kuberay"].path("ray-operator"), self.kubeconfig, self.ports,
                                              self.log_dir, self.workdir))
        kueue = self._spawn(kueue_process(t["kueue"].path("kueue"), self.kueue_config, self.kueue_config_path,
                                          self.kubeconfig, self.log_dir, self.workdir))
        t3 = time.monotonic()
        try:
            mount_serving_cert(self._api, KUEUE_NAMESPACE, cert_dir)
        except WaitTimeout as err:
            raise ClusterError(kueue.describe_failure(str(err))) from None
        self.timings["kueue-certs"] = time.monotonic() - t3
        # kube-scheduler and KWOK come up while Kueue starts on its certificate.
        self._start_listening("kube-scheduler", lambda port: scheduler_process(
            t["kube-scheduler"].path(), self.kubeconfig, port, self.log_dir, self.workdir),
            lambda port: http_check(f"https://127.0.0.1:{port}/healthz", https_context()))
        self._start_listening("kwok", lambda port: kwok_process(
            t["kwok"].path(), tools.module_dir("kwok"), self.kubeconfig, port, self.log_dir, self.workdir),
            lambda port: http_check(f"http://127.0.0.1:{port}/healthz"))
        self._wait_kueue_ready(kueue, [kueue, kuberay])
        self.timings["kueue-readyz"] = time.monotonic() - t3
        self._wait_webhooks("Kueue webhooks to serve the apiserver (dry-run ResourceFlavor)", [kueue])
        self._wait_kuberay_ready(kuberay)
        self.timings["operators"] = time.monotonic() - t3
        self.timings["start"] = time.monotonic() - t1
        atomic_write(self.record_path, json.dumps(self.describe(), indent=2) + "\n")
        say("cluster", f"ready in {self.timings['start']:.1f}s (kube-apiserver {self.control_plane.timings['kube-apiserver']:.1f}s, "
                       f"CRDs {self.timings['crds']:.1f}s, Kueue+KubeRay {self.timings['operators']:.1f}s); "
                       f"logs in {self.log_dir}")

    def _spawn(self, proc: Process) -> Process:
        self.processes.append(proc)
        return proc

    def _start_listening(self, name: str, start: Callable[[int], Process], healthy: Callable[[int], Callable]) -> Process:
        """Starts a component on a port of its own and waits until it is healthy. Between free_port
        and the child's bind another process can take the port (parallel runs, xdist workers): a
        child that exits with "address already in use" is started again on another port."""
        for attempt in range(1, 4):
            port = self.ports[name] = free_port()
            proc = self._spawn(start(port))
            try:
                self._healthy[name] = healthy(port)
                wait_until(self._healthy[name], self.start_timeout, f"{name} /healthz", [proc])
                return proc
            except ProcessError:
                if attempt == 3 or proc.alive() or "address already in use" not in proc.log_tail():
                    raise
                self.processes.remove(proc)
                say("cluster", f"{name}: port {port} was taken before it could bind; starting it on another")
        raise AssertionError("unreachable")

    def _wait_kueue_ready(self, kueue: Process, watch: list[Process]) -> None:
        wait_until(http_check(f"http://127.0.0.1:{self.ports['kueue-health']}/readyz"), self.start_timeout,
                   "Kueue /readyz", watch)

    def _wait_kuberay_ready(self, kuberay: Process) -> None:
        wait_until(http_check(f"http://127.0.0.1:{self.ports['kuberay-health']}/readyz"), self.start_timeout,
                   "KubeRay operator /readyz", [kuberay])

    def _wait_webhooks(self, describe: str, watch: list[Process], timeout: float = timeouts.WEBHOOKS_READY) -> None:
        wait_until(lambda: webhook_probe(self._api), timeout, describe, watch)

    # -- faults (tests/faults) -----------------------------------------------------------------
    def process(self, name: str) -> Process:
        """One of the cluster's processes by its role (kueue, kuberay-operator, kube-apiserver, etcd, ...)."""
        for proc in self.processes:
            if proc.name == name:
                return proc
        return self.control_plane.process(name)

    def restart_kueue(self, *, kill: bool = True, while_down: Callable[[], object] | None = None) -> float:
        """Kueue SIGKILLed (default) or stopped, then started with the same configuration; returns
        the seconds until it is ready again (readyz and both webhooks answering). `while_down`
        runs between the two, to let the rest of the cluster move on without it."""
        proc = self.process("kueue")
        say("cluster", f"{'killing' if kill else 'stopping'} and restarting Kueue")
        t = time.monotonic()
        proc.restart(kill=kill, while_down=while_down)
        self._wait_kueue_ready(proc, [proc])
        self._wait_webhooks("Kueue webhooks after the restart", [proc])
        return time.monotonic() - t

    def restart_kuberay(self, *, kill: bool = False, while_down: Callable[[], object] | None = None) -> float:
        proc = self.process("kuberay-operator")
        say("cluster", f"{'killing' if kill else 'stopping'} and restarting the KubeRay operator")
        t = time.monotonic()
        proc.restart(kill=kill, while_down=while_down)
        self._wait_kuberay_ready(proc)
        return time.monotonic() - t

    def restart_node_component(self, name: str, *, kill: bool = True, while_down: Callable[[], object] | None = None) -> float:
        """kube-scheduler or KWOK (the simulated kubelets) SIGKILLed (default) or stopped and started
        again on its port; returns the seconds until its /healthz answers again."""
        proc = self.process(name)
        say("cluster", f"{'killing' if kill else 'stopping'} and restarting {name}")
        t = time.monotonic()
        proc.restart(kill=kill, while_down=while_down)
        wait_until(self._healthy[name], self.start_timeout, f"{name} /healthz after the restart", [proc])
        return time.monotonic() - t

    def restart_apiserver(self, *, kill: bool = False) -> float:
        """kube-apiserver restarted with etcd kept; then waits until Kueue's webhooks answer through it."""
        t = time.monotonic()
        self.control_plane.restart_apiserver(kill=kill)
        self._wait_webhooks("Kueue webhooks through the restarted kube-apiserver", self.processes, timeouts.APISERVER_BACK)
        return time.monotonic() - t

    # -- stop ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stops Kueue, KubeRay, then the control plane (reverse start order). Idempotent; logs stay in log_dir (the caller
        says where, or removes them)."""
        errors = stop_in_reverse(self.processes)
        try:
            self.control_plane.stop()
        except Exception as err:
            errors.append(str(err))
        if self._api is not None:
            self._api.close()
            self._api = None
        if not self._stopped:
            self._stopped = True
            say("cluster", "stopped")
        if errors:
            raise ClusterError("teardown failed: " + "; ".join(errors))

    def leftovers(self) -> list[str]:
        """What is still alive or bound after stop(): empty when teardown was clean."""
        out = [f"process {p.name} (pid {p.pid}) alive" for p in self.all_processes() if p.group_alive()]
        out += [f"port {port} ({name}) still bound" for name, port in self.all_ports().items() if not port_is_free(port)]
        return out
