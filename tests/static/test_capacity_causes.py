"""Capacity verdicts on the right basis, with the fix per cause (hostile review D, #3 #5 #6 #7): the kubelet's disk
(kubelet_disk_type), GPU Feature Discovery's labels, zonal pools with fewer nodes than zones, and hints that name
the pool's vm_size line, the pod's own constraint or the flavor order."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from tests.static.test_gate_corpus import edit, write

pytestmark = pytest.mark.static

KUEUE = "flux/infrastructure/controllers/kueue.yaml"
EXCLUDE_EPHEMERAL = ("        featureGates:\n", "        resources:\n          excludeResourcePrefixes: [ephemeral-storage]\n        featureGates:\n")
GPU_DRIVER = "  gpu_driver  = var.gpu_driver\n"


def _text(found) -> str:
    return "\n".join(f.text() for f in found)


@pytest.mark.parametrize("temp_disk,verdict", [(None, "warning"), (64, "error"), (2000, None)])
def test_a_temporary_kubelet_disk_is_sized_from_the_temp_disk(repo_copy: Path, temp_disk, verdict):
    """With kubelet_disk_type = "Temporary" the kubelet's storage is the VM's temp disk: os_disk_size_gb plays no part. A
    size whose temp disk the gate does not know gives a not-judged warning, not a verdict from the OS disk."""
    edit(repo_copy, KUEUE, *EXCLUDE_EPHEMERAL)
    edit(repo_copy, "terraform/node_pools.tf", GPU_DRIVER, GPU_DRIVER + '  kubelet_disk_type = "Temporary"\n')
    edit(repo_copy, "workloads/llm-training.yaml", 'requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1"}',
         'requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1", ephemeral-storage: 400Gi}')
    if temp_disk is not None:
        write(repo_copy, ".ray-kueue-gate.yaml", "skus:\n" + "".join(
            f"  {size}: {{vcpu: {cpu}, memory_gib: {mem}, gpus: {gpus}, gpu: A100 80GB, temp_disk_gib: {temp_disk}}}\n"
            for size, cpu, mem, gpus in (("Standard_NC24ads_A100_v4", 24, 220, 1), ("Standard_ND96amsr_A100_v4", 96, 1900, 8))))
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("capacity")]
    if verdict is None:
        assert found == [], _text(found)
        return
    assert found and all(f.rule == "capacity-pod-fits-node" and f.location().startswith("workloads/llm-training.yaml:") for f in found), _text(found)
    assert all(f.severity == verdict for f in found), _text(found)
    assert all("os_disk_size_gb" not in f.hint or "kubelet_disk_type" in f.hint for f in found), _text(found)
    if verdict == "warning":
        assert all("not judged" in f.message and "temp_disk_gib" in f.hint for f in found), _text(found)
    else:
        assert all("temp disk" in f.hint and "kubelet_disk_type" in f.hint for f in found), _text(found)


def _append(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text((root / rel).read_text() + text)


def test_a_pod_pinned_to_a_small_pool_is_told_to_change_its_own_constraint(repo_copy: Path):
    """A head pinned by its own nodeSelector to the system pool, whose node is too small: the fix is that nodeSelector
    (written in the template), not a larger vm_size "in the cluster's tfvars" (the system size is a variable's default)."""
    edit(repo_copy, "workloads/llm-training.yaml", "          serviceAccountName: ray-workload\n          containers:\n",
         "          serviceAccountName: ray-workload\n          nodeSelector:\n            kubernetes.azure.com/mode: system\n"
         "          tolerations:\n            - {key: CriticalAddonsOnly, operator: Exists, effect: NoSchedule}\n          containers:\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("capacity")]
    assert found and all(f.rule == "capacity-pod-fits-node" for f in found), _text(found)
    assert all("workloads/llm-training.yaml:51" in f.hint and "nodeSelector" in f.hint and "gpu-sku" not in f.hint for f in found), _text(found)


T4_POOL = """
resource "azurerm_kubernetes_cluster_node_pool" "t4" {
  name                  = "t4pool"
  kubernetes_cluster_id = azurerm_kubernetes_cluster.this.id
  mode                  = "User"
  vm_size               = "Standard_NC8as_T4_v3"
  node_count            = 1
  vnet_subnet_id        = azurerm_subnet.nodes.id
  max_pods              = var.max_pods
  node_labels           = { "aks.azure.com/gpu-sku" = "t4" }
  node_taints           = []
}
"""


def test_a_small_flavor_listed_first_is_told_to_reorder(repo_copy: Path):
    """Flavor t4 (a T4 pool too small for the samples) listed before gpu: Kueue takes the first flavor with quota, so the
    fix is the flavor order (or selecting gpu's labels), not a vm_size in a tfvars that does not write it."""
    _append(repo_copy, "terraform/node_pools.tf", T4_POOL)
    _append(repo_copy, "base/resource-flavors.yaml", "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: t4\n"
            "spec:\n  nodeLabels:\n    aks.azure.com/gpu-sku: t4\n")
    edit(repo_copy, "base/resource-flavors.yaml", "    kubernetes.azure.com/accelerator: nvidia\n", "    kubernetes.azure.com/accelerator: nvidia\n    aks.azure.com/gpu-sku: a100\n")
    edit(repo_copy, "overlays/single-queue/cluster-queue.yaml", "      flavors:\n        - name: gpu\n",
         '      flavors:\n        - name: t4\n          resources:\n            - name: nvidia.com/gpu\n              nominalQuota: "1"\n        - name: gpu\n')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-pod-fits-node"]
    assert found and all("list flavor gpu before t4" in f.hint and "tfvars" not in f.hint for f in found), _text(found)


def test_a_quota_short_because_of_an_untolerated_taint_names_the_toleration(repo_copy: Path):
    """A second GPU pool with the flavor's labels but a taint the flavor does not tolerate: the quota's fix names it."""
    _append(repo_copy, "terraform/node_pools.tf", T4_POOL.replace('"t4"', '"h100"').replace("t4pool", "h100pool")
            .replace("Standard_NC8as_T4_v3", "Standard_ND96isr_H100_v5").replace('"aks.azure.com/gpu-sku" = "h100"', '"aks.azure.com/gpu-sku" = "h100"')
            .replace("node_taints           = []", 'node_taints           = ["sku=h100:NoSchedule"]'))
    nd96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
    text = (repo_copy / nd96).read_text().splitlines(keepends=True)
    for i in (23, 24):
        text[i] = text[i].replace('value: "4"', 'value: "8"')
    text[14] = text[14].replace('value: "8"', 'value: "16"')
    (repo_copy / nd96).write_text("".join(text))
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-quota" and "prod-eastus2" in f.message]
    assert found and all("toleration of sku=h100:NoSchedule to flavor gpu" in f.hint and "h100pool" in f.hint for f in found), _text(found)


GPU_OPERATOR = """apiVersion: v1
kind: Namespace
metadata:
  name: gpu-operator
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: nvidia
  namespace: flux-system
spec:
  interval: 24h
  url: https://helm.ngc.nvidia.com/nvidia
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: gpu-operator
  namespace: flux-system
spec:
  targetNamespace: gpu-operator
  releaseName: gpu-operator
  storageNamespace: gpu-operator
  interval: 12h
  chart:
    spec:
      chart: gpu-operator
      version: v25.3.0
      sourceRef: {kind: HelmRepository, name: nvidia}
  values:
    driver:
      enabled: true
"""


@pytest.mark.parametrize("product,error", [("NVIDIA-A100-SXM4-80GB", False), ("NVIDIA-H100-80GB-HBM3", True)], ids=["a100", "another-model"])
def test_a_flavor_selecting_gfd_labels_on_a_cluster_with_the_gpu_operator(repo_copy: Path, product, error):
    """The GPU Operator runs GPU Feature Discovery, which labels GPU nodes with nvidia.com/gpu.product: a flavor selecting it
    is no capacity-flavor-labels error, but a warning that the value is assumed; one naming another GPU model than the
    pool's size stays an error."""
    edit(repo_copy, "terraform/clusters/prod-eastus2.tfvars", 'gpu_sku_label  = "a100"\n', 'gpu_sku_label  = "a100"\ngpu_driver     = "None"\n')
    write(repo_copy, "flux/infrastructure/controllers/gpu-operator.yaml", GPU_OPERATOR)
    edit(repo_copy, "flux/infrastructure/controllers/kustomization.yaml", "  - kuberay-operator.yaml\n", "  - kuberay-operator.yaml\n  - gpu-operator.yaml\n")
    edit(repo_copy, "base/resource-flavors.yaml", "    kubernetes.azure.com/accelerator: nvidia\n", f"    nvidia.com/gpu.product: {product}\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("capacity")]
    assert found and all(f.rule == "capacity-flavor-labels" and f.location() == "base/resource-flavors.yaml:16" for f in found), _text(found)
    if error:
        assert all(f.is_error for f in found), _text(found)
    else:
        assert all(f.severity == "warning" and "GPU Feature Discovery" in f.message and "assumes" in f.message for f in found), _text(found)


@pytest.mark.parametrize("zone", ["eastus2-1", "eastus2-2"])
def test_a_zone_pinned_flavor_on_a_pool_with_fewer_nodes_than_zones_is_a_warning(repo_copy: Path, zone):
    """One GPU node over zones 1 and 2: Azure chooses the zone, so a flavor pinned to either zone is neither an error nor
    a clean pass, but a warning that says what the gate assumed."""
    prod = "terraform/clusters/prod-eastus2.tfvars"
    (repo_copy / prod).write_text((repo_copy / prod).read_text() + 'gpu_zones = ["1", "2"]\n')
    edit(repo_copy, "base/resource-flavors.yaml", "    kubernetes.azure.com/accelerator: nvidia\n",
         f"    kubernetes.azure.com/accelerator: nvidia\n    topology.kubernetes.io/zone: {zone}\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("capacity") and "prod-eastus2" in f.message]
    assert found and all(f.rule == "capacity-flavor-labels" and f.severity == "warning" and "Azure" in f.message
                         and f.location() == "base/resource-flavors.yaml:17" for f in found), _text(found)
