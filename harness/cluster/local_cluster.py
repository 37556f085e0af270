"""The local cluster: the embedded control plane plus the real Kueue and KubeRay operator,
all as local processes (no containers).

    cluster = LocalCluster(workdir)
    cluster.start()          # CRDs, KubeRay, Kueue, Kueue's webhooks; bounded, raises with log tails
    cluster.kubeconfig       # admin kubeconfig
    cluster.api_client()     # kubernetes.client.ApiClient
    cluster.log_dir          # one log file per component, kept after stop()
    cluster.stop()

Kueue runs with the configuration of the production HelmRelease
(flux/infrastructure/controllers/kueue.yaml), changed only where a process outside a
cluster must differ: loopback addresses and free ports, no leader election, certificates
made here instead of by Kueue's internal cert manager, and no visibility API server.
The KubeRay operator gets the environment of its HelmRelease.

The CRDs (Kueue's config/components/crd/bases and KubeRay's config/crd/bases, from the
pinned Go modules) are installed with server-side apply once per set of pins into a seed
etcd that is cached under ~/.cache/aks-ray-kueue/seeds and copied into every new cluster:
installing them costs the apiserver 15-20 s on 2 cores, copying the seed 0.1 s.

    python -m harness.cluster.local_cluster      # what `make cluster` / scripts/cluster run
"""
from __future__ import annotations

import argparse
import base64
import copy
import functools
import fcntl
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml
from cryptography import x509
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from harness.cluster import certs
from harness.cluster.controlplane import ControlPlane
from harness.cluster.processes import Process, ProcessError, free_port, http_check, port_is_free, stop_in_reverse, wait_until
from harness.core import say
from harness.core import REPO_ROOT

KUEUE_NAMESPACE = "kueue-system"
KUEUE_HELMRELEASE = REPO_ROOT / "flux/infrastructure/controllers/kueue.yaml"
KUBERAY_HELMRELEASE = REPO_ROOT / "flux/infrastructure/controllers/kuberay-operator.yaml"
FIELD_MANAGER = "aks-ray-kueue-local-cluster"
# Kueue v0.17 reads the metrics serving cert from this hard-coded path whenever internal cert
# management is off, and exits if the files are missing, even with metrics disabled
# (cmd/kueue/main.go: metricsCertPath). There is no flag or config field for it, so the
# harness writes a cert there (it runs as root); see _ensure_kueue_metrics_cert.
KUEUE_METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
# The chart (charts/kueue/templates/webhook/manifests.yaml) treats these webhooks specially:
# they skip kube-system and Kueue's namespace, and fail closed only when their framework is
# enabled; with failurePolicy Fail they would otherwise block every pod while Kueue is down.
OPT_IN_WEBHOOKS = {"mpod.kb.io": "pod", "vpod.kb.io": "pod", "mdeployment.kb.io": "deployment",
                   "vdeployment.kb.io": "deployment", "mstatefulset.kb.io": "statefulset", "vstatefulset.kb.io": "statefulset"}
# The CRDs are applied as the bases ship them, with conversion strategy None (the chart
# adds a /convert webhook): v1beta2 is the storage version, so v1beta2 clients, which all of
# this repository's are, need no conversion; a v1beta1 request would get unconverted fields.


class ClusterError(RuntimeError):
    """The local cluster could not be set up; the message says what was seen last."""


# -- production configuration -------------------------------------------------------------------
def _helmrelease_values(path: Path) -> dict:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") == "HelmRelease":
            return (doc.get("spec") or {}).get("values") or {}
    raise ClusterError(f"{path} has no HelmRelease")


def production_kueue_config() -> dict:
    """The Kueue Configuration the production HelmRelease passes (managerConfig.controllerManagerConfigYaml)."""
    raw = ((_helmrelease_values(KUEUE_HELMRELEASE).get("managerConfig") or {}).get("controllerManagerConfigYaml"))
    if not raw:
        raise ClusterError(f"{KUEUE_HELMRELEASE}: no values.managerConfig.controllerManagerConfigYaml")
    return yaml.safe_load(raw)


def production_kuberay_env() -> dict[str, str]:
    env = _helmrelease_values(KUBERAY_HELMRELEASE).get("env") or []
    return {e["name"]: str(e.get("value", "")) for e in env}


def local_kueue_config(prod: dict, *, webhook_port: int, cert_dir: Path, health_port: int) -> dict:
    """The production configuration with the changes a process outside the cluster needs."""
    cfg = copy.deepcopy(prod)
    cfg["namespace"] = KUEUE_NAMESPACE  # in a pod it comes from the service-account mount
    cfg["health"] = {**(cfg.get("health") or {}), "healthProbeBindAddress": f"127.0.0.1:{health_port}"}
    # "0" turns metrics serving off (the cert watcher still needs its files, see above).
    cfg["metrics"] = {**(cfg.get("metrics") or {}), "bindAddress": "0"}
    cfg["webhook"] = {**(cfg.get("webhook") or {}), "host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)}
    # Out of cluster there is no namespace to default the Lease to; one replica needs no election.
    cfg["leaderElection"] = {"leaderElect": False}
    # The internal cert manager issues for <service>.<ns>.svc and injects CA bundles through
    # Services; the apiserver reaches this process by URL, so the harness issues the certs.
    cfg["internalCertManagement"] = {"enable": False}
    # The visibility API server needs its own certs and an APIService; the tests do not use it.
    cfg["featureGates"] = {**(cfg.get("featureGates") or {}), "VisibilityOnDemand": False}
    return cfg


# -- manifests from the Go modules --------------------------------------------------------------
def crd_documents(directory: Path) -> list[dict]:
    """The CRDs of a module's CRD directory, parsed once and cached as JSON.

    Module directories in GOMODCACHE are immutable and versioned in their path, so the cache
    never goes stale; parsing the 4 MB of YAML takes seconds even with libyaml, JSON milliseconds.
    """
    from harness import toolchain as tools

    digest = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    cache = tools.cache_root() / "manifests" / f"crds-{digest}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = []
    for path in sorted(directory.glob("*.yaml")):
        docs += [d for d in yaml.load_all(path.read_text(), Loader=loader) if d and d.get("kind") == "CustomResourceDefinition"]
    if not docs:
        raise ClusterError(f"no CRDs under {directory}")
    certs.write_pem(cache, json.dumps(docs).encode())  # atomic write: parallel runs may race here
    return docs


def kueue_webhook_configurations(manifests: Path, base_url: str, ca_bundle: str, kueue_config: dict) -> list[dict]:
    """Kueue's controller-gen webhook manifests as the Helm chart renders them for `kueue_config`,
    but with URL clientConfigs (envtest's rewrite) instead of the webhook Service."""
    frameworks = set((kueue_config.get("integrations") or {}).get("frameworks") or [])
    job_selector = kueue_config.get("managedJobsNamespaceSelector")
    system_selector = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                             "values": ["kube-system", KUEUE_NAMESPACE]}]}
    out = []
    for doc in yaml.safe_load_all(manifests.read_text()):
        if not doc:
            continue
        doc = copy.deepcopy(doc)
        doc["metadata"] = {"name": "kueue-" + doc["metadata"]["name"],  # the chart's name prefix
                           "labels": {"app.kubernetes.io/managed-by": FIELD_MANAGER}}
        for hook in doc.get("webhooks") or []:
            hook["clientConfig"] = {"url": base_url + hook["clientConfig"]["service"]["path"], "caBundle": ca_bundle}
            is_job_hook = not any("kueue.x-k8s.io" in r.get("apiGroups", []) for r in hook.get("rules") or [])
            if hook["name"] in OPT_IN_WEBHOOKS:
                hook["failurePolicy"] = "Fail" if OPT_IN_WEBHOOKS[hook["name"]] in frameworks else "Ignore"
                hook["namespaceSelector"] = job_selector or system_selector
            elif is_job_hook and job_selector:
                hook["namespaceSelector"] = job_selector
            if doc["kind"] == "MutatingWebhookConfiguration":
                hook["reinvocationPolicy"] = "Never"  # the chart's default value
        out.append(doc)
    return out


# -- API helpers (fixed paths, so no discovery round trips) -------------------------------------
def server_side_apply(api: client.ApiClient, path: str, body: dict) -> dict:
    """PATCH with application/apply-patch+yaml (JSON is YAML) at a known path; returns the object."""
    method, url, headers, body, _ = api.param_serialize(
        "PATCH", path, query_params=[("fieldManager", FIELD_MANAGER), ("force", "true")],
        header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
        body=body, auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers, body=body, _request_timeout=60)
    data = resp.read()
    if not 200 <= resp.status < 300:
        raise ClusterError(f"server-side apply of {path} failed: HTTP {resp.status}: {data[:2000].decode(errors='replace')}")
    return json.loads(data)


def wait_crds_established(api: client.ApiClient, names: set[str], timeout: float) -> None:
    """Watches CRDs until every one of `names` has Established=True and NamesAccepted=True."""
    # Through CustomObjectsApi the CRDs stay plain dicts: turning megabytes of OpenAPI schema
    # into client model objects costs seconds on a small machine.
    custom = client.CustomObjectsApi(api)
    lister = functools.partial(custom.list_cluster_custom_object, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
    deadline = time.monotonic() + timeout
    state: dict[str, dict] = {}

    def established(name: str) -> bool:
        return _cond(state.get(name), "Established") and _cond(state.get(name), "NamesAccepted")

    while True:
        listing = lister()
        state = {c["metadata"]["name"]: c for c in listing["items"] if c["metadata"]["name"] in names}
        if all(map(established, names)):
            return
        remaining = int(deadline - time.monotonic())
        if remaining > 0:
            w = watch.Watch()
            try:
                for ev in w.stream(lister, resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=remaining):
                    if ev["object"]["metadata"]["name"] in names:
                        state[ev["object"]["metadata"]["name"]] = ev["object"]
                    if all(map(established, names)):
                        return
            except ApiException as err:
                if err.status != 410:  # expired resourceVersion: list again
                    raise
            finally:
                w.stop()
        if time.monotonic() >= deadline:
            pending = {n: (state.get(n) or {}).get("status", {}).get("conditions", "absent") for n in sorted(names)
                       if not established(n)}
            raise ClusterError(f"CRDs not Established after {timeout:.0f}s; last conditions: {json.dumps(pending, indent=1)}")


def _cond(obj: dict | None, ctype: str) -> bool:
    return any(c.get("type") == ctype and c.get("status") == "True"
               for c in ((obj or {}).get("status") or {}).get("conditions") or [])


# -- the cluster --------------------------------------------------------------------------------
class LocalCluster:
    def __init__(self, workdir: Path, *, log_dir: Path | None = None, start_timeout: float = 90.0):
        self.workdir = Path(workdir).resolve()
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

    # -- start --------------------------------------------------------------------------------
    def start(self) -> "LocalCluster":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        from harness import toolchain as tools# a cached build is only checked; a missing one is built with progress

        t0 = time.monotonic()
        t = tools.ensure("kube", "etcd", "kueue", "kuberay")
        kueue_src, kuberay_src = tools.module_dir("kueue"), tools.module_dir("kuberay")
        self.timings["tools"] = time.monotonic() - t0

        crds = crd_documents(kueue_src / "config/components/crd/bases") + crd_documents(kuberay_src / "config/crd/bases")
        t1 = time.monotonic()
        self._seed_etcd(crds)
        self.timings["etcd-seed"] = time.monotonic() - t1
        self.control_plane.start_apiserver()
        self._api = self.api_client()

        self.ports.update({"kueue-webhook": free_port(), "kueue-health": free_port(),
                           "kuberay-metrics": free_port(), "kuberay-health": free_port()})
        webhook_base = f"https://127.0.0.1:{self.ports['kueue-webhook']}"
        ca_bundle = self._write_kueue_certs()

        t2 = time.monotonic()
        self._ensure_namespace(KUEUE_NAMESPACE)
        wait_crds_established(self._api, {c["metadata"]["name"] for c in crds}, timeout=60)
        self.timings["crds"] = time.monotonic() - t2

        # The controller-manager and both operators start together: they only need the CRDs.
        self.control_plane.start_controller_manager()
        self.timings.update({f"control-plane/{k}": v for k, v in self.control_plane.timings.items()})
        kuberay = self._start_kuberay(t["kuberay"].path("ray-operator"))
        kueue = self._start_kueue(t["kueue"].path("kueue"))
        t3 = time.monotonic()
        wait_until(http_check(f"http://127.0.0.1:{self.ports['kueue-health']}/readyz"), self.start_timeout,
                   "Kueue /readyz", [kueue, kuberay])
        self.timings["kueue-readyz"] = time.monotonic() - t3
        for cfg in kueue_webhook_configurations(kueue_src / "config/components/webhook/manifests.yaml", webhook_base,
                                                ca_bundle, self.kueue_config):
            kind = "mutatingwebhookconfigurations" if cfg["kind"] == "MutatingWebhookConfiguration" else "validatingwebhookconfigurations"
            server_side_apply(self._api, f"/apis/admissionregistration.k8s.io/v1/{kind}/{cfg['metadata']['name']}", cfg)
        wait_until(self._webhook_probe, 30, "Kueue webhooks to serve the apiserver (dry-run ResourceFlavor)", [kueue])
        wait_until(http_check(f"http://127.0.0.1:{self.ports['kuberay-health']}/readyz"), self.start_timeout,
                   "KubeRay operator /readyz", [kuberay])
        self.timings["operators"] = time.monotonic() - t3
        self.timings["start"] = time.monotonic() - t1
        self.record_path.write_text(json.dumps(self.describe(), indent=2) + "\n")
        say("cluster", f"ready in {self.timings['start']:.1f}s (kube-apiserver {self.control_plane.timings['kube-apiserver']:.1f}s, "
                       f"CRDs {self.timings['crds']:.1f}s, Kueue+KubeRay {self.timings['operators']:.1f}s); "
                       f"logs in {self.log_dir}")

    def _write_kueue_certs(self) -> str:
        """Webhook serving cert for 127.0.0.1 (URL webhooks); returns the CA bundle (base64)."""
        ca = certs.CA.create("aks-ray-kueue-local-webhook-ca")
        serving = ca.issue_server("kueue-webhook", ips=("127.0.0.1",),
                                  dns=("localhost", f"kueue-webhook-service.{KUEUE_NAMESPACE}.svc"))
        serving.write(self.workdir / "kueue" / "certs", "tls")
        self._ensure_kueue_metrics_cert(serving)
        return base64.b64encode(ca.cert_pem).decode()

    @staticmethod
    def _ensure_kueue_metrics_cert(pair: certs.KeyPair) -> None:
        crt, key = KUEUE_METRICS_CERT_DIR / "tls.crt", KUEUE_METRICS_CERT_DIR / "tls.key"
        try:
            KUEUE_METRICS_CERT_DIR.mkdir(parents=True, exist_ok=True)
            # One machine-wide pair shared by every local cluster: the lock keeps clusters starting
            # at the same time from interleaving their crt and key writes (a mismatched pair).
            with (KUEUE_METRICS_CERT_DIR / ".lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:  # keep a valid pair another local cluster may be watching; metrics are not served anyway
                    cert = x509.load_pem_x509_certificate(crt.read_bytes())
                    if key.exists() and cert.not_valid_after_utc.timestamp() > time.time() + 86400:
                        return
                except (OSError, ValueError):
                    pass
                pair.write(KUEUE_METRICS_CERT_DIR, "tls")
        except OSError as err:
            raise ClusterError(
                f"Kueue v0.17 needs {crt} and {key} when internal cert management is off (hard-coded path, no flag), "
                f"and writing them failed: {err}. Run as root or create that directory writable for this user.") from None

    def _seed_etcd(self, crds: list[dict]) -> None:
        """Starts etcd from a cached data directory that already holds the CRDs.

        Installing 15 CRDs (4 MB of schema) costs the apiserver ~25 CPU-seconds, 15-20 s on
        2 cores, on every start. The CRDs are static for a given pin, so they are installed
        once, with server-side apply, into a seed cluster whose etcd data is cached and
        copied into each new cluster; starting from it takes ~2 s more than an empty etcd.
        """
        from harness import toolchain as tools

        bins = self.control_plane.binaries()
        key = hashlib.sha256(json.dumps([crds, sorted(map(str, bins.values()))], sort_keys=True).encode()).hexdigest()[:16]
        seed = tools.cache_root() / "seeds" / f"etcd-crds-{key}"
        if not (seed / "member").is_dir():
            seed.parent.mkdir(parents=True, exist_ok=True)
            with (seed.parent / f"{seed.name}.lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # parallel first runs build one seed
                if not (seed / "member").is_dir():
                    self._build_seed(crds, seed)
        shutil.copytree(seed / "member", self.workdir / "etcd" / "member")

    def _build_seed(self, crds: list[dict], seed: Path) -> None:
        say("cluster", f"first run for these pins: installing {len(crds)} CRDs into a seed etcd, cached in {seed}")
        work = Path(tempfile.mkdtemp(prefix="build-", dir=seed.parent))
        try:
            cp = ControlPlane(work, log_dir=self.log_dir / "seed", start_timeout=self.start_timeout).start_apiserver()
            try:
                api = cp.api_client()
                # One at a time: each new CRD makes the apiserver rebuild discovery and OpenAPI,
                # and parallel appliers were slower (40 s against 15 s, measured on 2 cores).
                for crd in crds:
                    server_side_apply(api, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}", crd)
                wait_crds_established(api, {c["metadata"]["name"] for c in crds}, timeout=120)
                api.close()
            finally:
                cp.stop()  # SIGTERM: etcd closes its database cleanly before the copy
            (work / "etcd").rename(seed)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _ensure_namespace(self, name: str) -> None:
        try:
            client.CoreV1Api(self._api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        except ApiException as err:
            if err.status != 409:
                raise ClusterError(f"creating namespace {name}: {err.status} {err.body}") from None

    def _start_kuberay(self, binary: Path) -> Process:
        say("cluster", "starting KubeRay operator")
        proc = Process("kuberay-operator", [
            binary, f"--kubeconfig={self.kubeconfig}",
            "--enable-leader-election=false",  # its Lease namespace would be the pod's, which does not exist here
            f"--metrics-addr=127.0.0.1:{self.ports['kuberay-metrics']}",
            f"--health-probe-bind-address=127.0.0.1:{self.ports['kuberay-health']}",
            # Reach Ray heads through the apiserver's service proxy; cluster IPs are not routable here.
            "--use-kubernetes-proxy",
            "--log-stdout-encoder=console",
        ], self.log_dir, env=production_kuberay_env(), cwd=self.workdir).start()
        self.processes.append(proc)
        return proc

    def _start_kueue(self, binary: Path) -> Process:
        self.kueue_config = cfg = local_kueue_config(
            production_kueue_config(), webhook_port=self.ports["kueue-webhook"],
            cert_dir=self.workdir / "kueue" / "certs", health_port=self.ports["kueue-health"])
        self.kueue_config_path.parent.mkdir(parents=True, exist_ok=True)
        self.kueue_config_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        say("cluster", f"starting Kueue (webhooks on 127.0.0.1:{self.ports['kueue-webhook']}, config {self.kueue_config_path})")
        proc = Process("kueue", [
            binary, f"--config={self.kueue_config_path}",
            f"--kubeconfig={self.kubeconfig}",  # the flag, not $KUBECONFIG: parts of Kueue read only the flag
            "--zap-log-level=2",  # as the Deployment of the chart
        ], self.log_dir, cwd=self.workdir).start()
        self.processes.append(proc)
        return proc

    def _webhook_probe(self) -> tuple[bool, str]:
        """Proves both webhook kinds are wired: the mutating one adds Kueue's finalizer, the
        validating one rejects an invalid node label. A dry run before the apiserver has
        loaded the configurations would pass unchanged, which is why both effects are checked."""
        api = client.CustomObjectsApi(self._api)
        rf = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"generateName": "webhook-probe-"}}
        out = api.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", rf, dry_run="All")
        finalizers = out.get("metadata", {}).get("finalizers") or []
        if "kueue.x-k8s.io/resource-in-use" not in finalizers:
            return False, f"dry-run ResourceFlavor not mutated by the webhook yet (finalizers={finalizers})"
        bad = {**rf, "spec": {"nodeLabels": {"probe": "not a valid label value!"}}}
        try:
            api.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "resourceflavors", bad, dry_run="All")
        except ApiException as err:
            if err.status in (400, 403, 422) and "denied the request" in (err.body or ""):
                return True, "webhooks answer"
            return False, f"invalid ResourceFlavor rejected, but not by the webhook: {err.status} {err.body}"
        return False, "invalid ResourceFlavor accepted: validating webhook not active yet"

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
        wait_until(http_check(f"http://127.0.0.1:{self.ports['kueue-health']}/readyz"), self.start_timeout, "Kueue /readyz", [proc])
        wait_until(self._webhook_probe, 30, "Kueue webhooks after the restart", [proc])
        return time.monotonic() - t

    def restart_kuberay(self, *, kill: bool = False, while_down: Callable[[], object] | None = None) -> float:
        proc = self.process("kuberay-operator")
        say("cluster", f"{'killing' if kill else 'stopping'} and restarting the KubeRay operator")
        t = time.monotonic()
        proc.restart(kill=kill, while_down=while_down)
        wait_until(http_check(f"http://127.0.0.1:{self.ports['kuberay-health']}/readyz"), self.start_timeout,
                   "KubeRay operator /readyz", [proc])
        return time.monotonic() - t

    def restart_apiserver(self, *, kill: bool = False) -> float:
        """kube-apiserver restarted with etcd kept; then waits until Kueue's webhooks answer through it."""
        t = time.monotonic()
        self.control_plane.restart_apiserver(kill=kill)
        wait_until(self._webhook_probe, 60, "Kueue webhooks through the restarted kube-apiserver", self.processes)
        return time.monotonic() - t

    # -- stop ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stops Kueue, KubeRay, then the control plane (reverse start order). Idempotent; logs stay in log_dir."""
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
            say("cluster", f"stopped; logs kept in {self.log_dir}")
        if errors:
            raise ClusterError("teardown failed: " + "; ".join(errors))

    def leftovers(self) -> list[str]:
        """What is still alive or bound after stop(): empty when teardown was clean."""
        out = [f"process {p.name} (pid {p.pid}) alive" for p in self.all_processes() if p.group_alive()]
        out += [f"port {port} ({name}) still bound" for name, port in self.all_ports().items() if not port_is_free(port)]
        return out

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# -- `make cluster` -----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the local cluster (etcd, kube-apiserver, kube-controller-manager, "
                                                 "Kueue, KubeRay) until Ctrl-C.")
    parser.add_argument("--workdir", type=Path, help="where certificates, data, the kubeconfig and logs go "
                                                     "(default: a new directory under build/cluster)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="run-", dir=_mkdir(REPO_ROOT / "build" / "cluster")))

    # SIGINT/SIGTERM/SIGHUP interrupt whatever runs (also a start in progress) like Ctrl-C does,
    # so the finally block below tears down in order.
    def interrupt(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # SIGINT too: a shell starts background jobs with SIGINT ignored, and Python keeps that.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    cluster = LocalCluster(workdir)
    try:
        cluster.start()
        print(f"KUBECONFIG={cluster.kubeconfig}", flush=True)
        say("cluster", f"up; logs in {cluster.log_dir}; Ctrl-C to stop")
        while True:
            time.sleep(1.0)
            dead = [p for p in cluster.all_processes() if not p.alive()]
            if dead:
                say("cluster", dead[0].describe_failure("exited unexpectedly; stopping the cluster"))
                return 1
    except KeyboardInterrupt:
        say("cluster", "stopping")
        return 0
    except (ProcessError, ClusterError) as err:
        say("cluster", f"failed: {err}")
        return 1
    finally:
        try:
            cluster.stop()
        except ClusterError as err:  # reported; the exit code already says how the run ended
            say("cluster", str(err))


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    sys.exit(main())
