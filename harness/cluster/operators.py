"""Kueue and the KubeRay operator as local processes, configured like their production HelmReleases.

Kueue runs with the configuration of the production HelmRelease
(flux/infrastructure/controllers/kueue.yaml), changed only where a process outside a cluster
must differ: loopback addresses and free ports, no leader election, and no visibility API
server. Its internal cert management issues the webhook certificates as in the chart
(harness.cluster.kueue_certs wires the Service and plays the kubelet's Secret volume). Its
webhook configurations are the controller-gen manifests as the chart renders them. The KubeRay
operator gets the environment of its HelmRelease.
"""
from __future__ import annotations

import copy
from pathlib import Path

import yaml
from kubernetes import client

from harness.cluster.kueue_certs import cert_management, service_ref
from harness.cluster.processes import Process
from harness.core import HarnessError, REPO_ROOT, atomic_write, say
from harness.gate import KUBERAY_GATES_PATH, KUEUE_GATES_PATH, flags_of, values_gates
from harness.k8s import MUTATING_WEBHOOK, RAW_APPLY_MANAGER, RESOURCE_FLAVOR, VALIDATING_WEBHOOK, server_side_apply

KUEUE_NAMESPACE = "kueue-system"
KUEUE_HELMRELEASE = REPO_ROOT / "flux/infrastructure/controllers/kueue.yaml"
KUBERAY_HELMRELEASE = REPO_ROOT / "flux/infrastructure/controllers/kuberay-operator.yaml"
# The chart (charts/kueue/templates/webhook/manifests.yaml) treats these webhooks specially:
# they skip kube-system and Kueue's namespace, and fail closed only when their framework is
# enabled; with failurePolicy Fail they would otherwise block every pod while Kueue is down.
OPT_IN_WEBHOOKS = {"mpod.kb.io": "pod", "vpod.kb.io": "pod", "mdeployment.kb.io": "deployment",
                   "vdeployment.kb.io": "deployment", "mstatefulset.kb.io": "statefulset", "vstatefulset.kb.io": "statefulset"}


class ClusterError(HarnessError, RuntimeError):
    """The local cluster could not be set up; the message says what was seen last."""


# -- production configuration -------------------------------------------------------------------
def helmrelease(path: Path) -> dict:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") == "HelmRelease":
            return doc
    raise ClusterError(f"{path} has no HelmRelease")


def helmrelease_values(path: Path) -> dict:
    return (helmrelease(path).get("spec") or {}).get("values") or {}


def production_kueue_config() -> dict:
    """The Kueue Configuration the production HelmRelease passes (managerConfig.controllerManagerConfigYaml)."""
    raw = ((helmrelease_values(KUEUE_HELMRELEASE).get("managerConfig") or {}).get("controllerManagerConfigYaml"))
    if not raw:
        raise ClusterError(f"{KUEUE_HELMRELEASE}: no values.managerConfig.controllerManagerConfigYaml")
    cfg = yaml.safe_load(raw)
    # The gates the chart passes as --feature-gates (controllerManager.featureGates): here in the configuration's map, which
    # sets them on the same process-wide gate (the local configuration adds gates of its own to that map).
    gates, _ = values_gates(helmrelease(KUEUE_HELMRELEASE), KUEUE_GATES_PATH)
    if gates:
        cfg["featureGates"] = {**gates, **(cfg.get("featureGates") or {})}
    return cfg


def production_kuberay_flags() -> list[str]:
    """The --feature-gates the KubeRay chart passes for the production HelmRelease's values.featureGates."""
    gates, _ = values_gates(helmrelease(KUBERAY_HELMRELEASE), KUBERAY_GATES_PATH)
    return [f"--feature-gates={flags_of(gates)}"] if gates else []


def production_kuberay_env() -> dict[str, str]:
    env = helmrelease_values(KUBERAY_HELMRELEASE).get("env") or []
    return {e["name"]: str(e.get("value", "")) for e in env}


def local_kueue_config(prod: dict, *, webhook_port: int, cert_dir: Path, health_port: int) -> dict:
    """The production configuration with the changes a process outside the cluster needs."""
    cfg = copy.deepcopy(prod)
    cfg["namespace"] = KUEUE_NAMESPACE  # in a pod it comes from the service-account mount
    cfg["health"] = {**(cfg.get("health") or {}), "healthProbeBindAddress": f"127.0.0.1:{health_port}"}
    # "0" turns metrics serving off; nothing reads them here.
    cfg["metrics"] = {**(cfg.get("metrics") or {}), "bindAddress": "0"}
    cfg["webhook"] = {**(cfg.get("webhook") or {}), "host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)}
    # Out of cluster there is no namespace to default the Lease to; one replica needs no election.
    cfg["leaderElection"] = {"leaderElect": False}
    # As in the chart: Kueue's cert rotator issues the webhook certs and injects the CA bundles.
    # It also keeps Kueue off /etc/kueue/metrics/certs, which v0.17 reads (hard-coded, no flag)
    # only when internal cert management is off, and which only root could create.
    cfg["internalCertManagement"] = cert_management()
    # The visibility API server needs its own certs and an APIService; the tests do not use it.
    cfg["featureGates"] = {**(cfg.get("featureGates") or {}), "VisibilityOnDemand": False}
    return cfg


# -- Kueue's webhooks ---------------------------------------------------------------------------
def kueue_webhook_configurations(manifests: Path, port: int, kueue_config: dict) -> list[dict]:
    """Kueue's controller-gen webhook manifests as the Helm chart renders them for `kueue_config`:
    through the webhook Service (at Kueue's port), CA bundles left to Kueue's cert rotator."""
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
                           "labels": {"app.kubernetes.io/managed-by": RAW_APPLY_MANAGER}}
        for hook in doc.get("webhooks") or []:
            hook["clientConfig"] = service_ref(KUEUE_NAMESPACE, port, hook["clientConfig"]["service"]["path"])
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


def apply_webhook_configurations(api: client.ApiClient, configurations: list[dict]) -> None:
    for cfg in configurations:
        server_side_apply(api, MUTATING_WEBHOOK if cfg["kind"] == MUTATING_WEBHOOK.kind else VALIDATING_WEBHOOK, cfg)


def webhook_probe(api: client.ApiClient) -> tuple[bool, str]:
    """Proves both webhook kinds are wired: the mutating one adds Kueue's finalizer, the
    validating one rejects an invalid node label. A dry run before the apiserver has loaded
    the configurations would pass unchanged, which is why both effects are checked."""
    custom = client.CustomObjectsApi(api)
    rf = {"apiVersion": RESOURCE_FLAVOR.api_version, "kind": RESOURCE_FLAVOR.kind, "metadata": {"generateName": "webhook-probe-"}}
    args = (RESOURCE_FLAVOR.group, RESOURCE_FLAVOR.version, RESOURCE_FLAVOR.plural)
    out = custom.create_cluster_custom_object(*args, rf, dry_run="All")
    finalizers = out.get("metadata", {}).get("finalizers") or []
    if "kueue.x-k8s.io/resource-in-use" not in finalizers:
        return False, f"dry-run ResourceFlavor not mutated by the webhook yet (finalizers={finalizers})"
    bad = {**rf, "spec": {"nodeLabels": {"probe": "not a valid label value!"}}}
    try:
        custom.create_cluster_custom_object(*args, bad, dry_run="All")
    except client.ApiException as err:
        if err.status in (400, 403, 422) and "denied the request" in (err.body or ""):
            return True, "webhooks answer"
        return False, f"invalid ResourceFlavor rejected, but not by the webhook: {err.status} {err.body}"
    return False, "invalid ResourceFlavor accepted: validating webhook not active yet"


# -- the processes ------------------------------------------------------------------------------
def kuberay_process(binary: Path, kubeconfig: Path, ports: dict[str, int], log_dir: Path, workdir: Path) -> Process:
    say("cluster", "starting KubeRay operator")
    return Process("kuberay-operator", [
        binary, f"--kubeconfig={kubeconfig}",
        "--enable-leader-election=false",  # its Lease namespace would be the pod's, which does not exist here
        f"--metrics-addr=127.0.0.1:{ports['kuberay-metrics']}",
        f"--health-probe-bind-address=127.0.0.1:{ports['kuberay-health']}",
        # Reach Ray heads through the apiserver's service proxy; cluster IPs are not routable here.
        "--use-kubernetes-proxy",
        "--log-stdout-encoder=console",
        *production_kuberay_flags(),
    ], log_dir, env=production_kuberay_env(), cwd=workdir).start()


def kueue_process(binary: Path, config: dict, config_path: Path, kubeconfig: Path, log_dir: Path, workdir: Path) -> Process:
    atomic_write(config_path, yaml.safe_dump(config, sort_keys=False))
    say("cluster", f"starting Kueue (webhooks on 127.0.0.1:{config['webhook']['port']}, config {config_path})")
    return Process("kueue", [
        binary, f"--config={config_path}",
        f"--kubeconfig={kubeconfig}",  # the flag, not $KUBECONFIG: parts of Kueue read only the flag
        "--zap-log-level=2",  # as the Deployment of the chart
    ], log_dir, cwd=workdir).start()


def kueue_effective_config(binary: Path, config: dict, workdir: Path, timeout: float = 60) -> dict:
    """The Configuration a Kueue binary runs with for `config`, defaults filled in: Kueue logs it
    (`setup` logger, field `config`) right after loading its --config file and before it needs a
    cluster, so this runs the real binary against a kubeconfig with no cluster and reads that line.
    An empty Configuration (apiVersion and kind only) gives the release's defaults."""
    import json
    import subprocess

    workdir = workdir.resolve()  # Kueue runs in workdir: a relative --config would not be found
    workdir.mkdir(parents=True, exist_ok=True)
    config_path, kubeconfig = workdir / "config.yaml", workdir / "no-cluster.kubeconfig"
    atomic_write(config_path, yaml.safe_dump(config, sort_keys=False))
    atomic_write(kubeconfig, "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    try:
        proc = subprocess.run([str(binary), f"--config={config_path}", f"--kubeconfig={kubeconfig}"], capture_output=True,
                              text=True, timeout=timeout, cwd=workdir)
    except subprocess.TimeoutExpired as err:
        raise ClusterError(f"{binary}: no exit within {timeout:.0f}s without a cluster") from err
    for line in (proc.stdout + proc.stderr).splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("logger") == "setup" and isinstance(entry.get("config"), str):
            return yaml.safe_load(entry["config"])
    raise ClusterError(f"{binary} logged no loaded Configuration (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")
