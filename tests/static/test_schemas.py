"""The offline strict schemas (harness/gate/schemas.py), checked with the real kubeconform binary."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from harness.gate import schema_convert, schemas
from harness.toolchain import builds as tools

pytestmark = pytest.mark.static

KUBERNETES_VERSION = "1.35.0"

CLUSTER_QUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a-cq
  labels: {ray-on-aks/quota-share: team}
spec:
  cohortName: shared-cohort
  namespaceSelector: {}
  queueingStrategy: BestEffortFIFO
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
        - name: default
          resources:
            - {name: cpu, nominalQuota: 8, borrowingLimit: "0"}
            - {name: memory, nominalQuota: 64Gi}
            - {name: nvidia.com/gpu, nominalQuota: "2", lendingLimit: 500m}
"""

RAY_JOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: batch-inference
  namespace: ray
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  suspend: true
  shutdownAfterJobFinishes: true
  ttlSecondsAfterFinished: 300
  entrypoint: python3 /home/ray/scripts/batch_inference.py
  runtimeEnvYAML: |
    pip: [vllm==0.18.0]
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers: [{name: ray-job-submitter, image: rayproject/ray:2.49.0}]
  rayClusterSpec:
    rayVersion: "2.49.0"
    headGroupSpec:
      rayStartParams: {num-cpus: "0", dashboard-host: "0.0.0.0"}
      template:
        metadata:
          labels: {azure.workload.identity/use: "true"}
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.49.0
              ports: [{containerPort: 6379, name: gcs}]
              resources:
                requests: {cpu: "4", memory: 16Gi}
                limits: {cpu: 4, memory: 16Gi}
    workerGroupSpecs:
      - groupName: gpu-workers
        replicas: 1
        minReplicas: 1
        maxReplicas: 1
        rayStartParams: {num-gpus: "1"}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.49.0
                resources:
                  limits: {cpu: "12", memory: 80Gi, nvidia.com/gpu: 1}
"""

KUSTOMIZATION = """
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: queues
  namespace: flux-system
spec:
  interval: 10m
  path: ./overlays/team-queues
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  dependsOn: [{name: kueue}]
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ray
  creationTimestamp: null
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 25%}}
  template:
    metadata:
      labels: {app: web}
    spec:
      serviceAccountName: ray-workload
      containers:
        - name: web
          image: nginx:1.27
          ports: [{containerPort: 8080, name: http}]
          readinessProbe: {httpGet: {path: /, port: http}}
          livenessProbe: {httpGet: {path: /, port: 8080}}
          resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 1}}
"""

HELM_RELEASE = """
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kueue
  namespace: kueue-system
spec:
  interval: 1h
  chartRef: {kind: OCIRepository, name: kueue}
  values:
    anything: {goes: [here, 1, true]}
"""

OCI_REPOSITORY = """
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: kueue
  namespace: flux-system
spec:
  interval: 1h
  url: oci://mcr.microsoft.com/aks/ai-runtime/helm/kueue
  ref: {tag: 0.17.1}
"""


@pytest.fixture(scope="module")
def crds() -> list[dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for p in schemas.crd_files() for d in yaml.load_all(p.read_text(), Loader=loader) if d]


@pytest.fixture(scope="module")
def schema_dir() -> Path:
    return schemas.schema_dir()


@pytest.fixture(scope="module")
def kubeconform(schema_dir):
    binary = tools.ensure("kubeconform")["kubeconform"].path()

    def run(tmp_path: Path, *documents) -> dict[tuple[str, str], dict]:
        """Validates the documents (YAML text or dicts); returns kubeconform's JSON result per (kind, name)."""
        text = "\n---\n".join(d if isinstance(d, str) else yaml.safe_dump(d, sort_keys=False) for d in documents)
        manifest = tmp_path / f"manifest-{time.monotonic_ns()}.yaml"
        manifest.write_text(text)
        proc = subprocess.run(
            [
                str(binary), "-strict", "-schema-location", schemas.schema_location(schema_dir),
                "-kubernetes-version", KUBERNETES_VERSION, "-output", "json", "-verbose", "-summary", str(manifest),
            ],
            capture_output=True, text=True, timeout=300,
        )
        report = json.loads(proc.stdout)
        results = {(r["kind"], r["name"]): r for r in report["resources"]}
        assert len(results) == len(report["resources"]), "tests use unique kind/name pairs"
        failed = report["summary"]["invalid"] + report["summary"]["errors"]
        assert (proc.returncode != 0) == (failed > 0), proc.stderr
        return results

    return run


def edited(text: str, edit) -> dict:
    doc = yaml.safe_load(text)
    edit(doc)
    return doc


def errors(result: dict) -> list[tuple[str, str]]:
    return [(e["path"], e["msg"]) for e in result.get("validationErrors") or []]


def assert_valid(result: dict) -> None:
    assert result["status"] == "statusValid", json.dumps(result, indent=1)


# -- the cases the gate relies on ---------------------------------------------------------------------
def test_valid_v1beta2_cluster_queue_passes(kubeconform, tmp_path):
    assert_valid(kubeconform(tmp_path, CLUSTER_QUEUE)[("ClusterQueue", "team-a-cq")])


def test_cluster_queue_with_a_typo_fails_as_additional_property(kubeconform, tmp_path):
    def typo(doc):
        doc["spec"]["namespaceSelectr"] = doc["spec"].pop("namespaceSelector")

    result = kubeconform(tmp_path, edited(CLUSTER_QUEUE, typo))[("ClusterQueue", "team-a-cq")]
    assert result["status"] == "statusInvalid"
    assert errors(result) == [("/spec", "additional properties 'namespaceSelectr' not allowed")]


@pytest.mark.parametrize("quota", [[8], {"value": 8}, True])
def test_cluster_queue_with_a_bad_quantity_type_fails(kubeconform, tmp_path, quota):
    def bad(doc):
        doc["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = quota

    result = kubeconform(tmp_path, edited(CLUSTER_QUEUE, bad))[("ClusterQueue", "team-a-cq")]
    assert result["status"] == "statusInvalid"
    ((path, msg),) = errors(result)
    assert path == "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"
    assert "got " in result["msg"] and "want integer" in result["msg"] and "want string" in result["msg"]


def test_cluster_queue_with_a_malformed_quantity_string_fails(kubeconform, tmp_path):
    def bad(doc):
        doc["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = "64 GiB"

    result = kubeconform(tmp_path, edited(CLUSTER_QUEUE, bad))[("ClusterQueue", "team-a-cq")]
    assert result["status"] == "statusInvalid"
    assert "/spec/resourceGroups/0/flavors/0/resources/1/nominalQuota" in result["msg"]


def test_custom_resource_metadata_is_validated_as_object_meta(kubeconform, tmp_path):
    def typo(doc):
        doc["metadata"]["lables"] = doc["metadata"].pop("labels")

    result = kubeconform(tmp_path, edited(CLUSTER_QUEUE, typo))[("ClusterQueue", "team-a-cq")]
    assert errors(result) == [("/metadata", "additional properties 'lables' not allowed")]


def test_valid_ray_job_passes(kubeconform, tmp_path):
    assert_valid(kubeconform(tmp_path, RAY_JOB)[("RayJob", "batch-inference")])


def test_ray_job_with_unknown_field_in_embedded_pod_template_fails(kubeconform, tmp_path):
    def typo(doc):
        doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["imagePulPolicy"] = "Always"

    result = kubeconform(tmp_path, edited(RAY_JOB, typo))[("RayJob", "batch-inference")]
    assert errors(result) == [
        ("/spec/rayClusterSpec/headGroupSpec/template/spec/containers/0", "additional properties 'imagePulPolicy' not allowed")
    ]


def test_flux_kustomization_with_unknown_field_fails(kubeconform, tmp_path):
    results = kubeconform(
        tmp_path,
        KUSTOMIZATION,
        edited(KUSTOMIZATION, lambda d: (d["metadata"].update(name="typo"), d["spec"].update(prunee=True))),
    )
    assert_valid(results[("Kustomization", "queues")])
    assert results[("Kustomization", "typo")]["status"] == "statusInvalid"
    assert errors(results[("Kustomization", "typo")]) == [("/spec", "additional properties 'prunee' not allowed")]


def test_unknown_top_level_field_fails(kubeconform, tmp_path):
    result = kubeconform(tmp_path, edited(KUSTOMIZATION, lambda d: d.update(specs={})))[("Kustomization", "queues")]
    assert errors(result) == [("", "additional properties 'specs' not allowed")]


def test_core_service_account_and_namespace_pass(kubeconform, tmp_path):
    results = kubeconform(
        tmp_path,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ray\n  labels: {kubernetes.io/metadata.name: ray}\n",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ray-workload\n  namespace: ray\n"
        "  annotations: {azure.workload.identity/client-id: 00000000-0000-0000-0000-000000000000}\n"
        "automountServiceAccountToken: false\n",
    )
    assert_valid(results[("Namespace", "ray")])
    assert_valid(results[("ServiceAccount", "ray-workload")])


def test_deployment_passes_and_unknown_field_in_pod_template_fails(kubeconform, tmp_path):
    def typo(doc):
        doc["metadata"]["name"] = "typo"
        doc["spec"]["template"]["spec"]["serviceAcountName"] = doc["spec"]["template"]["spec"].pop("serviceAccountName")

    results = kubeconform(tmp_path, DEPLOYMENT, edited(DEPLOYMENT, typo))
    assert_valid(results[("Deployment", "web")])  # also: creationTimestamp null, int-or-string ports and maxUnavailable
    bad = results[("Deployment", "typo")]
    assert bad["status"] == "statusInvalid"
    assert errors(bad) == [("/spec/template/spec", "additional properties 'serviceAcountName' not allowed")]


def test_required_fields_and_wrong_types_fail_in_built_in_kinds(kubeconform, tmp_path):
    def bad(doc):
        doc["metadata"]["name"] = "bad"
        doc["spec"]["replicas"] = "two"
        del doc["spec"]["template"]["spec"]["containers"][0]["name"]

    result = kubeconform(tmp_path, edited(DEPLOYMENT, bad))[("Deployment", "bad")]
    assert result["status"] == "statusInvalid"
    assert "/spec/replicas" in result["msg"] and "missing property 'name'" in result["msg"]


def test_preserve_unknown_fields_and_flux_sources_pass(kubeconform, tmp_path):
    results = kubeconform(tmp_path, HELM_RELEASE, OCI_REPOSITORY)
    assert_valid(results[("HelmRelease", "kueue")])
    assert_valid(results[("OCIRepository", "kueue")])


def test_unknown_kind_or_version_has_no_schema(kubeconform, tmp_path):
    results = kubeconform(
        tmp_path,
        edited(CLUSTER_QUEUE, lambda d: d.update(apiVersion="kueue.x-k8s.io/v1")),
        "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: old}\nspec: {}\n",
    )
    for key in (("ClusterQueue", "team-a-cq"), ("Deployment", "old")):
        assert results[key]["status"] == "statusError" and "could not find schema" in results[key]["msg"]


# -- the generated directory -----------------------------------------------------------------------
REQUIRED_BUILTINS = {
    "v1": {"Namespace", "ServiceAccount", "ConfigMap", "Secret", "Service", "Pod", "PersistentVolumeClaim", "ResourceQuota", "LimitRange"},
    "apps/v1": {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"},
    "batch/v1": {"Job", "CronJob"},
    "rbac.authorization.k8s.io/v1": {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"},
    "scheduling.k8s.io/v1": {"PriorityClass"},
    "admissionregistration.k8s.io/v1": {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy"},
    "apiextensions.k8s.io/v1": {"CustomResourceDefinition"},
    "networking.k8s.io/v1": {"NetworkPolicy", "Ingress", "IngressClass"},
    "policy/v1": {"PodDisruptionBudget"},
    "coordination.k8s.io/v1": {"Lease"},
}


def test_names_follow_kubeconform_kind_suffix():
    assert schemas.schema_filename("v1", "ServiceAccount") == "serviceaccount-v1.json"
    assert schemas.schema_filename("rbac.authorization.k8s.io/v1", "ClusterRole") == "clusterrole-rbac-v1.json"
    assert schemas.schema_filename("kueue.x-k8s.io/v1beta2", "ClusterQueue") == "clusterqueue-kueue-v1beta2.json"
    assert schemas.schema_filename("kustomize.toolkit.fluxcd.io/v1", "Kustomization") == "kustomization-kustomize-v1.json"


def test_directory_covers_builtins_and_every_served_crd_version(schema_dir, crds):
    index = schemas.index()
    assert all((schema_dir / name).is_file() for name in index)
    served = {
        (f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"])
        for crd in crds
        for v in crd["spec"]["versions"] if v.get("served")
    }
    have = {(e["apiVersion"], e["kind"]) for e in index.values()}
    assert served <= have
    assert {("kueue.x-k8s.io/v1beta2", "ClusterQueue"), ("kueue.x-k8s.io/v1beta1", "ClusterQueue"), ("ray.io/v1", "RayJob"),
            ("helm.toolkit.fluxcd.io/v2", "HelmRelease"), ("source.toolkit.fluxcd.io/v1", "Bucket")} <= served
    for api_version, kinds in REQUIRED_BUILTINS.items():
        missing = {k for k in kinds if (api_version, k) not in have}
        assert not missing, f"{api_version}: no schema for {missing}"


def test_every_schema_is_draft4_and_compiles_in_kubeconform(schema_dir, kubeconform, tmp_path):
    """kubeconform treats a schema it cannot compile (which includes failing the draft-4 metaschema)
    as missing, so the gate would call the kind unknown."""
    index = schemas.index()
    for name in index:
        assert json.loads((schema_dir / name).read_text())["$schema"] == schema_convert.DRAFT4, name
    docs = [{"apiVersion": e["apiVersion"], "kind": e["kind"], "metadata": {"name": name}} for name, e in index.items()]
    results = kubeconform(tmp_path, *docs)
    broken = {key: r["msg"] for key, r in results.items() if r["status"] == "statusError"}
    assert not broken
    assert len(results) == len(index)


def test_second_call_is_a_stamp_check(schema_dir):
    started = time.monotonic()
    assert schemas.schema_dir() == schema_dir
    assert time.monotonic() - started < 0.5
    assert (schema_dir / schemas.STAMP).is_file()
    assert schema_dir.parent == tools.cache_root() / "schemas"


def test_crd_files_are_the_upstream_manifests(crds):
    files = schemas.crd_files()
    assert files and all(p.suffix == ".yaml" and p.is_file() for p in files)
    assert {crd["kind"] for crd in crds} == {"CustomResourceDefinition"}
    kinds = {crd["spec"]["names"]["kind"] for crd in crds}
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Workload", "RayCluster", "RayJob", "GitRepository",
            "OCIRepository", "HelmRepository", "HelmChart", "Bucket", "Kustomization", "HelmRelease"} <= kinds
