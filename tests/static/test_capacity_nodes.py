"""The Node objects and pools the capacity checks build from Terraform, as AKS registers them: architecture,
operating system, MIG, Spot system pools, and the hints of the findings they cause (harness/gate/pools.py,
scheduling.py, placement.py, podsets.py)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.gate import flavor_capacities, node_pools, validate_repository
from harness.gate.render import render_repository
from tests.static.test_capacity import line_of, taint_gpu_pool
from tests.static.test_gate_corpus import append, edit

pytestmark = pytest.mark.static

PROD_TFVARS = "terraform/clusters/prod-eastus2.tfvars"
DEV_TFVARS = "terraform/clusters/dev-westus3.tfvars"
WORKER_SPEC = "            serviceAccountName: ray-workload\n            containers:"
HEAD_SPEC = "        spec:\n          serviceAccountName: ray-workload\n          containers:\n            - name: ray-head"


def cpu_pool(root: Path, tfvars: str, vm_size: str, count: int = 1) -> None:
    edit(root, tfvars, 'gpu_sku_label  = "a100"\n', f'gpu_sku_label  = "a100"\ncpu_vm_size    = "{vm_size}"\ncpu_node_count = {count}\n')


def head_selects(root: Path, selector: str, sample: str = "batch-inference") -> None:
    edit(root, f"workloads/{sample}.yaml", HEAD_SPEC, HEAD_SPEC.replace("containers:", f"nodeSelector: {selector}\n          containers:"))


def capacity(root: Path, cluster: str | None = None) -> list:
    return [f for f in validate_repository(root).findings
            if f.rule.startswith("capacity") and (cluster is None or f"cluster {cluster}" in f.context)]


def test_an_arm64_pool_is_where_pods_selecting_arm64_run(repo_copy: Path):
    """An Arm size (sku.yaml arch: arm64) gives its nodes kubernetes.io/arch=arm64: the scheduler's own plugins place a
    head that selects it there (the Node objects keep the size's architecture, not amd64 for every size)."""
    cpu_pool(repo_copy, DEV_TFVARS, "Standard_D8ps_v6")
    head_selects(repo_copy, "{kubernetes.io/arch: arm64}")
    found = capacity(repo_copy, "dev-westus3")
    assert found == [], "\n".join(f.text() for f in found)


WINDOWS_POOL = """
resource "azurerm_kubernetes_cluster_node_pool" "win" {
  name                  = "win"
  kubernetes_cluster_id = azurerm_kubernetes_cluster.this.id
  mode                  = "User"
  vm_size               = "Standard_D8ds_v6"
  node_count            = 2
  os_type               = "Windows"
  os_sku                = "Windows2022"
  vnet_subnet_id        = azurerm_subnet.nodes.id
}
"""


def test_a_windows_pool_is_labelled_windows_and_backs_no_quota(repo_copy: Path):
    """AKS labels a Windows pool's nodes kubernetes.io/os=windows; the quota of Ray's (Linux) pods never counts them."""
    append(repo_copy, "terraform/node_pools.tf", WINDOWS_POOL)
    win = next(p for p in node_pools(repo_copy, "prod-eastus2") if p.name == "win")
    assert (win.os, win.labels["kubernetes.io/os"], win.labels["beta.kubernetes.io/os"]) == ("windows", "windows", "windows")
    assert "kubernetes.azure.com/os-sku" not in win.labels or win.labels["kubernetes.azure.com/os-sku"] != "Ubuntu"
    _, clusters = render_repository(repo_copy)
    prod = next(c for c in clusters if c.name == "prod-eastus2")
    capacities = flavor_capacities([o for _, o in prod.applied()], node_pools(repo_copy, "prod-eastus2"))
    assert capacities and all(p.name != "win" for fc in capacities for p in fc.pools), capacities


def test_linux_pods_that_may_land_on_windows_nodes_get_a_warning(repo_copy: Path):
    """Beside the untainted (Linux) GPU pool, a Windows pool takes the heads as well: the scheduler may put them there, so
    each head template is warned to select kubernetes.io/os: linux; nothing else changes."""
    append(repo_copy, "terraform/node_pools.tf", WINDOWS_POOL)
    found = capacity(repo_copy)
    assert found and {(f.rule, f.severity) for f in found} == {("capacity-pod-os", "warning")}, "\n".join(f.text() for f in found)
    wl = "workloads/batch-inference.yaml"
    assert any(f.file == wl and f.line == line_of(repo_copy, wl, "template:", 0) and "kubernetes.io/os: linux" in f.hint for f in found)
    head_selects(repo_copy, "{kubernetes.io/os: linux}")
    assert not [f for f in capacity(repo_copy) if f.file == wl]


def test_pods_only_a_windows_pool_could_take_are_an_error(repo_copy: Path):
    """The GPU pool tainted for flavor gpu and the CPU pool Windows: the heads (flavor default only) have no Linux node."""
    taint_gpu_pool(repo_copy)
    edit(repo_copy, "terraform/node_pools.tf", "  vm_size                 = var.cpu_vm_size\n",
         '  vm_size                 = var.cpu_vm_size\n  os_type                 = "Windows"\n')
    edit(repo_copy, "terraform/node_pools.tf", 'name                    = var.cpu_node_pool_name', 'name                    = "win"')
    cpu_pool(repo_copy, PROD_TFVARS, "Standard_D16ds_v5", 2)
    found = capacity(repo_copy, "prod-eastus2")
    errors = [f for f in found if f.is_error]
    assert errors and all(f.rule == "capacity-pod-placement" and "runs Windows" in f.message and "Linux pool" in f.hint for f in errors), \
        "\n".join(f.text() for f in found)


def test_a_gpu_pool_tolerated_by_the_pod_templates_is_no_capacity_error(repo_copy: Path):
    """AKS's GPU pattern: the GPU pool tainted sku=gpu:NoSchedule, each sample's worker template tolerating it (the flavor
    not), one CPU node per cluster. Kueue admits and every pod is placed, so the flavor-level rules count the GPU pool for
    flavor gpu through the templates' tolerations: only a warning at the flavor, to declare the taint there."""
    edit(repo_copy, "terraform/node_pools.tf", "  node_taints = []\n", '  node_taints = ["sku=gpu:NoSchedule"]\n')
    for tfvars in (PROD_TFVARS, DEV_TFVARS):
        edit(repo_copy, tfvars, 'gpu_sku_label  = "a100"\n', 'gpu_sku_label  = "a100"\ncpu_node_count = 1\n')
    for sample in ("aurora-finetune", "llm-training", "batch-inference"):
        edit(repo_copy, f"workloads/{sample}.yaml", WORKER_SPEC,
             WORKER_SPEC.replace("containers:", "tolerations: [{key: sku, operator: Equal, value: gpu, effect: NoSchedule}]\n            containers:"))
    found = validate_repository(repo_copy).findings
    assert found and all(f.severity == "warning" and f.rule == "capacity-flavor-labels" for f in found), "\n".join(f.text() for f in found)
    assert {(f.file, f.line) for f in found} == {("base/resource-flavors.yaml", line_of(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia"))}
    assert all("spec.nodeTaints [sku=gpu:NoSchedule]" in f.hint for f in found)


def test_a_submitter_without_requests_refused_for_a_taint_is_told_to_tolerate_it(repo_copy: Path):
    """Every node tainted, flavor default tolerating the GPU pool's taint: the pods with requests get it; the submitter
    requests nothing, gets no flavor and none of its tolerations, so the hint is the submitterPodTemplate's toleration."""
    edit(repo_copy, "terraform/node_pools.tf", "  node_taints = []\n", '  node_taints = ["sku=gpu:NoSchedule"]\n')
    edit(repo_copy, "base/resource-flavors.yaml", "  name: default\nspec: {}",
         "  name: default\nspec:\n  tolerations:\n    - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}")
    found = capacity(repo_copy)
    assert found and all(f.rule == "capacity-pods-scheduled" and "of submitter" in f.message for f in found), "\n".join(f.text() for f in found)
    assert all("submitterPodTemplate" in f.hint and "toleration" in f.hint for f in found), [f.hint for f in found]


def test_a_pod_kept_off_its_node_by_a_raised_max_pods_is_told_so(repo_copy: Path):
    """AKS reserves 20 MiB of memory per pod slot: at max_pods 250 the head's memory no longer fits prod-eastus2's GPU node
    (at 110 it would), so the hint names the max_pods line. Memory is left out of quota for Kueue to admit the job."""
    edit(repo_copy, "flux/infrastructure/controllers/kueue.yaml", "        featureGates:\n",
         "        resources:\n          excludeResourcePrefixes: [memory]\n        featureGates:\n")
    edit(repo_copy, "workloads/batch-inference.yaml", 'requests: {cpu: "4", memory: 16Gi}\n                limits: {cpu: "4", memory: 16Gi}',
         'requests: {cpu: "4", memory: 1941000Mi}\n                limits: {cpu: "4", memory: 1941000Mi}')
    edit(repo_copy, PROD_TFVARS, "gpu_node_count = 1\n", "gpu_node_count = 1\nmax_pods       = 250\n")
    found = [f for f in capacity(repo_copy, "prod-eastus2") if f.rule == "capacity-pod-fits-node"]
    where = f"{PROD_TFVARS}:{line_of(repo_copy, PROD_TFVARS, 'max_pods')}"
    assert found and all(f"max_pods = 250 at {where}" in f.hint for f in found), "\n".join(f.text() for f in found)


def test_a_flavor_selecting_no_pool_is_reported_at_the_label_no_pool_carries(repo_copy):
    """Flavor gpu adds a label no pool's nodes carry: the finding is at that label, not at the first one (which they do)."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import edit
    edit(repo_copy, "base/resource-flavors.yaml", "    kubernetes.azure.com/accelerator: nvidia\n", "    kubernetes.azure.com/accelerator: nvidia\n    gpu-sku: h100\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-flavor-labels"]
    assert found and {(f.file, f.line) for f in found} == {("base/resource-flavors.yaml", 17)}, "\n".join(f.text() for f in found)


MIG = ("terraform/node_pools.tf", "  gpu_driver  = var.gpu_driver\n", '  gpu_driver  = var.gpu_driver\n  gpu_instance = "MIG1g"\n')
DEV_GPU_QUOTA = "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml"


def _dev_gpu_quota(root: Path, value: int) -> None:
    path = root / DEV_GPU_QUOTA
    lines = path.read_text().splitlines(keepends=True)
    assert "nominalQuota, value: " in lines[12], lines[12]
    lines[12] = re.sub(r'value: "\d+"', f'value: "{value}"', lines[12])
    path.write_text("".join(lines))


@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"])
def test_a_mig_pool_counts_its_instances_under_either_strategy(repo_copy: Path, resource: str):
    """gpu_instance = MIG1g on dev's one A100: 7 instances, as nvidia.com/gpu (MIG strategy single) or nvidia.com/mig-1g.10gb
    (mixed). A quota of 7 and samples requesting either name are clean but for the capacity-gpu-mig warning; 8 is capacity-quota."""
    edit(repo_copy, *MIG)
    _dev_gpu_quota(repo_copy, 7)
    if resource != "nvidia.com/gpu":
        for path in [*repo_copy.glob("overlays/*/*.yaml"), *repo_copy.glob("workloads/*.yaml")]:
            path.write_text(path.read_text().replace("nvidia.com/gpu", resource))
    found = capacity(repo_copy)
    assert [f.rule for f in found if f.severity == "error"] == [], "\n".join(f.text() for f in found)
    assert {f.rule for f in found} == {"capacity-gpu-mig"}, "\n".join(f.text() for f in found)
    if resource == "nvidia.com/gpu":
        _dev_gpu_quota(repo_copy, 8)
        found = [f for f in capacity(repo_copy, "dev-westus3") if f.severity == "error"]
        assert [(f.rule, f.file, f.line) for f in found] == [("capacity-quota", DEV_GPU_QUOTA, 13)], "\n".join(f.text() for f in found)
        assert "at most 7" in found[0].hint, found[0].hint
