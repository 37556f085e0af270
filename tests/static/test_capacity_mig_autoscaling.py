"""MIG instances under either device-plugin strategy against the queues' quotas, gpu_instance values azurerm refuses, and
the autoscaling settings azurerm or AKS refuse per pool kind (harness/gate/quota.py, node_settings.py, autoscaling.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from tests.static.test_capacity import DEV_TFVARS, NC24, line_of
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

POOLS = "terraform/node_pools.tf"
GPU_DRIVER = "  gpu_driver  = var.gpu_driver\n"


def _mig(root: Path, profile: str, resource: str | None = None, quota: int | None = None) -> None:
    edit(root, POOLS, GPU_DRIVER, f'{GPU_DRIVER}  gpu_instance = "{profile}"\n')
    if resource:  # the `mixed` strategy's names in every quota and request
        for path in [*root.glob("overlays/*/*.yaml"), *root.glob("workloads/*.yaml"), *root.glob("components/gpu-sku/*/kustomization.yaml")]:
            path.write_text(path.read_text().replace("nvidia.com/gpu", resource))
    if quota is not None:
        lines = (root / NC24).read_text().splitlines(keepends=True)
        lines[12] = lines[12].replace('value: "1"', f'value: "{quota}"')
        (root / NC24).write_text("".join(lines))


def _errors(root: Path) -> list:
    return [f for f in validate_repository(root).findings if f.severity == "error"]


def text(found) -> str:
    return "\n".join(f.text() for f in found)


def test_a_mixed_strategy_quota_above_the_instances_is_capacity_quota(repo_copy: Path):
    """MIG2g on dev's one A100: 3 nvidia.com/mig-2g.20gb instances; a quota of 5 is over-committed, as under `single`."""
    _mig(repo_copy, "MIG2g", "nvidia.com/mig-2g.20gb", 5)
    found = _errors(repo_copy)
    assert [(f.rule, f.file, f.line) for f in found] == [("capacity-quota", NC24, 13)], text(found)
    assert "nvidia.com/mig-2g.20gb" in found[0].message and "allocatable 3" in found[0].message, found[0].message


def test_a_mig_profile_the_pool_does_not_give_is_one_finding_per_quota_naming_the_one_it_gives(repo_copy: Path):
    """Quotas and requests of nvidia.com/mig-1g.10gb on a MIG2g pool: one capacity-quota per cluster (the sample pods that
    request it follow from it), whose fix names the instances the pool advertises and the gpu_instance that gives the profile."""
    _mig(repo_copy, "MIG2g", "nvidia.com/mig-1g.10gb")
    found = _errors(repo_copy)
    assert sorted(f.rule for f in found) == ["capacity-quota", "capacity-quota"], text(found)
    for f in found:
        assert "nvidia.com/mig-2g.20gb" in f.hint and "gpu_instance = MIG1g" in f.hint and "huge pages" not in f.hint, f.hint
        assert "sample pods" in f.message, f.message


def test_a_quota_of_a_resource_no_pool_advertises_is_reported(repo_copy: Path):
    """A queue covering nvidia.com/mig-1g.10gb on whole-GPU pools: no node advertises it (samples keep nvidia.com/gpu)."""
    for path in [*repo_copy.glob("overlays/*/*.yaml"), *repo_copy.glob("components/gpu-sku/*/kustomization.yaml")]:
        path.write_text(path.read_text().replace("nvidia.com/gpu", "nvidia.com/mig-1g.10gb"))
    quota = [f for f in _errors(repo_copy) if f.rule == "capacity-quota"]
    assert {(f.file, f.line) for f in quota} >= {(NC24, 13)}, text(quota)
    assert all("gpu_instance = MIG1g" in f.hint for f in quota), text(quota)


def test_a_pods_quota_within_max_pods_is_clean(repo_copy: Path):
    """A `pods` quota (Kueue counts pods like any resource) is judged against the nodes' allocatable pods (max_pods)."""
    edit(repo_copy, "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml",
         'resources/0/nominalQuota, value: "1"}', 'resources/0/nominalQuota, value: "1"}\n'
         '      - {op: add, path: /spec/resourceGroups/0/coveredResources/-, value: pods}\n'
         '      - {op: add, path: /spec/resourceGroups/0/flavors/0/resources/-, value: {name: pods, nominalQuota: "20"}}')
    found = _errors(repo_copy)
    assert found == [], text(found)
    edit(repo_copy, NC24, 'nominalQuota: "20"', 'nominalQuota: "2000"')  # dev's nodes hold fewer pods than that
    found = _errors(repo_copy)
    assert [f.rule for f in found] == ["capacity-quota"] and "flavor default pods" in found[0].message, text(found)


def test_a_gpu_instance_outside_azurerms_set_is_refused_at_its_line(repo_copy: Path):
    edit(repo_copy, POOLS, GPU_DRIVER, f'{GPU_DRIVER}  gpu_instance = "mig1g"\n')
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("capacity-node-settings", POOLS, line_of(repo_copy, POOLS, "gpu_instance"))], text(found)
    assert "MIG1g, MIG2g, MIG3g, MIG4g, MIG7g" in found[0].hint and "did you mean MIG1g?" in found[0].hint, found[0].hint


def test_the_mig_warning_is_one_finding_for_the_line_both_clusters_share(repo_copy: Path):
    _mig(repo_copy, "MIG2g")
    found = validate_repository(repo_copy).findings
    assert [f.rule for f in found] == ["capacity-gpu-mig"], text(found)
    assert "cluster dev-westus3" in found[0].context and "cluster prod-eastus2" in found[0].context, found[0].context


DEFAULT_POOL = "    only_critical_addons_enabled = true\n"


def _autoscale_default(root: Path, lo: str, hi: str) -> None:
    edit(root, "terraform/aks.tf", DEFAULT_POOL, f"{DEFAULT_POOL}    auto_scaling_enabled = true\n    min_count = {lo}\n    max_count = {hi}\n")


def _autoscale_gpu(root: Path, lo: int, hi: int, mode: str = "User") -> None:
    edit(root, POOLS, "  node_count              = var.gpu_node_count\n",
         f"  node_count              = var.gpu_node_count\n  auto_scaling_enabled    = true\n  min_count               = {lo}\n  max_count               = {hi}\n")
    if mode != "User":
        edit(root, POOLS, '  mode                    = "User"\n', f'  mode                    = "{mode}"\n')


def _autoscaling(root: Path) -> list:
    return [f for f in validate_repository(root).findings if f.rule == "capacity-autoscaling"]


def test_the_default_pool_refuses_min_count_zero(repo_copy: Path):
    _autoscale_default(repo_copy, "0", "3")
    found = _autoscaling(repo_copy)
    assert [(f.file, f.line) for f in found] == [("terraform/aks.tf", line_of(repo_copy, "terraform/aks.tf", "min_count = 0"))], text(found)
    assert "`min_count` must be configured when `auto_scaling_enabled` is set to `true`" in found[0].message, found[0].message


def test_min_count_above_max_count_is_one_finding_with_the_values_written(repo_copy: Path):
    _autoscale_default(repo_copy, "var.system_node_count", "3")
    edit(repo_copy, DEV_TFVARS, "system_node_count = 1", "system_node_count = 4")
    found = _autoscaling(repo_copy)
    assert len(found) == 1, text(found)
    assert "min_count 4" in found[0].message and "max_count 3" in found[0].message and "min_count 3" not in found[0].message, found[0].message
    assert (found[0].file, found[0].line) == (DEV_TFVARS, line_of(repo_copy, DEV_TFVARS, "system_node_count = 4"))


def test_a_node_pool_node_count_outside_its_range_quotes_the_aks_resource_provider(repo_copy: Path):
    _autoscale_gpu(repo_copy, 2, 3)
    found = _autoscaling(repo_copy)
    assert found and all("agentPoolProfile.count was 1" in f.message and "must be equal to or greater" not in f.message for f in found), text(found)


def test_a_system_mode_node_pool_refuses_min_count_zero_and_a_user_pool_scales_to_zero(repo_copy: Path):
    _autoscale_gpu(repo_copy, 0, 3, mode="System")
    found = _autoscaling(repo_copy)
    assert found and all("system pool" in f.message for f in found), text(found)
    edit(repo_copy, POOLS, '  mode                    = "System"\n', '  mode                    = "User"\n')
    assert _autoscaling(repo_copy) == []


def test_node_count_zero_on_an_autoscaling_pool_is_min_count(repo_copy: Path):
    """azurerm sends min_count for a node_count of 0 (\"handle count being optional\"): no range finding."""
    _autoscale_gpu(repo_copy, 1, 3)
    edit(repo_copy, POOLS, "  node_count              = var.gpu_node_count\n", "  node_count              = 0\n")
    edit(repo_copy, POOLS, "  count = var.gpu_node_count > 0 ? 1 : 0\n", "")
    found = _autoscaling(repo_copy)
    assert found == [], text(found)


NODE_AGENT = """apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent, namespace: ray}
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:%s
      initContainers:
        - {name: setup, image: busybox:1.36, resources: {requests: {cpu: "%s"}}}
      containers:
        - {name: agent, image: busybox:1.36, resources: {requests: {cpu: 100m, memory: 64Mi}}}
"""


def _node_agent(root: Path, init_cpu: str, selector: str = "") -> None:
    (root / "base/node-agent.yaml").write_text(NODE_AGENT % (selector, init_cpu))
    edit(root, "base/kustomization.yaml", "  - namespace.yaml\n", "  - namespace.yaml\n  - node-agent.yaml\n")


def test_a_daemonsets_pods_take_their_requests_of_every_node_they_land_on(repo_copy: Path):
    """dev's NC24ads node gives pods 23.66 CPU and its queue 23; a DaemonSet whose init container asks 1 CPU (the pod's
    request, above its containers' 100m) leaves 22.66 on it: the quota is over-committed (the system pool's taint keeps it off)."""
    _node_agent(repo_copy, "1")
    found = [f for f in _errors(repo_copy) if "cluster dev-westus3" in f.context]
    assert [(f.rule, f.file, f.line) for f in found] == [("capacity-quota", NC24, 11)], text(found)
    assert "22.66" in found[0].message and "DaemonSet node-agent" in found[0].message, found[0].message


def test_a_daemonset_kept_off_the_pool_by_its_selector_takes_nothing_of_it(repo_copy: Path):
    _node_agent(repo_copy, "1", "\n      nodeSelector: {agentpool: system}\n      tolerations: [{key: CriticalAddonsOnly, operator: Exists}]")
    found = _errors(repo_copy)
    assert found == [], text(found)
