"""The static gate against broken variants of this repository: each must fail with its rule."""
from __future__ import annotations

import re
import shutil

from pathlib import Path

import pytest
import yaml

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, f"corpus case is stale: {old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1))


def copy_cluster(root: Path, name: str) -> None:
    """A cluster folder and tfvars copied from prod-eastus2 and renamed where its name is written, its Flux paths left as
    they were (the copy's own queues/ is then applied by nothing)."""
    shutil.copytree(root / PROD, root / f"clusters/{name}")
    edit(root, f"clusters/{name}/queues.yaml", "CLUSTER_NAME: prod-eastus2", f"CLUSTER_NAME: {name}")
    tfvars = (root / "terraform/clusters/prod-eastus2.tfvars").read_text()
    (root / f"terraform/clusters/{name}.tfvars").write_text(tfvars.replace('"prod-eastus2"', f'"{name}"'))


def raycluster_sample(root: Path, cluster: str = "dev-westus3", queue: str = "default") -> None:
    """workloads/dev-cluster.yaml: a RayCluster of batch-inference's cluster spec with the queue label, as a sample."""
    job = yaml.safe_load("apiVersion:" + (root / "workloads/batch-inference.yaml").read_text().partition("apiVersion:")[2])
    spec = "\n".join("  " + line for line in yaml.safe_dump(job["spec"]["rayClusterSpec"], sort_keys=False).splitlines())
    write(root, "workloads/dev-cluster.yaml", "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: ${JOB_NAME}\n  namespace: ray\n"
                                              f"  labels:\n    kueue.x-k8s.io/queue-name: ${{QUEUE_NAME}}\nspec:\n{spec}\n")
    append(root, f"clusters/{cluster}/samples.yaml", f"- sample: dev-cluster\n  queue: {queue}\n")


def kueue_controller(root: Path, cpu: str, selector: str) -> None:
    """The Kueue HelmRelease's controller-manager requests (and limits) `cpu` CPUs and 4Gi, on the nodes `selector` picks."""
    edit(root, KUEUE, "          tag: v0.17.1\n", "          tag: v0.17.1\n        resources:\n"
         + "".join(f"          {part}:\n            cpu: \"{cpu}\"\n            memory: 4Gi\n" for part in ("requests", "limits")))
    edit(root, KUEUE, "      # The system pool is tainted", f"      nodeSelector:\n        {selector}\n      # The system pool is tainted")


def append(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.write_text(path.read_text() + text)


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


# A queued RayCluster (head 2 CPU/8Gi, worker group gpu: 1 replica of 8 CPU/64Gi/1 GPU); QUEUED_RAY_SERVICE is the same
# cluster as a RayService.
QUEUED_RAY_CLUSTER = """apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: notebook
  namespace: ray
  labels:
    kueue.x-k8s.io/queue-name: team-a
spec:
  rayVersion: "2.55.1"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.55.1-cuda13.0
            resources:
              requests: {cpu: "2", memory: 8Gi}
              limits: {cpu: "2", memory: 8Gi}
  workerGroupSpecs:
    - groupName: gpu
      replicas: 1
      minReplicas: 1
      maxReplicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.55.1-cuda13.0
              resources:
                requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
                limits: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}
"""
QUEUED_RAY_SERVICE = ("apiVersion: ray.io/v1\nkind: RayService\nmetadata:\n  name: llm-serve\n  namespace: ray\n  labels:\n"
                      "    kueue.x-k8s.io/queue-name: team-b\nspec:\n  serveConfigV2: |\n    applications: []\n  rayClusterConfig:\n"
                      + "".join(f"  {line}\n" for line in QUEUED_RAY_CLUSTER.partition("spec:\n")[2].splitlines()))


def integration(root: Path, framework: str) -> None:
    """The Kueue manager's integrations.frameworks gets `framework` too."""
    edit(root, KUEUE, "            - ray.io/rayjob\n", f"            - ray.io/rayjob\n            - {framework}\n")


def queued_layer_object(root: Path, file: str, text: str, framework: str | None = None) -> None:
    """overlays/team-queues/`file` (`text`) applied by the queues layer; with `framework`, its integration on."""
    write(root, f"overlays/team-queues/{file}", text)
    edit(root, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml\n", f"  - team-b.yaml\n  - {file}\n")
    if framework:
        integration(root, framework)


def queued_ray_sample(root: Path, kind: str, gpus: str) -> None:
    """A prod sample (workloads/notebook.yaml, samples.yaml line 12) of the queued RayCluster or RayService whose GPU worker
    pod asks for `gpus`, its integration on."""
    text = QUEUED_RAY_CLUSTER if kind == "RayCluster" else QUEUED_RAY_SERVICE
    text = re.sub(r"name: (notebook|llm-serve)", "name: ${JOB_NAME}", text).replace('nvidia.com/gpu: "1"', f'nvidia.com/gpu: "{gpus}"')
    write(root, "workloads/notebook.yaml", re.sub(r"queue-name: team-.", "queue-name: ${QUEUE_NAME}", text))
    append(root, f"{PROD}/samples.yaml", "- sample: notebook\n  queue: team-a\n")
    integration(root, "ray.io/raycluster" if kind == "RayCluster" else "ray.io/rayservice")


def resource_quota(root: Path, hard: str) -> None:
    """base/resource-quota.yaml: ResourceQuota ray/ray-quota of the samples' namespace with the hard limits `hard` (flow style)."""
    write(root, "base/resource-quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: ray-quota\n  namespace: ray\n"
                                            f"spec:\n  hard: {{{hard}}}\n")
    edit(root, "base/kustomization.yaml", "resources:\n", "resources:\n  - resource-quota.yaml\n")


def layer_rayjob_of_nine_gpus(root: Path) -> None:
    """overlays/team-queues/nightly.yaml: llm-training as a RayJob of 9 one-GPU workers (8 CPU each) on team-a."""
    text = (root / "workloads/llm-training.yaml").read_text()
    for var, value in (("${JOB_NAME}", "nightly"), ("${QUEUE_NAME}", "team-a"), ("${RAY_VERSION}", "2.55.1"), ("${NUM_WORKERS}", "9"),
                       ("${RAY_IMAGE}", "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.55.1-cuda13.0")):
        text = text.replace(var, value)
    text = text.replace('cpu: "16"', 'cpu: "8"').replace("configMap: {name: llm-training-scripts}", "configMap: {name: ray-storage}")
    queued_layer_object(root, "nightly.yaml", text)


JOB_WITH = """---
apiVersion: batch/v1
kind: Job
metadata:
  name: warmup
  namespace: ray
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: warmup
          image: mcr.microsoft.com/azurelinux/busybox:1.36
{extra}"""

RAY_SERVICE = """apiVersion: ray.io/v1
kind: RayService
metadata:
  name: serve
  namespace: ray
spec:
  rayClusterConfig:
    rayVersion: "2.52.0"
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.52.0
    workerGroupSpecs:
      - groupName: gpu
        replicas: 1
        rayStartParams: {}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.52.0
                resources: {limits: {nvidia.com/gpu: "0.5"}}
"""
TEAM_A = "overlays/team-queues/team-a.yaml"
TEAM_B = "overlays/team-queues/team-b.yaml"
SINGLE = "overlays/single-queue/cluster-queue.yaml"
ND96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
RAYCLUSTER = """apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: shared
  namespace: ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.41.0
            resources: {requests: {cpu: "1", memory: 4Gi}, limits: {cpu: "1", memory: 4Gi}}
  workerGroupSpecs:
    - groupName: cpu
      replicas: 1
      minReplicas: 1
      maxReplicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.41.0
              resources: {requests: {cpu: "1", memory: 4Gi}, limits: {cpu: "1", memory: 4Gi}}
"""
PROD = "clusters/prod-eastus2"
DEV = "clusters/dev-westus3"
KUEUE = "flux/infrastructure/controllers/kueue.yaml"
KUBERAY = "flux/infrastructure/controllers/kuberay-operator.yaml"
SA = "base/service-account.yaml"
SCRIPTS = "base/scripts/kustomization.yaml"

# A Secret as `sops --encrypt` leaves it (age recipient; data, stringData encrypted), for the queues layer of prod-eastus2.
SOPS_SECRET = """apiVersion: v1
kind: Secret
metadata:
  name: storage-credentials
  namespace: ray
type: Opaque
data:
  account-key: ENC[AES256_GCM,data:q2x0cGx1c2g=,iv:Hh1F5Jx0b0o7nq3d2yZk1zQ6YVXbJ2xk4m2n9qk3k5I=,tag:3x5H2lqJ9n1n0bQ2Xg6k8w==,type:str]
stringData:
  user: ENC[AES256_GCM,data:dXNlcg==,iv:Hh1F5Jx0b0o7nq3d2yZk1zQ6YVXbJ2xk4m2n9qk3k5I=,tag:3x5H2lqJ9n1n0bQ2Xg6k8w==,type:str]
sops:
  age:
    - recipient: age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq
      enc: |
        -----BEGIN AGE ENCRYPTED FILE-----
        YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBhYmNk
        -----END AGE ENCRYPTED FILE-----
  lastmodified: "2025-01-01T00:00:00Z"
  mac: ENC[AES256_GCM,data:bWFj,iv:Hh1F5Jx0b0o7nq3d2yZk1zQ6YVXbJ2xk4m2n9qk3k5I=,tag:3x5H2lqJ9n1n0bQ2Xg6k8w==,type:str]
  encrypted_regex: ^(data|stringData)$
  version: 3.9.0
"""


def two_dev_gpu_nodes(root: Path) -> None:
    """dev-westus3 with two Standard_NC24ads_A100_v4 nodes and its single queue's quota for both (46 CPU, 400Gi, 2 GPUs)."""
    nc24 = "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml"
    edit(root, "terraform/clusters/dev-westus3.tfvars", "gpu_node_count = 1", "gpu_node_count = 2")
    for path, old, new in (("resources/0/nominalQuota", '"23"', '"46"'), ("resources/1/nominalQuota", "200Gi", "400Gi"),
                           ("/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota", '"1"', '"2"')):
        edit(root, nc24, f"{path}, value: {old}}}", f"{path}, value: {new}}}")


def runtime_class(root: Path, overhead: str, template: str = "", sets: str = "            runtimeClassName: kata-vm\n") -> None:
    """base/ applies RuntimeClass kata-vm with `overhead` as its overhead.podFixed; the first worker template of `template`
    (workloads/NAME.yaml) gets `sets` after its serviceAccountName."""
    write(root, "base/runtime-class.yaml", f"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: kata-vm\nhandler: kata\n"
                                           f"overhead:\n  podFixed: {overhead}\n")
    edit(root, "base/kustomization.yaml", "resources:\n", "resources:\n  - runtime-class.yaml\n")
    if template:
        edit(root, template, "            serviceAccountName: ray-workload\n", "            serviceAccountName: ray-workload\n" + sets)


def sops_secret(root: Path) -> None:
    """prod-eastus2's queues layer applies SOPS_SECRET."""
    write(root, f"{PROD}/queues/storage-secret.yaml", SOPS_SECRET)
    edit(root, f"{PROD}/queues/kustomization.yaml", "  - ../../../overlays/team-queues\n",
         "  - ../../../overlays/team-queues\n  - storage-secret.yaml\n")


def health_check(root: Path, field: str, expression: str) -> None:
    """prod-eastus2's queues layer gets a ClusterQueue health check whose `field` is `expression` (current: a valid one)."""
    fields = {"current": "status.conditions.exists(c, c.type == 'Active' && c.status == 'True')", field: expression}
    append(root, f"{PROD}/queues.yaml", "  healthCheckExprs:\n    - apiVersion: kueue.x-k8s.io/v1beta2\n      kind: ClusterQueue\n"
           + "".join(f'      {k}: "{v}"\n' for k, v in fields.items()))


# (case id, rule that must fire, file the finding must name, mutation[, line[, severity]]): when a line
# is given, a finding of the rule must name that file:line; its severity must be the one given
# ("error" unless said otherwise).
CORPUS = [
    # versions.yaml pins a production Kueue the gate does not run, and another module version without a skew.
    ("kueue-production-bump", "versions-pins", "versions.yaml",
     lambda r: edit(r, "versions.yaml", "  production: 0.17.1\n", "  production: 0.17.3\n"), 35, "warning"),
    ("kueue-module-without-skew", "versions-pins", "versions.yaml",
     lambda r: edit(r, "versions.yaml", "  version: v0.17.1 ", "  version: v0.17.0 "), 35, "warning"),
    ("kueue-production-spelled-as-the-module", "versions-drift", "versions.yaml",
     lambda r: edit(r, "versions.yaml", "  production: 0.17.1\n", "  production: v0.17.1\n"), 35),
    ("kueue-candidate-key-misspelt", "versions-schema", "versions.yaml",
     lambda r: edit(r, "versions.yaml", "- version: v0.19.2 ", "- vesion: v0.19.2 "), 46),
    ("yaml-syntax", "yaml-syntax", TEAM_A, lambda r: append(r, TEAM_A, "  broken: [unclosed\n")),
    ("wrong-apiversion", "schema-unknown-kind", TEAM_A, lambda r: edit(r, TEAM_A, "apiVersion: kueue.x-k8s.io/v1beta2", "apiVersion: kueue.x-k8s.io/v1")),
    ("old-kueue-api", "kueue-api-version", "base/resource-flavors.yaml",
     lambda r: edit(r, "base/resource-flavors.yaml", "apiVersion: kueue.x-k8s.io/v1beta2", "apiVersion: kueue.x-k8s.io/v1beta1"), None, "warning"),
    ("typo-field", "schema", TEAM_B, lambda r: edit(r, TEAM_B, "queueingStrategy:", "queueingStrategyy:")),
    # Checked by the apiserver's own validation (tools/fluxbuild), at the component's patch line that wrote it.
    ("bad-quantity", "api-validation", ND96, lambda r: edit(r, ND96, 'nominalQuota, value: "94"}', 'nominalQuota, value: "94 cores"}'), 13),
    ("dangling-localqueue", "localqueue-clusterqueue", TEAM_B, lambda r: edit(r, TEAM_B, "clusterQueue: team-b-cq", "clusterQueue: team-c-cq")),
    ("missing-flavor", "clusterqueue-flavor", SINGLE, lambda r: edit(r, SINGLE, "- name: gpu\n", "- name: gpu-h100\n")),
    ("covered-resources", "api-validation", SINGLE, lambda r: edit(r, SINGLE, "coveredResources: [cpu, memory]", "coveredResources: [cpu]"), 12),
    ("covered-resources-order", "kueue-webhook", SINGLE,
     lambda r: edit(r, SINGLE, "coveredResources: [cpu, memory]", "coveredResources: [memory, cpu]"), 16),
    # A CEL rule of the spec that names the field in words: at that field, here where the gpu-sku component writes it.
    ("borrowing-without-cohort", "api-validation", "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml",
     lambda r: edit(r, TEAM_A, "  cohortName: shared-cohort\n", ""), 21),
    ("no-namespace-selector", "namespace-selector", SINGLE, lambda r: edit(r, SINGLE, "  namespaceSelector: {}\n", "")),
    ("both-overlays", "cluster-overlay", f"{PROD}/kustomization.yaml",
     lambda r: append(r, f"{PROD}/queues/kustomization.yaml", "  - ../../../overlays/single-queue\n")),
    ("no-overlay", "cluster-overlay", f"{PROD}/kustomization.yaml",
     lambda r: edit(r, f"{PROD}/queues/kustomization.yaml", "  - ../../../overlays/team-queues", "  - ../../../base")),
    ("missing-flux-path", "flux-path", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "path: ./clusters/prod-eastus2/queues", "path: ./clusters/prod-eastus2/queue"), 20),
    ("flux-path-to-a-file", "flux-path", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "path: ./clusters/prod-eastus2/queues", "path: ./clusters/prod-eastus2/queues/kustomization.yaml"), 20),
    ("dangling-depends-on", "flux-depends-on", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "- name: infra-controllers", "- name: infra-controller"), 11),
    ("depends-on-cycle", "flux-cycle", f"{PROD}/infrastructure.yaml",
     lambda r: edit(r, f"{PROD}/infrastructure.yaml", "spec:\n", "spec:\n  dependsOn:\n    - name: queues\n"), 10),
    ("helm-release-depends-on-cycle", "flux-cycle", "flux/infrastructure/controllers/kueue.yaml",  # neither is ever installed
     lambda r: (edit(r, "flux/infrastructure/controllers/kueue.yaml", "  releaseName: kueue\n", "  releaseName: kueue\n  dependsOn:\n    - name: kuberay-operator\n"),
                edit(r, "flux/infrastructure/controllers/kuberay-operator.yaml", "  releaseName: kuberay-operator\n",
                     "  releaseName: kuberay-operator\n  dependsOn:\n    - name: kueue\n")), 31),
    # A ${VAR} set nowhere (a misspelling): where it is written, once for every cluster that builds it.
    ("undefined-variable", "flux-variable-undefined", "base/service-account.yaml",
     lambda r: edit(r, "base/service-account.yaml", '"${AZURE_TENANT_ID}"', '"${AZURE_TENANT}"'), 9),
    # A v1 List's items are objects of their own: a typo in one is at its line, once.
    ("list-item-unknown-field", "schema", "base/priority-classes.yaml",
     lambda r: write(r, "base/priority-classes.yaml", "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: kueue.x-k8s.io/v1beta2\n"
                     "    kind: WorkloadPriorityClass\n    metadata:\n      name: high\n    valeu: 1000\n  - apiVersion: kueue.x-k8s.io/v1beta2\n"
                     "    kind: WorkloadPriorityClass\n    metadata:\n      name: low\n    value: 100\n"), 8),
    ("flux-unknown-field", "schema", f"{PROD}/queues.yaml", lambda r: edit(r, f"{PROD}/queues.yaml", "  prune: true", "  prunne: true")),
    # kustomize-controller's apply refuses a SOPS-encrypted Secret of a layer without spec.decryption: nothing of it applies.
    ("sops-secret-without-decryption", "flux-decryption", f"{PROD}/queues.yaml", sops_secret, 9),
    # kustomize-controller compiles healthCheckExprs first: one that does not compile stalls the layer.
    ("health-check-cel-syntax", "flux-health-check-expr", f"{PROD}/queues.yaml",
     lambda r: health_check(r, "current", "status.conditions.exists(c, c.type == 'Active' && )"), 30),
    ("submission-mode-typo", "kuberay-validation", "workloads/batch-inference.yaml",  # KubeRay submits nothing: it waits forever
     lambda r: edit(r, "workloads/batch-inference.yaml", "  suspend: true\n", "  suspend: true\n  submissionMode: K8sJob\n"), 14),
    ("queued-job-on-existing-cluster", "kueue-webhook", "workloads/batch-inference.yaml",  # with a rayClusterSpec: Kueue's webhook
     lambda r: edit(r, "workloads/batch-inference.yaml", "  suspend: true\n", "  suspend: true\n  clusterSelector: {ray.io/cluster: shared}\n"), 14),
    ("queued-job-only-on-existing-cluster", "kuberay-validation", "workloads/batch-inference.yaml",  # Kueue's mutating webhook suspends it
     lambda r: write(r, "workloads/batch-inference.yaml", re.sub(r"\n  rayClusterSpec:\n(    .*\n|\n)*", "\n", (r / "workloads/batch-inference.yaml").read_text())
                     .replace("  suspend: true\n", "  suspend: false\n  clusterSelector: {ray.io/cluster: shared}\n")), 14),
    ("worker-group-name-not-a-pod-set-name", "kueue-inadmissible", "workloads/aurora-finetune.yaml",  # the Workload is refused
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "groupName: gpu-workers", "groupName: gpu_workers"), 68),
    ("worker-groups-differing-in-case", "kueue-inadmissible", "workloads/batch-inference.yaml",  # Kueue lowercases pod set names
     lambda r: append(r, "workloads/batch-inference.yaml", (r / "workloads/batch-inference.yaml").read_text().split("    workerGroupSpecs:\n")[1]
                      .replace("groupName: gpu-workers", "groupName: GPU-Workers")), 95),
    ("submitter-without-restart-policy", "pod-validation", "workloads/batch-inference.yaml",  # the submitter Job is refused
     lambda r: edit(r, "workloads/batch-inference.yaml", "      restartPolicy: Never\n", ""), 29),
    ("submitter-negative-backoff", "pod-validation", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "  submitterPodTemplate:\n", "  submitterConfig: {backoffLimit: -1}\n  submitterPodTemplate:\n"), 28),
    ("raycluster-min-above-max", "kuberay-validation", "base/raycluster.yaml",  # KubeRay's RayCluster controller refuses it
     lambda r: (write(r, "base/raycluster.yaml", RAYCLUSTER.replace("minReplicas: 1", "minReplicas: 2")),
                edit(r, "base/kustomization.yaml", "  - priority-classes.yaml\n", "  - priority-classes.yaml\n  - raycluster.yaml\n")), 18),
    ("shutdown-false", "kueue-webhook", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: false"), 14),
    ("kuberay-refuses-replicas", "kuberay-validation", "workloads/llm-training.yaml",
     lambda r: edit(r, "workloads/llm-training.yaml", "maxReplicas: ${NUM_WORKERS}", "maxReplicas: 1"), 72),  # the field the message names
    ("workers-below-min-replicas", "kueue-unaccounted-pods", "workloads/aurora-finetune.yaml",  # KubeRay creates 2, Kueue charges 1
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "minReplicas: 1\n        maxReplicas: 1", "minReplicas: 2\n        maxReplicas: 2"), 69),
    ("workers-above-max-replicas", "kueue-idle-quota", "workloads/batch-inference.yaml",  # (warning) Kueue charges 2, KubeRay creates 1
     lambda r: edit(r, "workloads/batch-inference.yaml", "        replicas: 1\n        minReplicas: 1", "        replicas: 2\n        minReplicas: 1"), 67, "warning"),
    ("kuberay-refuses-deadline", "kuberay-validation", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "  entrypoint:", "  activeDeadlineSeconds: 0\n  entrypoint:"), 18),
    ("wrong-queue-label", "sample-queue", f"{PROD}/samples.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", "queue: team-b", "queue: default"), 11),
    ("sample-in-another-namespace", "sample-queue", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "  namespace: ray", "  namespace: default"), 9),
    ("workload-larger-than-queue", "sample-fits", f"{PROD}/samples.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", 'NUM_WORKERS: "4"', 'NUM_WORKERS: "9"'), 7),
    ("workload-larger-than-small-sku", "sample-fits", f"{DEV}/samples.yaml",
     lambda r: edit(r, "clusters/dev-westus3/samples.yaml", 'NUM_WORKERS: "1"', 'NUM_WORKERS: "4"'), 5),
    # A resource no ClusterQueue covers: one finding at the request (fit_causes.py), not one per cluster at samples.yaml.
    ("uncovered-resource", "sample-fits", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", 'nvidia.com/gpu: "1"}', 'nvidia.com/gpu: "1", rdma/ib: "1"}'), 90),
    ("rayjob-unknown-field", "schema", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "  entrypoint:", "  entrypointt:")),
    ("unknown-sample", "sample-render", f"{PROD}/samples.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", "sample: batch-inference", "sample: batch-inferense"), 10),
    ("workload-shell-default", "sample-render", "workloads/batch-inference.yaml",  # one cause in the workload, not per entry
     lambda r: edit(r, "workloads/batch-inference.yaml", "queue-name: ${QUEUE_NAME}", "queue-name: ${QUEUE_NAME:=team-a}"), 11),
    # What source-controller leaves out of the artifact is not there for kustomize-controller either.
    ("sourceignored-resource", "kustomize-build", ".sourceignore",  # at the pattern that leaves it out of the artifact
     lambda r: append(r, ".sourceignore", "/overlays/team-queues/team-b.yaml\n"), 8),
    ("component-patch-path-missing", "kustomize-build", "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml",  # at the op
     lambda r: edit(r, "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml", "resources/1/nominalQuota, value: 200Gi",
                    "resources/7/nominalQuota, value: 200Gi"), 12),
    # A team's file copied without renaming every object in it: at the second one's name, naming the first.
    ("object-written-twice", "kustomize-build", "overlays/team-queues/team-c.yaml",
     lambda r: (write(r, "overlays/team-queues/team-c.yaml", (r / TEAM_B).read_text().replace("team-b-cq", "team-c-cq")),
                edit(r, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml", "  - team-b.yaml\n  - team-c.yaml")), 37),
    # ... and in a component the overlay includes: at the component's file.
    ("object-written-twice-in-a-component", "kustomize-build", "components/extra/b.yaml",
     lambda r: (write(r, "components/extra/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                      "resources: [a.yaml, b.yaml]\n"),
                [write(r, f"components/extra/{n}.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: ray\n")
                 for n in "ab"],
                append(r, "overlays/team-queues/kustomization.yaml", "  - ../../components/extra\n")), 4),
    # A nested key YAML reads as a number: kustomize cannot serialise the object; at the key, not at the component patching it.
    ("nonstring-key-in-a-patched-object", "kustomize-build", TEAM_A,
     lambda r: edit(r, TEAM_A, "  labels:\n", "  labels:\n    1: x\n"), 6),
    ("nonstring-key-in-a-base-object", "kustomize-build", "base/bin.yaml",
     lambda r: (write(r, "base/bin.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bin\n  namespace: ray\ndata:\n  1.5: x\n"),
                edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - bin.yaml\n")), 7),
    # ... set by a kustomization's own label or annotation transformer: at the key there, quoted or not (kustomize writes it plain).
    ("nonstring-key-in-commonlabels", "kustomize-build", "base/kustomization.yaml",
     lambda r: append(r, "base/kustomization.yaml", "commonLabels:\n  1: x\n"), 13),
    ("quoted-nonstring-key-in-labels-pairs", "kustomize-build", "base/kustomization.yaml",
     lambda r: append(r, "base/kustomization.yaml", "labels:\n  - pairs:\n      \"1.5\": x\n"), 14),
    ("yaml-1-1-boolean-key-in-commonlabels", "kustomize-build", "base/kustomization.yaml",
     lambda r: append(r, "base/kustomization.yaml", "commonLabels:\n  yes: x\n"), 13),  # the kustomization's loader makes "true" of it
    ("nonstring-key-in-commonannotations", "kustomize-build", "base/kustomization.yaml",
     lambda r: append(r, "base/kustomization.yaml", "commonAnnotations:\n  \"true\": x\n"), 13),
    ("null-key", "yaml-syntax", "workloads/llm-training.yaml",
     lambda r: edit(r, "workloads/llm-training.yaml", "  labels:\n", "  labels:\n    ~: x\n")),
    ("missing-resource-file", "kustomize-build", "overlays/team-queues/kustomization.yaml",
     lambda r: edit(r, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml", "  - team-c.yaml")),
    # A generator's file that is not there, and helmCharts (kustomize-controller does not inflate them): the line written.
    ("generator-file-missing", "kustomize-build", "overlays/team-queues/kustomization.yaml",
     lambda r: append(r, "overlays/team-queues/kustomization.yaml",
                      "configMapGenerator:\n  - name: extra\n    namespace: ray\n    files:\n      - nothere.conf\n"), 15),
    ("helm-charts-in-kustomization", "kustomize-build", "overlays/team-queues/kustomization.yaml",
     lambda r: append(r, "overlays/team-queues/kustomization.yaml",
                      "helmCharts:\n  - name: kueue\n    repo: oci://registry.k8s.io/kueue/charts\n    version: 0.17.1\n"), 13),
    # The scheduler places no pod whose PersistentVolumeClaim does not exist: the admitted job holds its quota.
    ("sample-claim-missing", "object-ref", "workloads/batch-inference.yaml", lambda r: _mount_claim(r, "datasets"), 67),
    # The gate validates with Kubernetes 1.35 (versions.yaml): a cluster on another minor is not what it proved.
    ("aks-on-another-kubernetes-minor", "terraform-kubernetes-version", "terraform/clusters/prod-eastus2.tfvars",
     lambda r: append(r, "terraform/clusters/prod-eastus2.tfvars", 'kubernetes_version = "1.33"\n'), 16),
    ("aks-default-kubernetes-moved", "terraform-kubernetes-version", "terraform/variables.tf",
     lambda r: edit(r, "terraform/variables.tf", 'default     = "1.35"', 'default     = "1.36"'), 53),
    ("dangling-source-ref", "flux-source-ref", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "    name: flux-system\n  path:", "    name: flux-systen\n  path:")),
    ("dangling-chart-ref", "flux-source-ref", "flux/infrastructure/controllers/kueue.yaml",
     lambda r: edit(r, "flux/infrastructure/controllers/kueue.yaml", "    kind: OCIRepository\n    name: kueue\n", "    kind: OCIRepository\n    name: kueue-chart\n")),
    # A Flux layer's build that fails is reported at the setting that breaks it, not at spec.path.
    ("invalid-substitute-name", "kustomize-build", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "      CLUSTER_NAME: prod-eastus2\n", "      CLUSTER_NAME: prod-eastus2\n      cluster-region: eastus2\n"), 24),
    ("target-namespace-collision", "kustomize-build", f"{PROD}/infrastructure.yaml",
     lambda r: edit(r, f"{PROD}/infrastructure.yaml", "  path:", "  targetNamespace: flux-system\n  path:"), 17),
    # A health check on a Deployment the Kueue chart does not create (it creates kueue-controller-manager).
    ("health-check-on-a-deployment-the-chart-lacks", "flux-health-check", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "  prune: true\n", "  prune: true\n  healthChecks:\n    - apiVersion: apps/v1\n"
                    "      kind: Deployment\n      name: kueue-manager\n      namespace: kueue-system\n"), 17),
    ("queues-without-prune", "flux-prune", f"{PROD}/queues.yaml", lambda r: edit(r, f"{PROD}/queues.yaml", "  prune: true", "  prune: false"), 15),
    # source-controller takes spec.ref's digest, then semver, then tag: a semver beside the pinned tag wins.
    ("chart-semver-beside-tag", "versions-drift", KUEUE, lambda r: edit(r, KUEUE, "    tag: 0.17.1\n", "    tag: 0.17.1\n    semver: 0.17.x\n"), 16),
    ("chart-tag-drift", "versions-drift", "flux/infrastructure/controllers/kueue.yaml",
     lambda r: edit(r, "flux/infrastructure/controllers/kueue.yaml", "    tag: 0.17.1", "    tag: 0.17.2"), 15),
    # The chart is found through the HelmRelease, whatever its source is named, and a HelmRepository's chart by its version.
    ("chart-tag-drift-in-a-renamed-source", "versions-drift", KUEUE,
     lambda r: (edit(r, KUEUE, "    tag: 0.17.1", "    tag: 0.16.0"), edit(r, KUEUE, "  name: kueue\n  namespace: flux-system\nspec:\n  interval: 24h",
                                                                           "  name: kueue-chart\n  namespace: flux-system\nspec:\n  interval: 24h"),
                edit(r, KUEUE, "    kind: OCIRepository\n    name: kueue\n", "    kind: OCIRepository\n    name: kueue-chart\n")), 15),
    ("chart-version-range-of-a-helm-repository", "versions-drift", KUEUE, lambda r: _from_helm_repository(r, "  type: oci\n", "0.17.x"), 32),
    ("helm-repository-oci-url-without-type", "flux-source-url", KUEUE,  # source-controller refuses it: Kueue is never installed
     lambda r: _from_helm_repository(r, "", "0.17.1"), 13),
    ("image-tag-drift", "versions-drift", "flux/infrastructure/controllers/kuberay-operator.yaml",
     lambda r: edit(r, "flux/infrastructure/controllers/kuberay-operator.yaml", "      tag: v1.6.1", "      tag: v1.6.2"), 47),
    ("pin-moved-alone", "versions-drift", "flux/infrastructure/controllers/kueue.yaml",
     lambda r: edit(r, "versions.yaml", "  production: 0.17.1", "  production: 0.18.1")),
    ("two-layers-same-queues", "object-collision", f"{PROD}/queues.yaml",  # at the later layer's path: one finding for all it shares
     lambda r: append(r, f"{PROD}/queues.yaml", (r / f"{PROD}/queues.yaml").read_text().replace("name: queues\n", "name: queues-copy\n", 1).replace("# Layer 2", "---\n# Layer 2", 1)), 47),
    # References in the cluster's rendered set (harness/gate/cluster_refs.py).
    ("namespace-not-created", "namespace-missing", SA,
     lambda r: edit(r, SA, "  name: ray-storage\n  namespace: ray", "  name: ray-storage\n  namespace: storage"), 16),
    ("substitute-from-missing", "object-ref", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "        name: cluster-vars", "        name: cluster-variables"), 26),
    ("pod-configmap-missing", "object-ref", SA,
     lambda r: append(r, SA, JOB_WITH.format(extra="          envFrom:\n            - configMapRef: {name: warmup-env}\n")), 33),
    ("pod-priority-class-missing", "priority-class", SA,
     lambda r: append(r, SA, JOB_WITH.format(extra="      priorityClassName: batch-high\n")), 32),
    ("cluster-outlives-job", "sample-ttl-holds-nodes", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "ttlSecondsAfterFinished: 0", "ttlSecondsAfterFinished: 300"), 17, "warning"),
    ("lonely-cohort", "cohort-alone", TEAM_B, lambda r: edit(r, TEAM_B, "cohortName: shared-cohort", "cohortName: other-cohort"), 9, "warning"),
    # Sizes (cluster_refs.py).
    ("object-too-large", "object-size", KUBERAY, lambda r: edit(r, KUBERAY, "    env:\n", "    blob: " + "x" * 1_700_000 + "\n    env:\n"), 20),
    ("configmap-too-large", "data-size", SA,
     lambda r: edit(r, SA, '"${AZURE_STORAGE_ACCOUNT_NAME}"\n', '"${AZURE_STORAGE_ACCOUNT_NAME}"\n  big: ' + "y" * 1_200_000 + "\n"), 17),
    ("annotations-too-large", "api-validation", "base/namespace.yaml",
     lambda r: edit(r, "base/namespace.yaml", "  name: ray\n", "  name: ray\n  annotations:\n    note: " + "z" * 300_000 + "\n"), 5),
    ("label-value-too-long", "api-validation", "base/namespace.yaml",
     lambda r: edit(r, "base/namespace.yaml", "  name: ray\n", "  name: ray\n  labels:\n    team: " + "a" * 64 + "\n"), 6),
    ("name-too-long", "api-validation", "base/priority-classes.yaml", lambda r: edit(r, "base/priority-classes.yaml", "  name: low\n", "  name: " + "l" * 254 + "\n"), 14),
    ("label-value-with-spaces", "api-validation", "base/namespace.yaml",
     lambda r: edit(r, "base/namespace.yaml", "  name: ray\n", "  name: ray\n  labels:\n    team: ML Platform\n"), 6),
    ("configmap-key-with-space", "api-validation", SA, lambda r: edit(r, SA, "  AZURE_STORAGE_ACCOUNT_NAME:", "  AZURE STORAGE:"), 18),
    # Samples that can never be admitted (harness/gate/sample_admission.py): at the samples.yaml entry.
    # The samples' namespace enforces PodSecurity "restricted": the apiserver forbids every pod KubeRay creates (one finding, at the label).
    ("namespace-restricted", "pod-security", "base/namespace.yaml",
     lambda r: edit(r, "base/namespace.yaml", "  name: ray\n", "  name: ray\n  labels:\n    pod-security.kubernetes.io/enforce: restricted\n"), 6),
    ("namespace-pod-security-level-unknown", "api-validation", "base/namespace.yaml",
     lambda r: edit(r, "base/namespace.yaml", "  name: ray\n", "  name: ray\n  labels:\n    pod-security.kubernetes.io/enforce: strict\n"), 6),
    # A RayJob handed to MultiKueue on a cluster without a MultiKueue admission check: KubeRay skips it, Kueue admits it.
    ("sample-managed-by-multikueue", "sample-managed-by", f"{PROD}/samples.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "  shutdownAfterJobFinishes: true\n",
                    "  shutdownAfterJobFinishes: true\n  managedBy: kueue.x-k8s.io/multikueue\n"), 10),
    # The workload identity the samples' ServiceAccount uses needs the cluster's OIDC issuer and the identity webhook.
    ("aks-without-oidc-issuer", "terraform-workload-identity", "terraform/aks.tf",
     lambda r: edit(r, "terraform/aks.tf", "oidc_issuer_enabled       = true", "oidc_issuer_enabled       = false"), 15),
    ("aks-without-workload-identity", "terraform-workload-identity", "terraform/aks.tf",
     lambda r: edit(r, "terraform/aks.tf", "  workload_identity_enabled = true\n", ""), 5),
    # Node pool labels and taints the kubelet or the apiserver refuses: the pool's nodes never join (node_settings.py).
    ("node-label-the-kubelet-refuses", "capacity-node-settings", "terraform/node_pools.tf",
     lambda r: edit(r, "terraform/node_pools.tf", '"aks.azure.com/gpu-sku" = var.gpu_sku_label }',
                    '"aks.azure.com/gpu-sku" = var.gpu_sku_label, "node-role.kubernetes.io/gpu" = "" }'), 25),
    ("node-taint-effect-typo", "capacity-node-settings", "terraform/node_pools.tf",
     lambda r: edit(r, "terraform/node_pools.tf", "  node_taints = []\n", '  node_taints = ["sku=gpu:NoSchedul"]\n'), 26),
    # Pool settings AKS refuses, or that change what the nodes offer (node_settings.py): a Spot system pool; MIG instances.
    ("spot-system-pool", "capacity-spot-system-pool", "terraform/node_pools.tf",
     lambda r: (edit(r, "terraform/node_pools.tf", '  mode                    = "User"\n  vm_size                 = var.gpu_vm_size\n',
                     '  mode                    = "System"\n  vm_size                 = var.gpu_vm_size\n'),
                edit(r, "terraform/node_pools.tf", "  gpu_driver  = var.gpu_driver\n", '  gpu_driver  = var.gpu_driver\n  priority    = "Spot"\n')), 25),
    ("gpu-pool-mig-profile", "capacity-gpu-mig", "terraform/node_pools.tf",
     lambda r: edit(r, "terraform/node_pools.tf", "  gpu_driver  = var.gpu_driver\n", '  gpu_driver  = var.gpu_driver\n  gpu_instance = "MIG1g"\n'),
     25, "warning"),
    ("pools-in-a-registry-module", "terraform-module-unread", "terraform/node_pools.tf",  # (warning) not read offline; pool checks skip
     lambda r: append(r, "terraform/node_pools.tf", '\nmodule "spot" {\n  source = "Azure/aks-node-pool/azurerm"\n'
                      '  cluster_id = azurerm_kubernetes_cluster.this.id\n}\n'), 56, "warning"),
    ("gpu-instance-outside-azurerm-set", "capacity-node-settings", "terraform/node_pools.tf",
     lambda r: edit(r, "terraform/node_pools.tf", "  gpu_driver  = var.gpu_driver\n", '  gpu_driver  = var.gpu_driver\n  gpu_instance = "mig1g"\n'), 25),
    ("gpu-instance-profile-is-not-azurerm", "capacity-node-settings", "terraform/node_pools.tf",
     lambda r: edit(r, "terraform/node_pools.tf", "  gpu_driver  = var.gpu_driver\n", '  gpu_driver  = var.gpu_driver\n  gpu_instance_profile = "MIG1g"\n'),
     25),
    # The AKS Flux extension's multi-tenancy (terraform/flux.tf): a HelmRelease outside flux-system acts as <ns>/flux-applier, with no rights.
    ("helm-release-outside-flux-system", "flux-multi-tenancy", KUEUE,
     lambda r: edit(r, KUEUE, "kind: HelmRelease\nmetadata:\n  name: kueue\n  namespace: flux-system\n",
                    "kind: HelmRelease\nmetadata:\n  name: kueue\n  namespace: kueue-system\n"), 24),
    ("chart-ref-across-namespaces", "flux-multi-tenancy", KUEUE,
     lambda r: edit(r, KUEUE, "    kind: OCIRepository\n    name: kueue\n", "    kind: OCIRepository\n    name: kueue\n    namespace: kueue-system\n"), 36),
    # The KubeRay operator watches other namespaces than the samples': Kueue admits them, KubeRay never runs them.
    ("kuberay-watches-other-namespace", "kuberay-watch-namespace", KUBERAY,
     lambda r: edit(r, KUBERAY, "  values:\n", "  values:\n    watchNamespace:\n      - ray-jobs\n"), 45),
    ("kuberay-single-namespace", "kuberay-watch-namespace", KUBERAY,
     lambda r: edit(r, KUBERAY, "  values:\n", "  values:\n    singleNamespaceInstall: true\n"), 45),
    # A RuntimeClass no layer creates: the RuntimeClass admission refuses the pods of the admitted job.
    ("sample-runtime-class-missing", "object-ref", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "            serviceAccountName: ray-workload\n",
                    "            serviceAccountName: ray-workload\n            runtimeClassName: nvidia\n"), 78),
    # Two default PriorityClasses: the apiserver's Priority admission refuses the second (reported at it, by name order).
    ("two-default-priority-classes", "priority-class-default", SA,
     lambda r: append(r, SA, "".join(f"---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {n}\nvalue: {v}\n"
                                     f"globalDefault: true\n" for n, v in (("batch-default", 100), ("serving-default", 1000)))), 32),
    # No OpenAPI pattern for a quantity: only the apiserver's decoding refuses it (tools/kubecheck decodes as it does).
    ("job-quantity-unparsable", "api-validation", SA,
     lambda r: append(r, SA, JOB_WITH.format(extra="          resources:\n            limits:\n              memory: 4 GiB\n")), 34),
    ("pod-runtime-class-missing", "object-ref", SA, lambda r: append(r, SA, JOB_WITH.format(extra="      runtimeClassName: kata\n")), 32),
    # A key the set's ConfigMap does not have: the kubelet cannot start the container (at the key's line, once per key).
    ("sample-configmap-key-typo", "object-ref", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "key: AZURE_STORAGE_ACCOUNT_NAME}", "key: AZURE_STORAGE_ACCOUNT}"), 56),
    ("pod-configmap-key-missing", "object-ref", SA,
     lambda r: append(r, SA, JOB_WITH.format(extra="          env:\n            - name: ACCOUNT\n              valueFrom:\n"
                                                   "                configMapKeyRef: {name: ray-storage, key: ACCOUNT}\n")), 35),
    # Nothing creates a sample's ConfigMap with the job: one finding at the name line of the first volume naming it.
    ("sample-scripts-configmap-missing", "object-ref", "workloads/llm-training.yaml",
     lambda r: edit(r, SCRIPTS, "  - name: llm-training-scripts\n", "  - name: llm-training-code\n"), 67),
    ("layer-rayjob-configmap-missing", "object-ref", "base/nightly.yaml", lambda r: _layer_rayjob_mounting(r, "nightly-jobs", "x.py"), 32),
    # The entrypoint (read as the shell reads it) runs a file the mounted ConfigMap does not hold, at the entrypoint.
    ("sample-script-key-renamed", "entrypoint-file", "workloads/llm-training.yaml",
     lambda r: edit(r, SCRIPTS, "      - llm_training.py\n", "      - train.py=llm_training.py\n"), 18, "warning"),
    ("layer-rayjob-script-missing", "entrypoint-file", "base/nightly.yaml", lambda r: _layer_rayjob_mounting(r, "ray-storage", "nightly.py"),
     10, "warning"),
    ("pod-command-script-missing", "entrypoint-file", SA,
     lambda r: append(r, SA, JOB_WITH.format(extra='          command: [sh, -c, "cd /opt && /opt/jobs/warm.sh"]\n'
                                                   "          volumeMounts: [{name: jobs, mountPath: /opt/jobs}]\n"
                                                   "      volumes: [{name: jobs, configMap: {name: ray-storage}}]\n")), 32, "warning"),
    # No queue label and no LocalQueue "default" in the namespace for Kueue's webhook to put there.
    ("sample-without-queue-label", "sample-queue", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n", "    team: ${QUEUE_NAME}\n"), 10),
    ("sample-service-account-missing", "object-ref", "workloads/llm-training.yaml",
     lambda r: edit(r, "workloads/llm-training.yaml", "serviceAccountName: ray-workload", "serviceAccountName: ray-worker"), 50),
    # At the line of the workload that names it, once for every cluster it is missing on.
    ("unknown-workload-priority", "sample-priority-class", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}",
                    "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n    kueue.x-k8s.io/priority-class: urgent"), 12),
    ("unknown-pod-priority", "sample-priority-class", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "          serviceAccountName: ray-workload",
                    "          serviceAccountName: ray-workload\n          priorityClassName: gpu-critical"), 50),
    ("namespace-not-selected", "queue-namespace-selector", TEAM_A,  # at the selector, once for every job queued there
     lambda r: edit(r, TEAM_A, "namespaceSelector: {}", "namespaceSelector: {matchLabels: {team: a}}"), 10),
    ("namespace-excluded", "queue-namespace-selector", SINGLE,
     lambda r: edit(r, SINGLE, "namespaceSelector: {}", "namespaceSelector:\n    matchExpressions:\n"
                    "      - {key: kubernetes.io/metadata.name, operator: NotIn, values: [ray]}"), 9),
    ("namespace-selector-invalid", "kueue-webhook", TEAM_B,  # the samples' queue-namespace-selector findings are folded under it
     lambda r: edit(r, TEAM_B, "namespaceSelector: {}", "namespaceSelector: {matchExpressions: [{key: team, operator: In}]}"), 10),
    ("clusterqueue-held", "queue-stopped", TEAM_B,  # at the stopPolicy, once for every job queued there
     lambda r: edit(r, TEAM_B, "  queueingStrategy: BestEffortFIFO", "  stopPolicy: Hold\n  queueingStrategy: BestEffortFIFO"), 11),
    ("localqueue-held", "queue-stopped", SINGLE,
     lambda r: edit(r, SINGLE, "  clusterQueue: cluster-queue", "  clusterQueue: cluster-queue\n  stopPolicy: HoldAndDrain"), 34),
    ("clusterqueue-unreachable", "clusterqueue-unreachable", TEAM_B,
     lambda r: (edit(r, TEAM_B, "clusterQueue: team-b-cq", "clusterQueue: team-a-cq"), edit(r, TEAM_B, "  cohortName: shared-cohort\n", "")),
     1, "warning"),
    ("kueue-without-rayjob", "kueue-rayjob-integration", KUEUE, lambda r: edit(r, KUEUE, "            - ray.io/rayjob\n", ""), 74),
    ("release-depends-on-nothing", "flux-depends-on", KUBERAY,
     lambda r: edit(r, KUBERAY, "  interval: 12h\n", "  interval: 12h\n  dependsOn:\n    - name: cert-manager\n"), 33),
    ("health-check-names-nothing", "flux-health-check", f"{PROD}/infrastructure.yaml",
     lambda r: edit(r, f"{PROD}/infrastructure.yaml", "  wait: true\n", "  healthChecks:\n    - apiVersion: helm.toolkit.fluxcd.io/v2\n"
                    "      kind: HelmRelease\n      name: kueue-typo\n      namespace: kueue-system\n"), 14),
    # The same sample twice on a cluster: the second `kubectl create` of RayJob ray/aurora-finetune is refused (AlreadyExists).
    ("sample-listed-twice", "sample-duplicate", f"{PROD}/samples.yaml", lambda r: append(r, f"{PROD}/samples.yaml", "- sample: aurora-finetune\n  queue: team-b\n"), 12),
    # KubeRay's CRDs are in its chart's crds/: without upgrade.crds CreateReplace a chart upgrade keeps the old ones.
    ("kuberay-crds-not-upgraded", "helm-crds-upgrade", KUBERAY, lambda r: edit(r, KUBERAY, "  upgrade:\n    crds: CreateReplace\n", "  upgrade:\n"), 40, "warning"),
    # An init container bigger than the containers: Kueue charges the larger of the two (30 + 2 head + submitter > 24 cpu on dev).
    ("init-container-over-the-queue", "sample-fits", f"{DEV}/samples.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "            containers:\n              - name: ray-worker\n",
                    "            initContainers:\n              - name: warm\n                image: ${RAY_IMAGE}\n                resources:\n"
                    "                  limits: {cpu: \"30\", memory: 1Gi}\n            containers:\n              - name: ray-worker\n"), 3),
    # A node subnet too small for the pools' nodes and an upgrade's surge, or outside its virtual network (subnets.py).
    ("node-subnet-too-small", "terraform-node-subnet", "terraform/clusters/prod-eastus2.tfvars",
     lambda r: append(r, "terraform/clusters/prod-eastus2.tfvars", 'nodes_subnet_cidr = "10.240.0.0/29"\n'), 16),
    ("node-subnet-outside-the-vnet", "terraform-node-subnet", "terraform/clusters/prod-eastus2.tfvars",
     lambda r: append(r, "terraform/clusters/prod-eastus2.tfvars", 'nodes_subnet_cidr = "10.250.0.0/22"\n'), 16),
    ("pod-addresses-in-a-small-subnet", "terraform-node-subnet", "terraform/variables.tf",
     lambda r: (edit(r, "terraform/aks.tf", '    network_plugin_mode = "overlay"\n', ""),
                edit(r, "terraform/variables.tf", 'default     = "10.240.0.0/22"', 'default     = "10.240.0.0/25"'))),
    # A network_profile azurerm/AKS refuses; address ranges that collide with AKS's service CIDR (subnets.py); a federated credential
    # whose issuer is not the cluster's OIDC issuer (workload_identity.py).
    ("calico-on-the-cilium-data-plane", "terraform-network-profile", "terraform/aks.tf",
     lambda r: edit(r, "terraform/aks.tf", 'network_policy      = "cilium"', 'network_policy      = "calico"'), 66),
    ("node-subnet-in-the-default-service-cidr", "terraform-address-ranges", "terraform/clusters/dev-westus3.tfvars",
     lambda r: append(r, "terraform/clusters/dev-westus3.tfvars", 'vnet_cidr = "10.0.0.0/16"\nnodes_subnet_cidr = "10.0.0.0/22"\n'), 18),
    # A misspelt client-id key on the ServiceAccount the credential trusts: at the key, not at the credential (workload_identity.py).
    ("misspelt-client-id-annotation", "terraform-federated-subject", SA,
     lambda r: edit(r, SA, "azure.workload.identity/client-id:", "azure.workload.identity/client_id:"), 8),
    ("issuer-of-another-cluster", "terraform-federated-subject", "terraform/identity.tf",
     lambda r: edit(r, "terraform/identity.tf", "azurerm_kubernetes_cluster.this.oidc_issuer_url", '"https://eastus2.oic.prod-aks.azure.com/t/g/"'), 26),
    # A LimitRange default for containers without requests: Kueue charges it to the submitters (AdjustResources), 30 + the rest > 24 cpu.
    # Kueue's flavor assigner (kueue_fit.py): cpu from one flavor and memory from another is no assignment for a pod set.
    ("cpu-and-memory-on-two-flavors", "sample-fits", f"{DEV}/samples.yaml",
     lambda r: (append(r, "base/resource-flavors.yaml", "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: default-b\nspec: {}\n"),
                edit(r, "overlays/single-queue/cluster-queue.yaml", "    - coveredResources: [nvidia.com/gpu]",
                     "        - name: default-b\n          resources:\n            - name: cpu\n              nominalQuota: \"4\"\n"
                     "            - name: memory\n              nominalQuota: 180Gi\n    - coveredResources: [nvidia.com/gpu]"),
                edit(r, "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml", "value: 200Gi}", "value: 20Gi}")), 3),
    # A pods quota of 2: Kueue charges one pod per head, worker and submitter.
    ("pods-quota-below-the-pod-sets", "sample-fits", f"{DEV}/samples.yaml",
     lambda r: (edit(r, "overlays/single-queue/cluster-queue.yaml", "    - coveredResources: [cpu, memory]", "    - coveredResources: [cpu, memory, pods]"),
                edit(r, "overlays/single-queue/cluster-queue.yaml", "              nominalQuota: \"0\"     # set by components/gpu-sku\n    - coveredResources: [nvidia",
                     "              nominalQuota: \"0\"     # set by components/gpu-sku\n            - name: pods\n              nominalQuota: \"2\"\n"
                     "    - coveredResources: [nvidia")), 3),
    # The manager's resource transformations add a resource no ClusterQueue covers to every GPU pod set: at the output.
    ("transformation-to-an-uncovered-resource", "sample-fits", KUEUE,
     lambda r: edit(r, KUEUE, "        featureGates:\n", "        resources:\n          transformations:\n            - input: nvidia.com/gpu\n"
                    "              strategy: Retain\n              outputs:\n                example.com/gpu-memory: 80Gi\n        featureGates:\n"), 87),
    # Without spec.postBuild kustomize-controller substitutes nothing: the queue layer's ${VAR}s are applied as written.
    ("queue-layer-without-post-build", "flux-variable-undefined", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "  postBuild:\n    substitute:\n      CLUSTER_NAME: prod-eastus2\n    substituteFrom:\n"
                    "      - kind: ConfigMap\n        name: cluster-vars\n", ""), 9),
    # SidecarMode: KubeRay adds its default submitter container (500m, 200Mi) to the head pod; Kueue 0.17 does not charge it,
    # so the job is admitted (23.4 of 24 cpu) and its pods need 23.9 cpu of the GPU node's 23.66 allocatable.
    # (dev-westus3 with two NC24ads nodes and quota for both: Kueue 0.17 charges the head without its sidecar, 23.5 CPU of a
    # node's 23.66 allocatable, and the sidecar does not fit beside it.)
    ("sidecar-submitter-on-the-head", "capacity-pods-scheduled", "workloads/aurora-finetune.yaml",
     lambda r: (edit(r, "workloads/aurora-finetune.yaml", "  submitterPodTemplate:\n    spec:\n      restartPolicy: Never\n      containers:\n"
                     "        - name: ray-job-submitter\n          image: ${RAY_IMAGE}\n", "  submissionMode: SidecarMode\n"),
                two_dev_gpu_nodes(r),
                edit(r, "workloads/aurora-finetune.yaml", 'requests: {cpu: "2", memory: 8Gi}', 'requests: {cpu: "23.5", memory: 8Gi}'),
                edit(r, "workloads/aurora-finetune.yaml", 'limits: {cpu: "2", memory: 8Gi}', 'limits: {cpu: "23.5", memory: 8Gi}')), 39),
    # A scheduler AKS does not run: nothing binds the pods, which hold the job's quota.
    ("scheduler-the-cluster-lacks", "capacity-pods-scheduled", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "            containers:", "            schedulerName: volcano\n            containers:"), 72),
    # A RayJob a layer applies (not a sample) whose queue label names no LocalQueue of its namespace.
    ("layer-rayjob-unknown-queue", "workload-queue", "base/nightly.yaml", lambda r: _layer_rayjob(r, "bach"), 7),
    # A `flux bootstrap` cluster nested below a directory of clusters/ that is no cluster: checked by nothing, said so.
    ("nested-bootstrap-cluster", "cluster-unchecked", "clusters/eu/west/flux-system/gotk-sync.yaml",
     lambda r: (write(r, "clusters/eu/west/flux-system/kustomization.yaml", "resources: [gotk-sync.yaml]\n"),
                write(r, "clusters/eu/west/flux-system/gotk-sync.yaml", (r / f"{PROD}/flux-system/gotk-sync.yaml").read_text())),
     None, "warning"),
    # ... one finding at the default that keeps the jobs out, not one per sample (fit_causes.py).
    ("limit-range-default-over-the-queue", "sample-fits", "base/namespace.yaml",
     lambda r: append(r, "base/namespace.yaml", "---\napiVersion: v1\nkind: LimitRange\nmetadata:\n  name: defaults\n  namespace: ray\n"
                      "spec:\n  limits:\n    - type: Container\n      default: {cpu: \"30\", memory: 1Gi}\n      defaultRequest: {cpu: \"30\", memory: 1Gi}\n"), 15),
    # The queue layer ordered after the layer that installs Kueue, which waits for it (served_apis.py; the README's layers).
    ("queues-before-kueue", "flux-layer-order", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "  dependsOn:\n    - name: infra-controllers\n", ""), 9, "warning"),
    ("infrastructure-does-not-wait", "flux-layer-order", f"{PROD}/infrastructure.yaml",
     lambda r: edit(r, f"{PROD}/infrastructure.yaml", "  wait: true\n", "  wait: false\n"), 13, "warning"),
    # The Kueue manager configuration against what its chart wires and the cluster runs (kueue_wiring.py).
    ("kueue-webhook-port-not-the-services", "kueue-chart-wiring", KUEUE, lambda r: edit(r, KUEUE, "          port: 9443\n", "          port: 9444\n"), 69),
    ("kueue-probe-port-not-the-charts", "kueue-chart-wiring", KUEUE,
     lambda r: edit(r, KUEUE, "healthProbeBindAddress: :8081", "healthProbeBindAddress: :9090"), 65),
    ("kueue-without-webhook-certificates", "kueue-chart-wiring", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n", "        internalCertManagement:\n          enable: false\n        integrations:\n"), 74),
    ("kueue-no-replicas", "kueue-chart-wiring", KUEUE, lambda r: edit(r, KUEUE, "    controllerManager:\n", "    controllerManager:\n      replicas: 0\n"), 46),
    ("kueue-manages-pods-of-flux", "kueue-manage-without-queue-name", KUEUE,
     lambda r: (edit(r, KUEUE, "        integrations:\n", "        manageJobsWithoutQueueName: true\n        integrations:\n"),
                edit(r, KUEUE, "            - batch/job\n", "            - batch/job\n            - pod\n")), 73),
    # Kueue's pod integration, queued by nothing: the chart's pod webhooks (failurePolicy Fail) over flux-system (kueue_webhooks.py).
    ("kueue-pod-integration-over-flux", "kueue-webhook-scope", KUEUE,
     lambda r: edit(r, KUEUE, "            - batch/job\n", "            - batch/job\n            - pod\n"), 76, "warning"),
    ("kueue-excludes-gpus", "kueue-excluded-resource", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n", "        resources:\n          excludeResourcePrefixes: [nvidia.com/]\n        integrations:\n"), 74),
    # A Replace transformation without outputs drops its input as excludeResourcePrefixes does: at its input (kueue_wiring.py).
    ("kueue-replace-without-outputs", "kueue-excluded-resource", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n", "        resources:\n          transformations:\n            - input: nvidia.com/gpu\n"
                    "              strategy: Replace\n        integrations:\n"), 75),
    # A transformation output the GPU pods request themselves: Kueue's charge depends on Go map order; once, at the output.
    ("transformation-output-the-pods-request", "sample-fits", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n", "        resources:\n          transformations:\n            - input: nvidia.com/gpu\n"
                    "              outputs:\n                cpu: \"20\"\n        integrations:\n"), 77),
    # A multiplyBy that charges every GPU job more than its ClusterQueue holds: once, at the multiplyBy (fit_causes.py).
    ("transformation-multiply-by", "sample-fits", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n", "        resources:\n          transformations:\n            - input: nvidia.com/gpu\n"
                    "              multiplyBy: cpu\n              strategy: Replace\n              outputs:\n                nvidia.com/gpu: \"1\"\n"
                    "        integrations:\n"), 76),
    # A managedJobsNamespaceSelector that leaves out the namespace of the LocalQueues (ManagedJobsNamespaceSelectorAlwaysRespected).
    ("kueue-selector-leaves-out-ray", "kueue-namespace-unmanaged", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n", "        managedJobsNamespaceSelector:\n          matchLabels: {kueue-managed: \"true\"}\n"
                    "        integrations:\n"), 73),
    # The Kueue chart rendered with the HelmRelease's values by Helm's engine, its objects through the apiserver's validation.
    ("kueue-values-key-typo", "helm-values-unused", KUEUE, lambda r: edit(r, KUEUE, "      tolerations:\n", "      toleration:\n"), 51, "warning"),
    ("kueue-values-toleration-typo", "helm-values", KUEUE, lambda r: edit(r, KUEUE, "          effect: NoSchedule\n", "          effect: NoSchedul\n"), 54),
    ("kueue-values-bad-quantity", "helm-values", KUEUE,
     lambda r: edit(r, KUEUE, "          tag: v0.17.1\n", "          tag: v0.17.1\n        resources:\n          limits:\n            cpu: 2 cores\n"), 52),
    ("kueue-values-image-as-string", "helm-values", KUEUE,
     lambda r: edit(r, KUEUE, "        image:\n          repository: mcr.microsoft.com/oss/v2/kueue/kueue\n          tag: v0.17.1\n",
                    "        image: mcr.microsoft.com/oss/v2/kueue/kueue:v0.17.1\n"), 47),
    ("kueue-values-name-too-long", "helm-values", KUEUE,
     lambda r: edit(r, KUEUE, "    controllerManager:\n", "    fullnameOverride: kueue-controller-manager-for-the-production-gpu-clusters-eastus2\n    controllerManager:\n"), 44),
    # The chart's controller-manager pod placed on the pools by kube-scheduler's plugins (operator_placement.py): 4 CPUs
    # on the system pool (Standard_D4ds_v6 offers 3.86), at the request; a nodeSelector no pool's nodes carry, at the entry.
    ("kueue-controller-above-system-pool", "operator-placement", KUEUE, lambda r: kueue_controller(r, "4", "kubernetes.azure.com/mode: system"), 52),
    ("kueue-controller-selector-no-pool", "operator-placement", KUEUE,
     lambda r: edit(r, KUEUE, "      # The system pool is tainted", "      nodeSelector:\n        agentpool: nope\n      # The system pool is tainted"), 51),
    ("kueue-cert-manager-not-installed", "kueue-chart-wiring", KUEUE,
     lambda r: edit(r, KUEUE, "    controllerManager:\n", "    enableCertManager: true\n    controllerManager:\n"), 45, "warning"),
    # A Spot GPU pool: AKS taints its nodes kubernetes.azure.com/scalesetpriority=spot:NoSchedule (pools.py).
    ("gpu-pool-on-spot", "capacity-flavor-labels", "base/resource-flavors.yaml",
     lambda r: edit(r, "terraform/node_pools.tf", "  gpu_driver  = var.gpu_driver\n",
                    '  gpu_driver  = var.gpu_driver\n  priority        = "Spot"\n  eviction_policy = "Delete"\n  spot_max_price  = -1\n'), 16),
    ("queues-layer-target-namespace", "flux-target-namespace", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "  prune: true\n", "  prune: true\n  targetNamespace: ray-prod\n"), 16),
    ("overlay-namespace", "kustomize-namespace", "overlays/team-queues/kustomization.yaml",
     lambda r: edit(r, "overlays/team-queues/kustomization.yaml", "resources:", "namespace: ml\nresources:"), 5),
    ("flux-components-wrong-sku", "capacity-sku-component", f"{DEV}/queues.yaml",
     lambda r: edit(r, f"{DEV}/queues.yaml", "  path: ./clusters/dev-westus3/queues\n",
                    "  path: ./clusters/dev-westus3/queues\n  components:\n    - ../../../components/gpu-sku/standard-nd96amsr-a100-v4\n"), 22),
    ("sample-var-name-too-long", "kuberay-validation", f"{PROD}/samples.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", "- sample: batch-inference\n  queue: team-b\n",
                    "- sample: batch-inference\n  queue: team-b\n  vars: {JOB_NAME: batch-inference-with-a-very-long-name-for-testing-x}\n"), 12),
    ("copied-cluster-applies-the-originals-layer", "flux-other-cluster-path", "clusters/staging/queues.yaml",
     lambda r: copy_cluster(r, "staging"), 20, "warning"),
    ("raycluster-sample-integration-off", "kueue-integration-off", "workloads/dev-cluster.yaml", raycluster_sample, 7),
    ("flux-name-prefix-on-queues", "kustomize-rename", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "  path: ./clusters/prod-eastus2/queues\n", "  path: ./clusters/prod-eastus2/queues\n  namePrefix: prod-\n"), 21),
    ("name-prefix-on-queues", "kustomize-rename", "overlays/team-queues/kustomization.yaml",
     lambda r: edit(r, "overlays/team-queues/kustomization.yaml", "resources:", "namePrefix: prod-\nresources:"), 5),
    # The Kueue manager's configuration, loaded as the pinned manager loads it at start (kueue_manager.py).
    ("kueue-config-unknown-framework", "kueue-config", KUEUE, lambda r: edit(r, KUEUE, "            - batch/job\n", "            - batch/jobs\n"), 75),
    ("kueue-config-unknown-feature-gate", "kueue-config", KUEUE,
     lambda r: edit(r, KUEUE, "FinishOrphanedWorkloads: false", "FinishOrphanedWorkload: false"), 82),
    ("kueue-config-unknown-field", "kueue-config", KUEUE, lambda r: edit(r, KUEUE, "        integrations:\n", "        integrationz:\n"), 73),
    ("kueue-config-bad-duration", "kueue-config", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n", "        waitForPodsReady:\n          timeout: 10 minutes\n        integrations:\n"), 74),
    ("kueue-config-yaml-error", "kueue-config", KUEUE,
     lambda r: edit(r, KUEUE, "healthProbeBindAddress: :8081", "healthProbeBindAddress: [:8081"), 65),
    # The KubeRay operator's feature gates, set as its main sets them at start (kueue_manager.py).
    ("kuberay-feature-gate-of-kueue", "kuberay-feature-gates", KUBERAY,
     lambda r: edit(r, KUBERAY, "  values:\n", "  values:\n    featureGates:\n      - {name: ElasticJobsViaWorkloadSlices, enabled: true}\n"), 45),
    # APIs a cluster uses but does not install, while the repository installs them elsewhere (served_apis.py).
    ("cluster-without-kuberay", "api-not-served", f"{DEV}/samples.yaml",
     lambda r: edit(r, f"{DEV}/kustomization.yaml", "  - infrastructure.yaml\n", ""), 3),
    ("cluster-without-kueue", "api-not-served", "base/resource-flavors.yaml",
     lambda r: edit(r, f"{DEV}/kustomization.yaml", "  - infrastructure.yaml\n", ""), 4),
    # A namespace created only by a layer that dependsOn the one that needs it (cluster_refs.py): never created.
    ("release-namespace-of-a-later-layer", "namespace-missing", KUEUE,
     lambda r: (edit(r, KUEUE, "  targetNamespace: kueue-system\n", "  targetNamespace: kueue\n"),
                edit(r, KUEUE, "  storageNamespace: kueue-system\n", "  storageNamespace: kueue\n"),
                edit(r, "base/namespace.yaml", "kind: Namespace\n", "kind: Namespace\nmetadata:\n  name: kueue\n---\napiVersion: v1\nkind: Namespace\n")), 28),
    ("object-in-a-namespace-of-a-later-layer", "namespace-missing", KUBERAY,
     lambda r: append(r, KUBERAY, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ray-defaults\n  namespace: ray\ndata: {a: b}\n"), 61),
    # Objects applied beside the HelmRelease that installs their CRDs: the layer's dry-run fails on a new cluster.
    ("kueue-objects-beside-kueue", "api-not-served", "flux/infrastructure/controllers/priority-classes.yaml",
     lambda r: _into_controllers(r, "base/priority-classes.yaml"), 4),
    ("rayjob-beside-kuberay", "api-not-served", "flux/infrastructure/controllers/nightly.yaml",
     lambda r: (_layer_rayjob(r, "team-a"), _into_controllers(r, "base/nightly.yaml")), 1),
    ("kuberay-crds-skipped", "api-not-served", KUBERAY, lambda r: edit(r, KUBERAY, "crds: CreateReplace", "crds: Skip"), 37),
    ("suspended-layer", "flux-suspended", f"{PROD}/queues.yaml", lambda r: edit(r, f"{PROD}/queues.yaml", "  prune: true", "  prune: true\n  suspend: true"),
     16, "warning"),
    ("kueue-default-integrations", "kueue-rayjob-integration", KUEUE,
     lambda r: edit(r, KUEUE, "        integrations:\n          frameworks:\n            - batch/job\n            - ray.io/rayjob\n", ""), 61),
    ("cohort-quota-over-capacity", "capacity-quota", TEAM_A,
     lambda r: append(r, TEAM_A, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: shared-cohort\nspec:\n"
                               "  resourceGroups:\n    - coveredResources: [nvidia.com/gpu]\n      flavors:\n        - name: gpu\n"
                               "          resources:\n            - {name: nvidia.com/gpu, nominalQuota: \"64\"}\n"), 52),
    ("requests-above-limits", "kueue-inadmissible", "workloads/llm-training.yaml",
     lambda r: edit(r, "workloads/llm-training.yaml", 'requests: {cpu: "16", memory: 128Gi', 'requests: {cpu: "32", memory: 128Gi'), 91),
    # A value the template takes from the entry's vars: reported once, at the var, for every field it fills.
    ("sample-var-wrong-type", "api-validation", f"{PROD}/samples.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "four"}'), 9),
    # A LimitRange of the samples' namespace whose max a worker's request exceeds: Kueue's scheduler refuses the Workload.
    ("limit-range-below-a-request", "kueue-inadmissible", "workloads/llm-training.yaml",
     lambda r: (write(r, "base/limit-range.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: ray-limits\n  namespace: ray\n"
                                                 "spec:\n  limits:\n    - type: Container\n      max: {cpu: \"8\"}\n"),
                edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - limit-range.yaml\n")), 91),
    # A LimitRange whose min is above what KubeRay's own wait-gcs-ready init container requests (256Mi): the LimitRanger's
    # validating admission refuses every worker pod; Kueue's scheduler, which sees the template only, admits the job.
    ("limit-range-floor-above-kuberays-init-container", "pod-validation", "workloads/aurora-finetune.yaml",
     lambda r: (write(r, "base/limit-range.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: ray-limits\n  namespace: ray\n"
                                                 "spec:\n  limits:\n    - type: Container\n      min: {memory: 512Mi}\n"
                                                 "      default: {memory: 1Gi}\n      defaultRequest: {memory: 1Gi}\n"),
                edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - limit-range.yaml\n")), 74),
    # A RuntimeClass's overhead.podFixed: Kueue charges it to each pod that names it (AdjustResources), 4 x (16 + 20) cpu on
    # prod, 4 + 36 on dev; at the runtimeClassName that adds it (the job fits without it).
    ("runtime-class-overhead-over-the-queue", "sample-fits", "workloads/llm-training.yaml",
     lambda r: runtime_class(r, '{cpu: "20", memory: 8Gi}', "workloads/llm-training.yaml"), 81),
    # The same on the nodes (the RuntimeClass admission sets spec.overhead, NodeResourcesFit counts it): 18 + 6 cpu > 23.66.
    ("runtime-class-overhead-beyond-the-node", "capacity-pod-fits-node", "workloads/aurora-finetune.yaml",
     lambda r: (two_dev_gpu_nodes(r), runtime_class(r, '{cpu: "6", memory: 1Gi}', "workloads/aurora-finetune.yaml")), 91),
    # spec.overhead written in a template: the RuntimeClass admission refuses the pods, without a RuntimeClass or with another overhead.
    ("pod-overhead-without-runtime-class", "pod-validation", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "            serviceAccountName: ray-workload\n",
                    "            serviceAccountName: ray-workload\n            overhead: {cpu: 250m, memory: 120Mi}\n"), 78),
    ("pod-overhead-not-the-runtime-classes", "pod-validation", "workloads/batch-inference.yaml",
     lambda r: runtime_class(r, "{cpu: 250m, memory: 120Mi}", "workloads/batch-inference.yaml",
                             "            runtimeClassName: kata-vm\n            overhead: {cpu: 500m, memory: 120Mi}\n"), 79),
    # The pods KubeRay makes of a template the RayJob's schema lets through, refused by the apiserver's pod validation.
    ("gpu-fractional", "pod-validation", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", 'requests: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "1"}',
                    'requests: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "0.5"}'), 90),
    ("container-name-uppercase", "pod-validation", "workloads/llm-training.yaml",
     lambda r: edit(r, "workloads/llm-training.yaml", "- name: ray-worker", "- name: Ray-Worker"), 82),
    ("mount-of-no-volume", "pod-validation", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "                volumeMounts:\n                  - {name: scripts,",
                    "                volumeMounts:\n                  - {name: script,"), 93),
    ("head-toleration-exists-with-value", "pod-validation", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "        spec:\n          serviceAccountName: ray-workload\n          containers:\n            - name: ray-head",
                    "        spec:\n          serviceAccountName: ray-workload\n          tolerations: [{key: sku, operator: Exists, value: gpu}]\n"
                    "          containers:\n            - name: ray-head"), 48),
    # A RayService a layer applies: KubeRay creates its cluster's pods at once (no Kueue), and the apiserver refuses them.
    ("rayservice-worker-fractional-gpu", "pod-validation", "base/ray-service.yaml",
     lambda r: (write(r, "base/ray-service.yaml", RAY_SERVICE), edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - ray-service.yaml\n")), 25),
    # Built-in objects the apiserver's REST strategy of their kind refuses (tools/kubecheck), at the value's line.
    ("limit-range-min-above-max", "api-validation", "base/limit-range.yaml",
     lambda r: (write(r, "base/limit-range.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: ray-limits\n  namespace: ray\n"
                                                 "spec:\n  limits:\n    - type: Container\n      min: {cpu: \"4\"}\n      max: {cpu: \"2\"}\n"),
                edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - limit-range.yaml\n")), 9),
    ("priority-class-above-1e9", "api-validation", "base/priority-class.yaml",
     lambda r: (write(r, "base/priority-class.yaml", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: ray-urgent\n"
                                                    "value: 2000000000\n"),
                edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - priority-class.yaml\n")), 5),
    # A ResourceQuota of the samples' namespace that a sample's pods together exceed: Kueue admits it, the apiserver forbids pods.
    ("resource-quota-below-a-sample", "resource-quota", f"{PROD}/samples.yaml",
     lambda r: (write(r, "base/resource-quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: ray-quota\n  namespace: ray\n"
                                                    "spec:\n  hard:\n    requests.nvidia.com/gpu: \"2\"\n"),
                edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - resource-quota.yaml\n")), 7),
    # ResourceQuotas refusing the objects other than pods KubeRay creates for a job: a LoadBalancer head Service (at its
    # serviceType), the submitter Job of every sample (one finding), a RayService's three Services (its cluster's head, its own
    # head and serve Services; a RayJob makes one).
    ("resource-quota-refuses-head-service-type", "resource-quota", "workloads/batch-inference.yaml",
     lambda r: (resource_quota(r, 'services.loadbalancers: "0"'),
                edit(r, "workloads/batch-inference.yaml", "    headGroupSpec:\n", "    headGroupSpec:\n      serviceType: LoadBalancer\n")), 38),
    ("resource-quota-refuses-submitter-jobs", "resource-quota", "base/resource-quota.yaml",  # hard 0: at the quota (quota_scope)
     lambda r: resource_quota(r, 'count/jobs.batch: "0"'), 7),
    ("resource-quota-refuses-ray-service-services", "resource-quota", f"{PROD}/samples.yaml",
     lambda r: (queued_ray_sample(r, "RayService", "1"), resource_quota(r, 'services: "2"')), 12),
    # A tfvars name terraform/ does not declare: Terraform ignores it with a warning; misspelt, the variable keeps its default.
    ("tfvars-variable-misspelt", "terraform-undeclared-variable", "terraform/clusters/prod-eastus2.tfvars",
     lambda r: edit(r, "terraform/clusters/prod-eastus2.tfvars", "gpu_node_count = 1", "gpu_nodes_count = 1"), 12),
    ("tfvars-variable-of-another-module", "terraform-undeclared-variable", "terraform/clusters/prod-eastus2.tfvars",
     lambda r: append(r, "terraform/clusters/prod-eastus2.tfvars", "cost_center = \"ml-platform\"\n"), 16, "warning"),
    ("sample-var-misspelt", "sample-vars", f"{PROD}/samples.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKER: "4"}'), 9),
    ("vm-size-without-its-component", "capacity-sku-component", "overlays/team-queues/kustomization.yaml",
     lambda r: edit(r, "terraform/clusters/prod-eastus2.tfvars", '"Standard_ND96amsr_A100_v4"', '"Standard_NC24ads_A100_v4"'), 10),
    ("gpu-driver-none", "capacity-gpu-driver", "terraform/clusters/prod-eastus2.tfvars",
     lambda r: edit(r, "terraform/clusters/prod-eastus2.tfvars", 'gpu_sku_label  = "a100"', 'gpu_sku_label  = "a100"\ngpu_driver     = "None"'), 14),
    # Layer 1's NVIDIA device plugin removed (AKS installs the driver, not the plugin): at the layer that installs Kueue;
    # a GPU pool tainted (its flavor tolerating the taint) that the plugin does not tolerate: at the plugin's tolerations.
    ("device-plugin-removed", "capacity-gpu-driver", f"{PROD}/infrastructure.yaml",
     lambda r: (edit(r, "flux/infrastructure/controllers/kustomization.yaml", "  - nvidia-device-plugin.yaml\n", ""),
                (r / "flux/infrastructure/controllers/nvidia-device-plugin.yaml").unlink()), 17),
    ("device-plugin-untolerated-gpu-taint", "capacity-gpu-driver", "flux/infrastructure/controllers/nvidia-device-plugin.yaml",
     lambda r: (edit(r, "terraform/node_pools.tf", "  node_taints = []\n", '  node_taints = ["sku=gpu:NoExecute"]\n'),
                append(r, "base/resource-flavors.yaml", "  tolerations:\n    - {key: sku, operator: Equal, value: gpu, effect: NoExecute}\n")), 67),
    # A label AKS lists as deprecated (node_labels.DEPRECATED): at the label, in a flavor's nodeLabels or a node affinity term.
    ("flavor-on-deprecated-aks-label", "aks-deprecated-label", "base/resource-flavors.yaml",
     lambda r: edit(r, "base/resource-flavors.yaml", "    kubernetes.azure.com/accelerator: nvidia\n", "    accelerator: nvidia\n"), 16, "warning"),
    ("device-plugin-on-deprecated-aks-label", "aks-deprecated-label", "flux/infrastructure/controllers/nvidia-device-plugin.yaml",
     lambda r: edit(r, "flux/infrastructure/controllers/nvidia-device-plugin.yaml", "- key: kubernetes.azure.com/accelerator\n",
                    "- key: accelerator\n"), 59, "warning"),
    # Terraform, read by Terraform's loader and evaluator (tools/tfeval): its errors at the line it names.
    ("tf-undeclared-variable", "terraform-expression", "terraform/node_pools.tf",
     lambda r: edit(r, "terraform/node_pools.tf", "  max_pods                = var.max_pods\n", "  max_pods                = var.max_pod\n"), 21),
    ("tf-unknown-function", "terraform-expression", "terraform/main.tf",
     lambda r: edit(r, "terraform/main.tf", "tags = merge(var.tags,", "tags = mergee(var.tags,"), 31),
    ("tf-depends-on-undeclared", "terraform-expression", "terraform/flux.tf",  # terraform validate evaluates depends_on too
     lambda r: edit(r, "terraform/flux.tf", "depends_on = [azurerm_kubernetes_cluster_node_pool.gpu,", "depends_on = [azurerm_kubernetes_cluster_node_pool.gpux,"), 17),
    ("tf-undeclared-resource", "terraform-expression", "terraform/flux.tf",
     lambda r: edit(r, "terraform/flux.tf", "cluster_id     = azurerm_kubernetes_cluster.this.id", "cluster_id     = azurerm_kubernetes_cluster.thiss.id"), 10),
    ("tf-syntax-error", "capacity-terraform", "terraform/network.tf",
     lambda r: append(r, "terraform/network.tf", '\nresource "azurerm_subnet" "extra" {\n  name = "snet-extra\n}\n'), 36),
    ("tfvars-fails-validation", "terraform-expression", f"terraform/clusters/{PROD.rsplit('/', 1)[1]}.tfvars",
     lambda r: edit(r, f"terraform/clusters/{PROD.rsplit('/', 1)[1]}.tfvars", "gpu_node_count = 1", "gpu_node_count = 101"), 12),
    ("tfvars-wrong-type", "terraform-expression", f"terraform/clusters/{DEV.rsplit('/', 1)[1]}.tfvars",
     lambda r: edit(r, f"terraform/clusters/{DEV.rsplit('/', 1)[1]}.tfvars", "system_node_count = 1 #", 'system_node_count = "one" #'), 14),
    # Kustomize inputs that are silently not applied (harness/gate/kustomize_warnings.py).
    ("unlisted-manifest", "kustomize-unlisted", "overlays/team-queues/team-c.yaml",
     lambda r: write(r, "overlays/team-queues/team-c.yaml", (r / TEAM_B).read_text().replace("team-b", "team-c")), 1, "warning"),
    ("patch-matches-nothing", "patch-unmatched", ND96,
     lambda r: edit(r, ND96, "labelSelector: ray-on-aks/quota-share=team\n", "labelSelector: ray-on-aks/quota-share=teams\n"), 16, "warning"),
    ("json6902-matches-nothing", "patch-unmatched", "overlays/single-queue/kustomization.yaml",
     lambda r: append(r, "overlays/single-queue/kustomization.yaml", "patchesJson6902:\n  - target: {group: kueue.x-k8s.io, version: v1beta2, "
                      "kind: ClusterQueue, name: cluster-queu}\n    patch: |-\n      - {op: add, path: /spec/stopPolicy, value: Hold}\n"), 11, "warning"),
    ("flux-patch-matches-nothing", "patch-unmatched", f"{PROD}/queues.yaml",
     lambda r: append(r, f"{PROD}/queues.yaml", "  patches:\n    - target: {kind: LocalQueue, name: team-z}\n      patch: |-\n"
                      "        - {op: add, path: /spec/stopPolicy, value: Hold}\n"), 28, "warning"),
    # kustomize itself fails on an untargeted strategic-merge patch that matches nothing: an error, not a warning.
    ("smp-patch-matches-nothing", "kustomize-build", "overlays/team-queues/kustomization.yaml",
     lambda r: (append(r, "overlays/team-queues/kustomization.yaml", "patches:\n  - path: hold.yaml\n"),
                write(r, "overlays/team-queues/hold.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n"
                      "  name: team-c-cq\nspec:\n  stopPolicy: Hold\n"))),
    # Kueue's RayCluster and RayService integrations: the Workload their own PodSets make, their webhooks, the integration
    # switch; queued Ray objects a layer applies meet the samples' admission checks (sample_rules.py, sample_admission.py).
    ("raycluster-sample-never-admitted", "sample-fits", f"{PROD}/samples.yaml", lambda r: queued_ray_sample(r, "RayCluster", "9"), 12),
    ("rayservice-sample-never-admitted", "sample-fits", f"{PROD}/samples.yaml", lambda r: queued_ray_sample(r, "RayService", "9"), 12),
    ("rayservice-layer-integration-off", "kueue-integration-off", "overlays/team-queues/serve.yaml",
     lambda r: queued_layer_object(r, "serve.yaml", QUEUED_RAY_SERVICE), 7),
    ("raycluster-layer-autoscaling", "kueue-webhook", "overlays/team-queues/notebook.yaml",
     lambda r: queued_layer_object(r, "notebook.yaml", QUEUED_RAY_CLUSTER.replace('  rayVersion: "2.55.1"\n', '  rayVersion: "2.55.1"\n'
                                   "  enableInTreeAutoscaling: true\n").replace("maxReplicas: 1\n", "maxReplicas: 4\n"), "ray.io/raycluster"), 10),
    ("raycluster-layer-worker-group-head", "kueue-webhook", "overlays/team-queues/notebook.yaml",
     lambda r: queued_layer_object(r, "notebook.yaml", QUEUED_RAY_CLUSTER.replace("groupName: gpu", "groupName: head"), "ray.io/raycluster"), 21),
    ("rayservice-layer-autoscaling", "kueue-webhook", "overlays/team-queues/serve.yaml",
     lambda r: queued_layer_object(r, "serve.yaml", QUEUED_RAY_SERVICE.replace('    rayVersion: "2.55.1"\n', '    rayVersion: "2.55.1"\n'
                                   "    enableInTreeAutoscaling: true\n").replace("maxReplicas: 1\n", "maxReplicas: 2\n"), "ray.io/rayservice"), 13),
    ("rayservice-sample-worker-group-head", "kueue-webhook", "workloads/notebook.yaml",
     lambda r: (queued_ray_sample(r, "RayService", "1"), edit(r, "workloads/notebook.yaml", "groupName: gpu", "groupName: head")), 24),
    ("raycluster-sample-head-on-no-pool", "capacity-pod-placement", "workloads/notebook.yaml",  # the capacity rules read its pod sets
     lambda r: (queued_ray_sample(r, "RayCluster", "1"), edit(r, "workloads/notebook.yaml", "      spec:\n        containers:\n          - name: ray-head",
                                                                "      spec:\n        nodeSelector: {agentpool: nope}\n        containers:\n"
                                                                "          - name: ray-head")), 14),
    ("rayservice-sample-head-on-no-pool", "capacity-pod-placement", "workloads/notebook.yaml",
     lambda r: (queued_ray_sample(r, "RayService", "1"), edit(r, "workloads/notebook.yaml", "        spec:\n          containers:\n            - name: ray-head",
                                                                "        spec:\n          nodeSelector: {agentpool: nope}\n          containers:\n"
                                                                "            - name: ray-head")), 17),
    # Kueue charges a RayCluster's or RayService's worker group replicas (the CRD's default 0 when left out), KubeRay creates minReplicas.
    ("raycluster-sample-workers-below-min-replicas", "kueue-unaccounted-pods", "workloads/notebook.yaml",
     lambda r: (queued_ray_sample(r, "RayCluster", "1"), edit(r, "workloads/notebook.yaml", "minReplicas: 1\n", "minReplicas: 3\n"),
                edit(r, "workloads/notebook.yaml", "maxReplicas: 1\n", "maxReplicas: 3\n")), 22),
    ("rayservice-sample-workers-replicas-left-out", "kueue-unaccounted-pods", "workloads/notebook.yaml",  # at the group: no replicas line
     lambda r: (queued_ray_sample(r, "RayService", "1"), edit(r, "workloads/notebook.yaml", "        replicas: 1\n", "")), 24),
    ("layer-rayjob-never-admitted", "sample-fits", "overlays/team-queues/nightly.yaml", layer_rayjob_of_nine_gpus, 11),
    ("layer-raycluster-never-admitted", "sample-fits", "overlays/team-queues/notebook.yaml",
     lambda r: queued_layer_object(r, "notebook.yaml", QUEUED_RAY_CLUSTER.replace("1\n      minReplicas: 1\n      maxReplicas: 1", "9\n      "
                                   "minReplicas: 9\n      maxReplicas: 9"), "ray.io/raycluster"), 7),
    ("layer-raycluster-namespace-not-selected", "queue-namespace-selector", TEAM_A,
     lambda r: (queued_layer_object(r, "notebook.yaml", QUEUED_RAY_CLUSTER, "ray.io/raycluster"),
                edit(r, TEAM_A, "  namespaceSelector: {}\n", "  namespaceSelector: {matchLabels: {team: a}}\n")), 10),
    ("sample-prebuilt-workload-missing", "kueue-prebuilt-workload", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n",
                    "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n    kueue.x-k8s.io/prebuilt-workload-name: batch-wl\n"), 12),
    ("layer-rayjob-prebuilt-workload-missing", "kueue-prebuilt-workload", "base/nightly.yaml",
     lambda r: (_layer_rayjob(r, "default"), edit(r, "base/nightly.yaml", "    kueue.x-k8s.io/queue-name: default\n",
                                                  "    kueue.x-k8s.io/queue-name: default\n    kueue.x-k8s.io/prebuilt-workload-name: nightly-wl\n")), 8),
    ("network-policy-default-deny-ingress", "ray-network-policy", "base/deny.yaml",
     lambda r: _network_policy(r, "  podSelector: {}\n  policyTypes: [Ingress]\n"), 5),
    ("network-policy-same-namespace-only", "ray-network-policy", "base/deny.yaml",  # the KubeRay operator (kuberay-system) refused
     lambda r: _network_policy(r, "  podSelector: {}\n  policyTypes: [Ingress]\n  ingress:\n    - from: [{podSelector: {}}]\n"), 5),
    # A default-deny egress that lets the namespace's pods talk but leaves out the cluster DNS: no worker resolves the head.
    ("network-policy-egress-without-dns", "ray-network-policy", "base/deny.yaml",
     lambda r: _network_policy(r, "  podSelector: {}\n  policyTypes: [Egress]\n  egress:\n    - to: [{podSelector: {}}]\n"), 5),
]


def _network_policy(root: Path, spec: str) -> None:
    """A NetworkPolicy in namespace ray with `spec`, in base/deny.yaml (its podSelector at line 5)."""
    write(root, "base/deny.yaml", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: default-deny-ingress, namespace: ray}\n"
          "spec:\n" + spec)
    edit(root, "base/kustomization.yaml", "  - priority-classes.yaml\n", "  - priority-classes.yaml\n  - deny.yaml\n")


def _mount_claim(root: Path, claim: str) -> None:
    """The batch-inference sample's head mounts PersistentVolumeClaim `claim` at /data."""
    wl = "workloads/batch-inference.yaml"
    edit(root, wl, "                - {name: scripts, mountPath: /home/ray/scripts}\n",
         "                - {name: scripts, mountPath: /home/ray/scripts}\n                - {name: data, mountPath: /data}\n")
    edit(root, wl, "              configMap: {name: batch-inference-scripts}\n",
         "              configMap: {name: batch-inference-scripts}\n            - name: data\n"
         f"              persistentVolumeClaim: {{claimName: {claim}}}\n", )


def _layer_rayjob(root: Path, queue: str) -> None:
    """base/ applies a small suspended RayJob for LocalQueue `queue`."""
    write(root, "base/nightly.yaml", f"""apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: nightly
  namespace: ray
  labels:
    kueue.x-k8s.io/queue-name: {queue}
spec:
  suspend: true
  entrypoint: python -c 'print(1)'
  shutdownAfterJobFinishes: true
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers:
        - name: submitter
          image: rayproject/ray:2.41.0
          resources: {{requests: {{cpu: 100m, memory: 64Mi}}, limits: {{cpu: 100m, memory: 64Mi}}}}
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {{}}
      template:
        spec:
          serviceAccountName: ray-workload
          containers:
            - name: ray-head
              image: rayproject/ray:2.41.0
              resources: {{requests: {{cpu: "1", memory: 2Gi}}, limits: {{cpu: "1", memory: 2Gi}}}}
""")
    edit(root, "base/kustomization.yaml", "resources:\n", "resources:\n  - nightly.yaml\n")


def _layer_rayjob_mounting(root: Path, config_map: str, script: str) -> None:
    """_layer_rayjob for team-a, its head mounting ConfigMap `config_map` at /opt/jobs and running /opt/jobs/`script`."""
    _layer_rayjob(root, "team-a")
    edit(root, "base/nightly.yaml", "  entrypoint: python -c 'print(1)'\n", f"  entrypoint: cd /tmp && python /opt/jobs/{script} --day=1\n")
    edit(root, "base/nightly.yaml", "              image: rayproject/ray:2.41.0\n              resources: {requests: {cpu: \"1\"",
         "              image: rayproject/ray:2.41.0\n              volumeMounts: [{name: jobs, mountPath: /opt/jobs}]\n"
         "              resources: {requests: {cpu: \"1\"")
    append(root, "base/nightly.yaml", f"          volumes:\n            - name: jobs\n              configMap: {{name: {config_map}}}\n")


def _into_controllers(root: Path, rel: str) -> None:
    """`rel` (a file of base/) moved into the layer that installs Kueue and KubeRay (flux/infrastructure/controllers)."""
    name = Path(rel).name
    write(root, f"flux/infrastructure/controllers/{name}", (root / rel).read_text())
    (root / rel).unlink()
    edit(root, "base/kustomization.yaml", f"  - {name}\n", "")
    edit(root, "flux/infrastructure/controllers/kustomization.yaml", "  - kueue.yaml\n", f"  - kueue.yaml\n  - {name}\n")


def _expect(entry: tuple) -> tuple:
    """(case, rule, file, mutate, line or None, severity) of a CORPUS entry."""
    case, rule, file, mutate, *rest = entry
    return case, rule, file, mutate, (rest[0] if rest else None), (rest[1] if len(rest) > 1 else "error")


def test_repository_is_clean():
    report = validate_repository(Path(__file__).resolve().parents[2])
    assert report.findings == [], "\n".join(f.text() for f in report.findings)
    assert report.builds >= 10 and report.objects > 0


def _from_helm_repository(r, type_line: str, version: str) -> None:
    """The Kueue chart from a HelmRepository of MCR (`type_line`: its spec.type line, or none) at `version`."""
    edit(r, KUEUE, "kind: OCIRepository\nmetadata:\n  name: kueue\n  namespace: flux-system\nspec:\n  interval: 24h\n"
         "  url: oci://mcr.microsoft.com/aks/ai-runtime/helm/kueue\n  ref:\n    tag: 0.17.1\n  layerSelector:\n"
         "    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n",
         f"kind: HelmRepository\nmetadata:\n  name: mcr\n  namespace: flux-system\nspec:\n{type_line}  interval: 24h\n"
         "  url: oci://mcr.microsoft.com/aks/ai-runtime/helm\n")
    edit(r, KUEUE, "  chartRef:\n    kind: OCIRepository\n    name: kueue\n",
         f"  chart:\n    spec:\n      chart: kueue\n      version: {version}\n      sourceRef:\n        kind: HelmRepository\n        name: mcr\n")


@pytest.mark.parametrize("case,rule,file,mutate,line,severity", [_expect(c) for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_broken_input_fails_with_its_rule(repo_copy, case, rule, file, mutate, line, severity):
    mutate(repo_copy)
    report = validate_repository(repo_copy)
    fired = [f for f in report.findings if f.rule == rule]
    assert fired, f"{case}: expected rule {rule}, got:\n" + "\n".join(f.text() for f in report.findings)
    where = f"{file}:{line}" if line else file
    named = [f for f in fired if f.file == file and (line is None or f.line == line)]
    assert named, f"{case}: {rule} should name {where}:\n" + "\n".join(f.text() for f in fired)
    assert any(f.severity == severity for f in named), f"{case}: {rule} at {where} should be an {severity}:\n" + "\n".join(f.text() for f in named)
    for f in fired:
        assert f.message and f.hint, f"{case}: finding without message or fix hint: {f}"


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 20
    assert len({c[1] for c in CORPUS}) >= 18  # most rules have a case of their own


def test_a_queue_layer_path_that_does_not_exist_is_one_finding(repo_copy):
    """The overlay is not reached because the layer does not build: flux-path is the cause, not cluster-overlay as well."""
    edit(repo_copy, f"{PROD}/queues.yaml", "path: ./clusters/prod-eastus2/queues", "path: ./clusters/prod-eastus2/queue")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("flux-path", f"{PROD}/queues.yaml", 20)], "\n".join(f.text() for f in found)


def test_a_name_prefix_explains_only_the_names_it_renamed(repo_copy):
    """A LocalQueue pointing at a ClusterQueue that exists under no name is its own finding beside the
    namePrefix's: the rename stands only for references whose name it changed."""
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "resources:", "namePrefix: prod-\nresources:")
    edit(repo_copy, TEAM_B, "clusterQueue: team-b-cq", "clusterQueue: nope")
    report = validate_repository(repo_copy)
    rename = [f for f in report.findings if f.rule == "kustomize-rename"]
    assert len(rename) == 1 and "spec.clusterQueue 'team-a-cq'" in rename[0].message, "\n".join(f.text() for f in report.findings)
    assert "'nope'" not in rename[0].message
    dangling = [f for f in report.findings if f.rule == "localqueue-clusterqueue"]
    assert [(f.file, "'nope'" in f.message) for f in dangling] == [(TEAM_B, True)], "\n".join(f.text() for f in dangling)


def test_a_bad_sample_var_is_one_finding_at_the_var(repo_copy):
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "four"}')
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("api-validation", f"{PROD}/samples.yaml", 9)], \
        "\n".join(f.text() for f in report.findings)
    message = report.findings[0].message
    assert all(f"workerGroupSpecs[0].{field}" in message for field in ("replicas", "minReplicas", "maxReplicas")), message
    assert "vars NUM_WORKERS" in message and "workloads/llm-training.yaml:70" in message, message


def test_a_target_namespace_is_one_finding(repo_copy):
    """The samples' queues and ServiceAccount moved by the queue layer's targetNamespace: one finding at that
    line, none per sample (the templates' namespace is every cluster's, so 'submit elsewhere' is not the fix)."""
    edit(repo_copy, f"{PROD}/queues.yaml", "  prune: true\n", "  prune: true\n  targetNamespace: ray-prod\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("flux-target-namespace", f"{PROD}/queues.yaml", 16)], \
        "\n".join(f.text() for f in report.findings)
    assert "6 reference(s)" in report.findings[0].message


def test_a_v1beta1_cluster_queue_is_judged_as_kueue_converts_it(repo_copy):
    """A ClusterQueue copied from an older guide (kueue.x-k8s.io/v1beta1, `cohort:`) is stored by the apiserver
    as v1beta2 with cohortName, by Kueue's conversion: one kueue-api-version finding, and none of what reading
    its v1beta1 fields as v1beta2 would invent (cohort-alone for both teams, sample-fits without borrowing)."""
    edit(repo_copy, TEAM_A, "apiVersion: kueue.x-k8s.io/v1beta2", "apiVersion: kueue.x-k8s.io/v1beta1")
    edit(repo_copy, TEAM_A, "cohortName: shared-cohort", "cohort: shared-cohort")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line, f.resource) for f in report.findings] == [
        ("kueue-api-version", TEAM_A, 1, "ClusterQueue/team-a-cq")], "\n".join(f.text() for f in report.findings)


def test_a_v1beta1_cluster_queue_meets_kueues_webhook_after_conversion(repo_copy):
    """The apiserver converts before Kueue's validating webhook (registered for v1beta2) sees the object: a lending
    limit above the nominal quota written in v1beta1 is the same kueue-webhook finding, at the line it is written."""
    edit(repo_copy, TEAM_A, "apiVersion: kueue.x-k8s.io/v1beta2", "apiVersion: kueue.x-k8s.io/v1beta1")
    edit(repo_copy, TEAM_A, "cohortName: shared-cohort", "cohort: shared-cohort")
    edit(repo_copy, TEAM_A, '              borrowingLimit: "0"\n', '              borrowingLimit: "0"\n              lendingLimit: "99999"\n')
    found = {(f.rule, f.line) for f in validate_repository(repo_copy).findings if f.file == TEAM_A}
    assert found == {("kueue-api-version", 1), ("kueue-webhook", 23)}, found


def test_helm_charts_in_a_kustomization_get_the_fix_flux_needs(repo_copy):
    append(repo_copy, "overlays/team-queues/kustomization.yaml",
           "helmCharts:\n  - name: kueue\n    repo: oci://registry.k8s.io/kueue/charts\n    version: 0.17.1\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "kustomize-build"]
    assert len(found) == 1 and "HelmRelease" in found[0].hint, "\n".join(f.text() for f in found)


def test_a_remote_base_the_gate_cannot_fetch_is_named_with_its_fix(repo_copy):
    """Offline, a remote base fails to build (on a runner with network it may build): the finding says why and the fix."""
    from harness.gate.build_errors import build_error
    from harness.gate.render import Build

    url = "https://github.com/kubernetes-sigs/kueue//config/default?ref=v0.17.1"
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml\n", f"  - team-b.yaml\n  - {url}\n")
    error = f"accumulating resources: accumulating resources from '{url}': Get \"{url}\": dial tcp: lookup github.com: no such host"
    found = build_error(repo_copy, Build("overlays/team-queues", "overlays/team-queues", error=error))
    assert (found.file, found.line) == ("overlays/team-queues/kustomization.yaml", 9) and "vendor" in found.hint, found


@pytest.mark.parametrize("path", ["/clusters/prod-eastus2/queues", "clusters/prod-eastus2/queues", "./clusters/../clusters/prod-eastus2/queues/"])
def test_a_flux_path_is_read_as_kustomize_controller_joins_it(repo_copy, path):
    """kustomize-controller joins spec.path under the artifact's root: written with a leading slash, without ./ or
    through .. it is the same directory, and the cluster is clean (it once lost its queue overlay: cluster-overlay)."""
    edit(repo_copy, f"{PROD}/queues.yaml", "path: ./clusters/prod-eastus2/queues", f"path: {path}")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_key_yaml_reads_as_no_string_is_clean_where_kubectl_and_flux_make_a_string_of_it(repo_copy):
    """The samples are created from YAML read as sigs.k8s.io/yaml reads it (kubectl, Flux's apply), which makes "1", "true"
    and "1.5" of those keys: valid label keys (they once were an internal error)."""
    for key in ("1", "true", "1.5"):
        edit(repo_copy, "workloads/llm-training.yaml", "  labels:\n", f"  labels:\n    {key}: x\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_kustomization_label_key_yaml_1_2_reads_as_a_string_is_clean(repo_copy):
    """"yes" and "on", quoted, are strings to the kustomization's loader and to go-yaml v3, which reads what kustomize's label
    transformer writes (plain): the build succeeds (kustomize v5.8.1), so no finding."""
    append(repo_copy, "base/kustomization.yaml", 'commonLabels:\n  "yes": x\ncommonAnnotations:\n  "on": x\n')
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_sample_with_generate_name_is_clean(repo_copy):
    """scripts/submit-workload creates the samples (not apply): a generateName is named by the apiserver first, so
    the RayJob and the pods KubeRay makes from it are valid (they once were refused as 'metadata.name was not generated')."""
    edit(repo_copy, "workloads/batch-inference.yaml", "  name: ${JOB_NAME}\n", "  generateName: ${JOB_NAME}-\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_queued_sample_written_unsuspended_and_a_valid_raycluster_are_clean(repo_copy):
    """Kueue's mutating webhook creates every RayJob with a queue-name label suspended (ApplyDefaultForSuspend), so
    `suspend: false` in a sample is harmless (it was once an error); a valid RayCluster a layer applies passes KubeRay."""
    edit(repo_copy, "workloads/batch-inference.yaml", "  suspend: true\n", "  suspend: false\n")
    write(repo_copy, "base/raycluster.yaml", RAYCLUSTER)
    edit(repo_copy, "base/kustomization.yaml", "  - priority-classes.yaml\n", "  - priority-classes.yaml\n  - raycluster.yaml\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_sample_mounting_a_claim_of_the_queue_layer_is_clean(repo_copy):
    _mount_claim(repo_copy, "datasets")
    write(repo_copy, "base/datasets.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: datasets\n  namespace: ray\n"
          "spec:\n  accessModes: [ReadWriteMany]\n  storageClassName: azurefile-csi\n  resources:\n    requests:\n      storage: 100Gi\n")
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "resources:\n  - datasets.yaml\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_pods_the_apiserver_refuses_are_not_also_unplaced(repo_copy):
    """Workers that would not be placed together (one host port) and whose container name the apiserver refuses: the
    refusal is the finding; where the pods would (not) land is not reported beside it."""
    edit(repo_copy, "workloads/llm-training.yaml", "              - name: ray-worker\n",
         "              - name: Ray-Worker\n                ports: [{containerPort: 9999, hostPort: 9999}]\n")
    rules = {f.rule for f in validate_repository(repo_copy).findings}
    assert "pod-validation" in rules and not {r for r in rules if r.startswith("capacity-pod")}, rules


def test_a_kubernetes_patch_of_the_pinned_minor_is_clean(repo_copy):
    append(repo_copy, "terraform/clusters/prod-eastus2.tfvars", 'kubernetes_version = "1.35.2"\n')
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_sample_without_queue_label_goes_to_the_default_local_queue(repo_copy):
    """Kueue's RayJob webhook labels a job without kueue.x-k8s.io/queue-name with its namespace's LocalQueue
    "default" (LocalQueueDefaulting, GA in 0.17): dev-westus3 has one, prod-eastus2 has not."""
    edit(repo_copy, "workloads/batch-inference.yaml", "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n", "    team: ${QUEUE_NAME}\n")
    edit(repo_copy, f"{PROD}/samples.yaml", "- sample: batch-inference\n  queue: team-b\n", "")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)
    # On dev-westus3 it is judged on that queue: too large for it, it fails as a labelled sample would.
    for field in ("requests", "limits"):
        edit(repo_copy, "workloads/batch-inference.yaml", f'{field}: {{cpu: "12", memory: 80Gi, nvidia.com/gpu: "1"}}',
             f'{field}: {{cpu: "12", memory: 80Gi, nvidia.com/gpu: "2"}}')
    assert "sample-fits" in {f.rule for f in validate_repository(repo_copy).findings}


def test_a_runtime_class_and_config_map_keys_of_the_set_are_clean(repo_copy):
    write(repo_copy, "base/runtime-class.yaml", "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: nvidia\nhandler: nvidia\n")
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "resources:\n  - runtime-class.yaml\n")
    edit(repo_copy, "workloads/batch-inference.yaml", "            serviceAccountName: ray-workload\n",
         "            serviceAccountName: ray-workload\n            runtimeClassName: nvidia\n")
    edit(repo_copy, "workloads/batch-inference.yaml", "                configMap: {name: batch-inference-scripts}",  # a worker's: the head runs the entrypoint
         "                configMap: {name: ray-storage, items: [{key: AZURE_STORAGE_ACCOUNT_NAME, path: account}]}")
    append(repo_copy, SA, JOB_WITH.format(extra="          env:\n            - name: OPTIONAL\n              valueFrom:\n"
                                                "                configMapKeyRef: {name: ray-storage, key: NOT_THERE, optional: true}\n"))
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_sample_scripts_by_item_path_relative_or_shell_expanded_are_clean(repo_copy):
    """What the entrypoint-file check leaves alone or finds: a key mounted under another path by the volume's items, a
    relative path after cd, a path the shell expands (a glob), and an optional ConfigMap nothing creates."""
    wl = "workloads/llm-training.yaml"
    edit(repo_copy, wl, "  entrypoint: python3 /home/ray/scripts/llm_training.py\n",
         "  entrypoint: cd /home/ray/scripts && python3 jobs/train.py && python3 /home/ray/scripts/jobs/train.py --log=/tmp/x; "
         "ls /home/ray/scripts/*.py /home/ray/scripts/[a-z]*\n")
    edit(repo_copy, wl, "              configMap: {name: llm-training-scripts}\n",
         "              configMap: {name: llm-training-scripts, items: [{key: llm_training.py, path: jobs/train.py}]}\n")
    edit(repo_copy, wl, "                configMap: {name: llm-training-scripts}\n", "                configMap: {name: llm-training-extra, optional: true}\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


@pytest.mark.parametrize("labels", ["    pod-security.kubernetes.io/enforce: baseline\n", "    pod-security.kubernetes.io/warn: restricted\n"])
def test_a_pod_security_level_the_pods_meet_is_clean(repo_copy, labels):
    """The samples' pods meet "baseline"; a warn (or audit) level forbids nothing."""
    edit(repo_copy, "base/namespace.yaml", "  name: ray\n", "  name: ray\n  labels:\n" + labels)
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_kuberay_operator_watching_the_samples_namespace_is_clean(repo_copy):
    edit(repo_copy, KUBERAY, "  values:\n", "  values:\n    watchNamespace: [ray, ray-batch]\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_variable_no_entry_sets_is_one_finding_per_cluster(repo_copy):
    """${RAY_IMAGE} dropped from workloads/defaults.yaml leaves every entry unrendered: one finding per samples.yaml
    (it once was one per entry), naming the entries' lines and the files that use it."""
    edit(repo_copy, "workloads/defaults.yaml", "RAY_IMAGE:", "RAY_IMAGE_OLD:")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-render"]
    assert sorted((f.file, f.line) for f in found) == [(f"{DEV}/samples.yaml", 3), (f"{PROD}/samples.yaml", 5)], found
    assert all("${RAY_IMAGE}" in f.message and "workloads/defaults.yaml" in f.hint for f in found), found


def test_a_sample_kueue_never_admits_is_not_also_unplaced(repo_copy):
    """A GPU on batch-inference's head too: dev-westus3's queue gives 1 GPU, the job needs 2, so Kueue never admits it
    there (sample-fits); that its second GPU pod would find no node on that cluster is not reported beside."""
    for field in ("requests", "limits"):
        edit(repo_copy, "workloads/batch-inference.yaml", f'{field}: {{cpu: "4", memory: 16Gi}}', f'{field}: {{cpu: "4", memory: 16Gi, nvidia.com/gpu: "1"}}')
    found = validate_repository(repo_copy).findings
    assert {f.rule for f in found} == {"sample-fits"} and all(f.file == f"{DEV}/samples.yaml" for f in found), \
        "\n".join(f.text() for f in found)


def test_a_helm_release_in_its_own_namespace_is_clean_when_the_extension_opts_out(repo_copy):
    """With configuration_settings multiTenancy.enforce = "false" the extension's controllers keep their own rights, and
    a chartRef may cross namespaces."""
    edit(repo_copy, KUEUE, "kind: HelmRelease\nmetadata:\n  name: kueue\n  namespace: flux-system\n",
         "kind: HelmRelease\nmetadata:\n  name: kueue\n  namespace: kueue-system\n")
    edit(repo_copy, KUEUE, "    kind: OCIRepository\n    name: kueue\n", "    kind: OCIRepository\n    name: kueue\n    namespace: flux-system\n")
    edit(repo_copy, "terraform/flux.tf", '  release_train  = "Stable"\n',
         '  release_train  = "Stable"\n  configuration_settings = {\n    "multiTenancy.enforce" = "false"\n  }\n')
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_flux_objects_naming_the_extensions_flux_applier_are_clean(repo_copy):
    """The AKS Flux extension creates ServiceAccount flux-system/flux-applier (bound to cluster-admin): naming it is no dangling reference."""
    edit(repo_copy, f"{PROD}/queues.yaml", "  prune: true\n", "  prune: true\n  serviceAccountName: flux-applier\n")
    edit(repo_copy, KUEUE, "  releaseName: kueue\n", "  releaseName: kueue\n  serviceAccountName: flux-applier\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_node_labels_the_kubelet_may_set_are_clean(repo_copy):
    edit(repo_copy, "terraform/node_pools.tf", '"aks.azure.com/gpu-sku" = var.gpu_sku_label }',
         '"aks.azure.com/gpu-sku" = var.gpu_sku_label, "node.kubernetes.io/gpu-class" = "a100", "team" = "ml-platform" }')
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_ray_service_a_layer_applies_meets_its_namespace_admission(repo_copy):
    """Its pods face the namespace's PodSecurity level (one finding with the samples') and its ResourceQuota, as the samples' do."""
    write(repo_copy, "base/ray-service.yaml", RAY_SERVICE.replace('{limits: {nvidia.com/gpu: "0.5"}}', '{limits: {nvidia.com/gpu: "1"}}'))
    write(repo_copy, "base/quota.yaml", "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: ray\nspec:\n  hard:\n    limits.cpu: \"100\"\n")
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "resources:\n  - ray-service.yaml\n  - quota.yaml\n")
    edit(repo_copy, "base/namespace.yaml", "  name: ray\n", "  name: ray\n  labels:\n    pod-security.kubernetes.io/enforce: restricted\n")
    found = validate_repository(repo_copy).findings
    security = [f for f in found if f.rule == "pod-security"]
    assert len(security) == 1 and "RayService/ray/serve" in security[0].message and "RayJob/ray/llm-training" in security[0].message, security
    assert (security[0].file, security[0].line) == ("base/namespace.yaml", 6), security
    assert not [f for f in found if f.rule == "resource-quota" and f.resource == "RayService/ray/serve"], \
        "pods the PodSecurity admission forbids are not also measured against the quota"
    edit(repo_copy, "base/namespace.yaml", "    pod-security.kubernetes.io/enforce: restricted\n", "    pod-security.kubernetes.io/enforce: baseline\n")
    quota = [f for f in validate_repository(repo_copy).findings if f.rule == "resource-quota" and f.resource == "RayService/ray/serve"]
    assert len(quota) == 1 and "limits.cpu" in quota[0].message and quota[0].file == "base/ray-service.yaml", quota


RAY_STORAGE = ("---\n# Storage account the workloads read and write (random name, so it is a cluster variable).\napiVersion: v1\nkind: ConfigMap\n"
               "metadata:\n  name: ray-storage\n  namespace: ray\ndata:\n  AZURE_STORAGE_ACCOUNT_NAME: \"${AZURE_STORAGE_ACCOUNT_NAME}\"\n")


@pytest.mark.parametrize("hashed", [True, False])
def test_a_generated_config_map_the_samples_name_keeps_its_name(repo_copy, hashed):
    """ray-storage made by a configMapGenerator: with kustomize's content-hash suffix the samples (outside the build) name a
    ConfigMap that does not exist, one finding at the generator; with disableNameSuffixHash it is clean."""
    edit(repo_copy, SA, RAY_STORAGE, "")
    options = "" if hashed else "    options:\n      disableNameSuffixHash: true\n"
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "configMapGenerator:\n  - name: ray-storage\n    namespace: ray\n"
         f"{options}    literals:\n      - AZURE_STORAGE_ACCOUNT_NAME=${{AZURE_STORAGE_ACCOUNT_NAME}}\nresources:\n")
    found = validate_repository(repo_copy).findings
    if not hashed:
        assert found == [], "\n".join(f.text() for f in found)
        return
    assert [(f.rule, f.file, f.line, f.resource) for f in found] == [("object-ref", "base/kustomization.yaml", 7, "ConfigMap/ray/ray-storage")], \
        "\n".join(f.text() for f in found)
    assert "aurora-finetune, batch-inference, llm-training" in found[0].message, found[0].message


def test_a_cluster_terraform_does_not_provision_has_no_extension_lockdown(repo_copy):
    """clusters/local (no tfvars: the embedded plane's Flux, not the AKS extension) may keep a HelmRelease in its own namespace."""
    write(repo_copy, "clusters/local/infrastructure/extra.yaml",
          "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: extra\n  namespace: ray\nspec:\n"
          "  interval: 1h\n  url: oci://example.invalid/charts/extra\n  ref:\n    tag: 1.0.0\n---\n"
          "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: extra\n  namespace: ray\nspec:\n"
          "  interval: 1h\n  chartRef:\n    kind: OCIRepository\n    name: extra\n")
    edit(repo_copy, "clusters/local/infrastructure/kustomization.yaml", "resources: []", "resources:\n  - extra.yaml")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "flux-multi-tenancy"]
    assert found == [], "\n".join(f.text() for f in found)
    # The same HelmRelease on prod-eastus2, which terraform/ provisions with the extension, is reported.
    write(repo_copy, "flux/infrastructure/controllers/extra.yaml", (repo_copy / "clusters/local/infrastructure/extra.yaml").read_text())
    edit(repo_copy, "flux/infrastructure/controllers/kustomization.yaml", "  - kueue.yaml\n", "  - kueue.yaml\n  - extra.yaml\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "flux-multi-tenancy"]
    assert {f.file for f in found} == {"flux/infrastructure/controllers/extra.yaml"}, "\n".join(f.text() for f in found)


def test_a_sample_with_a_queue_name_the_apiserver_refuses_is_one_finding_at_its_queue(repo_copy):
    """An invalid label value from the entry's `queue`: the apiserver refuses the RayJob, at the entry's queue line, and
    that no LocalQueue has that name is not reported beside (the job is never created)."""
    edit(repo_copy, f"{DEV}/samples.yaml", "- sample: batch-inference\n  queue: default", "- sample: batch-inference\n  queue: Team_A!")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("api-validation", f"{DEV}/samples.yaml", 9)], "\n".join(f.text() for f in found)
    assert "with queue, which fills ${QUEUE_NAME} at workloads/batch-inference.yaml:" in found[0].message, found[0].message


def test_a_tfvars_value_terraform_refuses_is_one_finding(repo_copy):
    """A GPU pool size that terraform/variables.tf's validation refuses: Terraform plans nothing for that cluster, so what
    its pools would hold (flavors, quotas, the empty CPU pool) is not reported beside."""
    edit(repo_copy, "terraform/clusters/dev-westus3.tfvars", 'gpu_vm_size    = "Standard_NC24ads_A100_v4"', 'gpu_vm_size    = "Standard_D16ds_v5"')
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("terraform-expression", "terraform/clusters/dev-westus3.tfvars", 10)], \
        "\n".join(f.text() for f in found)


def test_kueue_managing_jobs_without_queue_name_in_the_teams_namespace_only_is_clean(repo_copy):
    """manageJobsWithoutQueueName with a managedJobsNamespaceSelector that selects only the samples' namespace: the Flux
    controllers' and the operators' pods stay out of Kueue's hands."""
    edit(repo_copy, KUEUE, "        integrations:\n", "        manageJobsWithoutQueueName: true\n        managedJobsNamespaceSelector:\n"
                                                      "          matchLabels: {kubernetes.io/metadata.name: ray}\n        integrations:\n")
    found = validate_repository(repo_copy).findings
    assert found == [], "\n".join(f.text() for f in found)


def test_an_infrastructure_layer_with_a_health_check_on_kueue_is_in_order(repo_copy):
    """wait: false with a health check on the Kueue HelmRelease: the queue layer still waits for Kueue."""
    edit(repo_copy, f"{PROD}/infrastructure.yaml", "  wait: true\n", "  wait: false\n  healthChecks:\n    - apiVersion: helm.toolkit.fluxcd.io/v2\n"
                                                                   "      kind: HelmRelease\n      name: kueue\n      namespace: flux-system\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "flux-layer-order"]
    assert found == [], "\n".join(f.text() for f in found)


def test_a_runtime_class_overhead_that_keeps_a_job_out_is_one_finding(repo_copy):
    """The overhead Kueue charges on top of the template's requests is the cause: one finding at the runtimeClassName, for
    both clusters, naming the overhead (no sample-fits at the samples files beside)."""
    runtime_class(repo_copy, '{cpu: "20", memory: 8Gi}', "workloads/llm-training.yaml")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("sample-fits", "workloads/llm-training.yaml", 81)], "\n".join(f.text() for f in found)
    assert "cpu 20, memory 8Gi" in found[0].message and "dev-westus3" in found[0].context and "prod-eastus2" in found[0].context, found[0].text()


def test_a_job_too_big_with_or_without_its_runtime_class_overhead_names_the_overhead(repo_copy):
    """A worker too big for the queues anyway (32 cpu): the finding stays at the samples files, and names the overhead
    Kueue charges on top in its message and hint."""
    for field in ("requests", "limits"):
        edit(repo_copy, "workloads/llm-training.yaml", f'{field}: {{cpu: "16", memory: 128Gi', f'{field}: {{cpu: "32", memory: 128Gi')
    runtime_class(repo_copy, "{cpu: 250m}", "workloads/llm-training.yaml")
    found = validate_repository(repo_copy).findings
    assert sorted((f.rule, f.file) for f in found) == [("sample-fits", f"{DEV}/samples.yaml"), ("sample-fits", f"{PROD}/samples.yaml")], \
        "\n".join(f.text() for f in found)
    assert all("RuntimeClass kata-vm's overhead.podFixed (cpu 250m)" in f.message and "runtimeClassName" in f.hint for f in found), \
        "\n".join(f.text() for f in found)


def test_a_runtime_class_overhead_that_fits_is_clean(repo_copy):
    """A small overhead on a worker group, and a template that writes its RuntimeClass's own overhead: Kueue admits, the
    pods fit their nodes, and the RuntimeClass admission accepts them."""
    runtime_class(repo_copy, "{cpu: 250m, memory: 120Mi}", "workloads/aurora-finetune.yaml")
    edit(repo_copy, "workloads/batch-inference.yaml", "            serviceAccountName: ray-workload\n",
         "            serviceAccountName: ray-workload\n            runtimeClassName: kata-vm\n            overhead: {cpu: 250m, memory: 120Mi}\n")
    found = validate_repository(repo_copy).findings
    assert found == [], "\n".join(f.text() for f in found)


# Rules whose broken variant is a test of its own (a report path, the gate's configuration, Terraform wiring) rather than
# a row of a table: the file that holds it.
ELSEWHERE = {"file-read": "test_gate_robustness.py", "gate-config": "test_gate_fork_layout.py",
             "capacity-unknown-sku": "test_capacity.py", "terraform-federated-subject": "test_capacity.py",
             "terraform-cluster-vars": "test_terraform.py", "terraform-flux-configuration": "test_terraform.py",
             "flux-variables-applied": "test_gate_flux_forms.py", "update-refused": "test_gate_updates.py",
             "update-recreates": "test_gate_updates.py", "flux-path-outside": "test_gate_monorepo.py"}


def test_every_rule_has_a_broken_variant():
    """The README's promise: each rule of the gate has a broken input that fails with it, at its file and line."""
    from harness.gate.validate import RULE_IDS
    from tests.static import test_capacity, test_gate_apiserver, test_queue_activity
    tabled = {case[1] for table in (CORPUS, test_gate_apiserver.CASES, test_capacity.CASES, test_queue_activity.CASES) for case in table}
    here = Path(__file__).parent
    elsewhere = {rule for rule, name in ELSEWHERE.items() if f'"{rule}"' in (here / name).read_text()}
    assert sorted(set(RULE_IDS) - tabled - elsewhere) == []


@pytest.mark.parametrize("level,lower", [("restricted", True), ("baseline", False)])
def test_the_pod_security_hint_offers_a_lower_level_only_where_there_is_one(repo_copy, level, lower):
    """Under restricted, baseline is the level to move the jobs to; under baseline, only privileged lets more through,
    so the hint is the template's securityContext (here a worker adding the IPC_LOCK capability, refused by both)."""
    edit(repo_copy, "base/namespace.yaml", "  name: ray\n", f"  name: ray\n  labels:\n    pod-security.kubernetes.io/enforce: {level}\n")
    edit(repo_copy, "workloads/aurora-finetune.yaml", "              - name: ray-worker\n                image: ${RAY_IMAGE}\n",
         "              - name: ray-worker\n                image: ${RAY_IMAGE}\n                securityContext: {capabilities: {add: [IPC_LOCK]}}\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "pod-security"]
    assert found and all(("enforce: baseline" in f.hint) is lower for f in found), [f.hint for f in found]


def test_a_queued_ray_object_of_an_integration_off_is_not_judged_for_fit(repo_copy):
    """A RayCluster sample too large for its queue, with ray.io/raycluster left out of the manager's frameworks: Kueue
    ignores its queue label, so it is kueue-integration-off alone (no sample-fits about a Workload Kueue never makes)."""
    queued_ray_sample(repo_copy, "RayCluster", "9")
    edit(repo_copy, "workloads/notebook.yaml", "minReplicas: 1\n", "minReplicas: 3\n")  # nor kueue-unaccounted-pods: Kueue charges nothing
    edit(repo_copy, "workloads/notebook.yaml", "maxReplicas: 1\n", "maxReplicas: 3\n")
    edit(repo_copy, KUEUE, "            - ray.io/raycluster\n", "")
    found = validate_repository(repo_copy).findings
    assert {f.rule for f in found} == {"kueue-integration-off"}, "\n".join(f.text() for f in found)


def test_a_prebuilt_workload_the_layer_applies_is_no_finding(repo_copy):
    """The label kueue.x-k8s.io/prebuilt-workload-name is fine when the cluster's layers apply that Workload in the job's
    namespace: Kueue's job reconciler adopts it."""
    dict((c[0], c[3]) for c in CORPUS)["layer-rayjob-prebuilt-workload-missing"](repo_copy)
    write(repo_copy, "base/nightly-wl.yaml", """apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: nightly-wl
  namespace: ray
spec:
  queueName: default
  podSets:
    - name: head
      count: 1
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.41.0
              resources: {requests: {cpu: "1", memory: 2Gi}}
""")
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "resources:\n  - nightly-wl.yaml\n")
    found = validate_repository(repo_copy).findings
    assert found and "kueue-prebuilt-workload" not in {f.rule for f in found}, "\n".join(f.text() for f in found)


def test_a_resource_quota_on_objects_kuberay_creates_is_judged_per_job_and_one_finding(repo_copy):
    """A quota with room for what KubeRay creates for each job (its Services, RayCluster, submitter Job) is clean; one that
    refuses them all (the ResourceQuota admission's object count and service evaluators) is one finding for every job, and a
    RayService's three Services (its cluster's head, its own head and serve) are counted."""
    queued_ray_sample(repo_copy, "RayService", "1")
    resource_quota(repo_copy, 'services: "3", services.loadbalancers: "0", services.nodeports: "0", count/jobs.batch: "1", '
                              'count/rayclusters.ray.io: "1"')
    found = validate_repository(repo_copy).findings
    assert found == [], "\n".join(f.text() for f in found)
    edit(repo_copy, "base/resource-quota.yaml", 'services: "3"', 'services: "2"')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "resource-quota"]
    assert len(found) == 1 and "RayService's serve Service" in found[0].message and (found[0].file, found[0].line) == (f"{PROD}/samples.yaml", 12), \
        "\n".join(f.text() for f in found)
    edit(repo_copy, "base/resource-quota.yaml", 'count/jobs.batch: "1"', 'count/jobs.batch: "0"')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "resource-quota" and "submitter Job" in f.message]
    assert len(found) == 1 and f"RayJob/ray/batch-inference ({PROD}/samples.yaml:10)" in found[0].message, "\n".join(f.text() for f in found)
