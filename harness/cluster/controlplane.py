"""An embedded Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager as
local processes, in the manner of controller-runtime's envtest.

    cp = ControlPlane(workdir)
    cp.start()            # bounded; raises ProcessError with the log tail on failure
    cp.kubeconfig         # admin kubeconfig (client certificate in system:masters)
    cp.stop()

There is no kubelet and no scheduler: pods stay Pending. The controller-manager runs the
controllers that make API objects behave (garbage collection, namespace deletion, Jobs,
ReplicaSets, ...), so ownerReference cascades and namespace deletion complete.
"""
from __future__ import annotations

import base64
import time
from pathlib import Path

import yaml
from kubernetes import client

from harness.cluster import certs
from harness.cluster.processes import Process, ProcessError, free_port, http_check, https_context, stop_in_reverse, wait_until
from harness.core import atomic_write, say, timeouts

SERVICE_CIDR = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"  # first address of SERVICE_CIDR; the `kubernetes` Service gets it

# What workloads need on simulated (KWOK) nodes; volume and cloud controllers would only log errors.
CONTROLLERS = (
    "garbage-collector-controller",  # ownerReference cascades (Workloads of deleted RayJobs, RayClusters, ...)
    "namespace-controller",          # namespace deletion would otherwise hang in Terminating
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",  # the admin/edit/view roles, incl. Kueue's and KubeRay's aggregated rules
    "job-controller",                # Kueue's batch/job integration and KubeRay's submitter Jobs
    "cronjob-controller",
    "ttl-after-finished-controller",
    "replicaset-controller",
    "deployment-controller",
    "statefulset-controller",
    "daemonset-controller",          # a layer's DaemonSets run a pod on every matching (KWOK) node, as on AKS
    "pod-garbage-collector-controller",
    "resourcequota-controller",
    "endpointslice-controller",
    "disruption-controller",
    "node-lifecycle-controller",     # lifts the not-ready taint once KWOK's heartbeats make a node Ready
)


class ControlPlane:
    def __init__(self, workdir: Path, *, log_dir: Path | None = None, binaries: dict[str, Path] | None = None,
                 start_timeout: float = timeouts.CLUSTER_START, controllers: tuple[str, ...] = CONTROLLERS,
                 extra_apiserver_args: tuple[str, ...] = ()):
        self.workdir = Path(workdir).resolve()
        self.log_dir = Path(log_dir).resolve() if log_dir else self.workdir / "logs"
        self.pki = self.workdir / "pki"
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        self.start_timeout = start_timeout
        self.controllers = controllers
        self.extra_apiserver_args = tuple(extra_apiserver_args)
        self._binaries = dict(binaries) if binaries else None
        self.processes: list[Process] = []
        self.ports: dict[str, int] = {}
        self.timings: dict[str, float] = {}
        self.host = ""
        self.etcd_url = ""
        self._t_start = 0.0
        self.ca: certs.CA | None = None

    # -- files --------------------------------------------------------------------------------
    @property
    def ca_file(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def admin_cert(self) -> tuple[Path, Path]:
        return self.pki / "admin.crt", self.pki / "admin.key"

    def binaries(self) -> dict[str, Path]:
        if self._binaries is None:
            from harness import toolchain as tools# builds on first use; a cached build is only checked

            t = tools.ensure("kube", "etcd")
            self._binaries = {
                "etcd": t["etcd"].path("etcd"),
                "kube-apiserver": t["kube"].path("kube-apiserver"),
                "kube-controller-manager": t["kube"].path("kube-controller-manager"),
            }
        return self._binaries

    def _write_pki(self) -> None:
        self.ca = ca = certs.CA.create("aks-ray-kueue-local-ca")
        ca.write(self.pki, "ca")
        ca.issue_server(
            "kube-apiserver",
            ips=("127.0.0.1", KUBERNETES_SERVICE_IP),
            dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local"),
        ).write(self.pki, "apiserver")
        ca.issue_server("kube-controller-manager").write(self.pki, "controller-manager")
        # One CA signs serving and client certs: a single trust root keeps the kubeconfig simple.
        ca.issue_client("admin", ("system:masters",)).write(self.pki, "admin")
        # The aggregation layer's own CA: components that authenticate requests (KCM, Kueue's
        # metrics filter) read it from the extension-apiserver-authentication ConfigMap and
        # log errors every few seconds when it is missing.
        front_proxy = certs.CA.create("aks-ray-kueue-local-front-proxy-ca")
        front_proxy.write(self.pki, "front-proxy-ca")
        front_proxy.issue_client("front-proxy-client").write(self.pki, "front-proxy-client")
        sa = certs.new_key()  # signs service-account tokens; the apiserver verifies with the public half
        atomic_write(self.pki / "sa.key", certs.key_pem(sa), mode=0o600)
        atomic_write(self.pki / "sa.pub", certs.public_pem(sa))

    def _write_kubeconfig(self) -> None:
        b64 = lambda p: base64.b64encode(Path(p).read_bytes()).decode()  # noqa: E731
        crt, key = self.admin_cert
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": {"server": self.host, "certificate-authority-data": b64(self.ca_file)}}],
            "users": [{"name": "admin", "user": {"client-certificate-data": b64(crt), "client-key-data": b64(key)}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "local",
        }
        atomic_write(self.kubeconfig, yaml.safe_dump(doc, sort_keys=False), mode=0o600)

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "ControlPlane":
        """etcd, kube-apiserver (until /readyz), the kubeconfig, then kube-controller-manager."""
        self.start_apiserver()
        self.start_controller_manager()
        return self

    def start_apiserver(self) -> "ControlPlane":
        """The first half of start(): etcd and kube-apiserver, ready for requests."""
        try:
            t0 = time.monotonic()
            bins = self.binaries()
            self.timings["tools"] = time.monotonic() - t0
            self._t_start = time.monotonic()
            self.workdir.mkdir(parents=True, exist_ok=True)
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._write_pki()
            self._start_etcd(bins["etcd"])
            self._start_apiserver(bins["kube-apiserver"])
            self._write_kubeconfig()
        except BaseException:
            self.stop()  # never leave half a control plane running
            raise
        return self

    def start_controller_manager(self) -> "ControlPlane":
        """The second half of start(). Callers that install many CRDs first save the
        controller-manager's re-discovery on every CRD (a few seconds on 2 cores)."""
        try:
            self._start_controller_manager(self.binaries()["kube-controller-manager"])
        except BaseException:
            self.stop()
            raise
        self.timings["control-plane"] = time.monotonic() - self._t_start
        say("cluster", f"control plane ready at {self.host} (logs: {self.log_dir})")
        return self

    def _spawn(self, name: str, argv: list) -> Process:
        proc = Process(name, argv, self.log_dir, cwd=self.workdir).start()
        self.processes.append(proc)
        return proc

    def _start_etcd(self, binary: Path) -> None:
        client_port, peer_port = free_port(), free_port()
        self.ports.update({"etcd": client_port, "etcd-peer": peer_port})
        url, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
        say("cluster", f"starting etcd on {url}")
        proc = self._spawn("etcd", [
            binary, "--name=node0", f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={url}", f"--advertise-client-urls={url}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=node0={peer}",
            "--unsafe-no-fsync=true",  # throwaway data: fsync only costs time
            "--auto-compaction-retention=1", "--log-level=warn",
        ])
        self.etcd_url = url
        self.timings["etcd"] = wait_until(http_check(f"{url}/health"), self.start_timeout, "etcd /health", [proc])

    def _start_apiserver(self, binary: Path) -> None:
        port = free_port()
        self.ports["kube-apiserver"] = port
        self.host = f"https://127.0.0.1:{port}"
        say("cluster", f"starting kube-apiserver on {self.host}")
        proc = self._spawn("kube-apiserver", [
            binary,
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={self.pki}",
            f"--tls-cert-file={self.pki / 'apiserver.crt'}", f"--tls-private-key-file={self.pki / 'apiserver.key'}",
            f"--client-ca-file={self.ca_file}",
            "--authorization-mode=RBAC",
            f"--requestheader-client-ca-file={self.pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self.pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={self.pki / 'front-proxy-client.key'}",
            f"--service-account-key-file={self.pki / 'sa.pub'}",
            f"--service-account-signing-key-file={self.pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            # No kubelet and no token controller race: pods must not wait for a `default` ServiceAccount.
            "--disable-admission-plugins=ServiceAccount",
            # Endpoints may not hold a loopback address, so the `kubernetes` Service gets none.
            "--endpoint-reconciler-type=none",
            # One client (the tests) on 2 cores: flow control only adds latency.
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            *self.extra_apiserver_args,
        ])
        self.timings["kube-apiserver"] = self._wait_apiserver(proc)

    def _wait_apiserver(self, proc: Process) -> float:
        ctx = https_context(self.ca_file, self.admin_cert)
        took = wait_until(http_check(f"{self.host}/readyz", ctx), self.start_timeout, "kube-apiserver /readyz", [proc], interval=0.2)
        # envtest waits for the `default` namespace too; it is created by a post-start hook.
        wait_until(http_check(f"{self.host}/api/v1/namespaces/default", ctx), timeouts.DEFAULT_NAMESPACE, "namespace default",
                   [proc])
        return took

    def process(self, name: str) -> Process:
        found = [p for p in self.processes if p.name == name]
        if not found:
            raise ProcessError(f"no {name} in this control plane (it has {[p.name for p in self.processes]})")
        return found[0]

    def restart_apiserver(self, *, kill: bool = False) -> float:
        """kube-apiserver stopped (or SIGKILLed) and started again on the same port, certificates
        and etcd, so every client's kubeconfig stays valid; returns the seconds until ready."""
        proc = self.process("kube-apiserver")
        say("cluster", f"{'killing' if kill else 'stopping'} and restarting kube-apiserver (etcd kept)")
        t = time.monotonic()
        proc.restart(kill=kill)
        self._wait_apiserver(proc)
        return time.monotonic() - t

    def _start_controller_manager(self, binary: Path) -> None:
        port = free_port()
        self.ports["kube-controller-manager"] = port
        say("cluster", "starting kube-controller-manager")
        proc = self._spawn("kube-controller-manager", [
            binary,
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--tls-cert-file={self.pki / 'controller-manager.crt'}",
            f"--tls-private-key-file={self.pki / 'controller-manager.key'}",
            f"--service-account-private-key-file={self.pki / 'sa.key'}",
            f"--root-ca-file={self.ca_file}",
            f"--controllers={','.join(self.controllers)}",
        ])
        self.timings["kube-controller-manager"] = wait_until(
            http_check(f"https://127.0.0.1:{port}/healthz", https_context(self.ca_file)),
            self.start_timeout, "kube-controller-manager /healthz", [proc], interval=0.2)

    def stop(self) -> None:
        """Stops every process in reverse start order; safe to call twice or after a failed start."""
        errors = stop_in_reverse(self.processes)
        if errors:
            raise ProcessError("stopping the control plane failed: " + "; ".join(errors))

    def __enter__(self) -> "ControlPlane":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- clients ------------------------------------------------------------------------------
    def client_configuration(self) -> client.Configuration:
        cfg = client.Configuration()
        cfg.host = self.host
        cfg.ssl_ca_cert = str(self.ca_file)
        cfg.cert_file, cfg.key_file = (str(p) for p in self.admin_cert)
        cfg.verify_ssl = True
        return cfg

    def api_client(self) -> client.ApiClient:
        """A kubernetes-client ApiClient authenticated as the admin (system:masters)."""
        return client.ApiClient(self.client_configuration())
