"""A cluster whose GPU VM size changed without its gpu-sku component: one root cause (capacity-sku-component)
at the line that includes the component, the quota findings folded under it, and a fix that is the fix."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import capacity, sku_component
from harness.gate.render import render_repository
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

PROD_TFVARS = "terraform/clusters/prod-eastus2.tfvars"
PROD_QUEUES = "clusters/prod-eastus2/queues/kustomization.yaml"
NC24 = "components/gpu-sku/standard-nc24ads-a100-v4"


def prod_on_nc24(root: Path) -> None:
    edit(root, PROD_TFVARS, 'gpu_vm_size    = "Standard_ND96amsr_A100_v4"', 'gpu_vm_size    = "Standard_NC24ads_A100_v4"')


def capacity_of(root: Path, cluster: str = "prod-eastus2"):
    _, clusters = render_repository(root)
    return [f for f in capacity.capacity_findings(root, clusters) if f.context == f"cluster {cluster}"]


def line_of(root: Path, rel: str, marker: str) -> int:
    return next(i for i, line in enumerate((root / rel).read_text().splitlines(), 1) if marker in line)


def test_component_names_follow_the_vm_size():
    from harness.core.versions import REPO_ROOT

    assert sku_component.component_of("Standard_ND96amsr_A100_v4") == "standard-nd96amsr-a100-v4"
    assert sku_component.written_in(REPO_ROOT, f"{NC24}/kustomization.yaml") == NC24
    assert sku_component.written_in(REPO_ROOT, "overlays/team-queues/team-a.yaml") is None  # a kustomization, not a Component
    assert sku_component.written_in(REPO_ROOT, "components/gpu-sku") is None


def test_vm_size_changed_without_the_component_is_one_root_cause(repo_copy: Path):
    prod_on_nc24(repo_copy)
    found = capacity_of(repo_copy)
    roots = [f for f in found if f.rule == "capacity-sku-component"]
    assert len(roots) == 1, "\n".join(f.text() for f in found)
    root = roots[0]
    # The team layout includes the ND96 component in overlays/team-queues: that line is where the quotas come from.
    assert (root.file, root.line) == ("overlays/team-queues/kustomization.yaml",
                                      line_of(repo_copy, "overlays/team-queues/kustomization.yaml", "standard-nd96amsr-a100-v4"))
    for part in ("cluster prod-eastus2", "components/gpu-sku/standard-nd96amsr-a100-v4", "through clusters/prod-eastus2/queues",
                 "gpu_vm_size = Standard_NC24ads_A100_v4 at terraform/clusters/prod-eastus2.tfvars:", NC24,
                 "the nvidia.com/gpu quota 8 of flavor gpu (ClusterQueue team-a-cq 4, ClusterQueue team-b-cq 4) has only 1 behind it",
                 "the cpu quota 94 of flavor default"):
        assert part in root.message, f"{part!r} not in: {root.message}"
    assert not [f for f in found if f.rule == "capacity-quota"], "the quota findings are folded under the root cause"
    # The NC24 component sizes only the single queue (its patches select ray-on-aks/quota-share=whole-pool): kustomize says so.
    assert f"{NC24} does not size these ClusterQueues" in root.hint, root.hint


def test_the_hint_is_the_fix_when_the_component_sizes_the_queues(repo_copy: Path):
    prod_on_nc24(repo_copy)
    edit(repo_copy, PROD_QUEUES, "- ../../../overlays/team-queues", "- ../../../overlays/single-queue")
    [root] = [f for f in capacity_of(repo_copy) if f.rule == "capacity-sku-component"]
    assert root.file == "overlays/single-queue/kustomization.yaml", root.text()
    assert f"list {NC24} under `components:` in {PROD_QUEUES}" in root.hint, root.hint
    # Doing what the hint says leaves no capacity finding about quotas.
    (repo_copy / PROD_QUEUES).write_text((repo_copy / PROD_QUEUES).read_text() + f"components:\n  - ../../../{NC24}\n")
    left = [f for f in capacity_of(repo_copy) if f.rule in ("capacity-sku-component", "capacity-quota")]
    assert not left, "\n".join(f.text() for f in left)


def test_a_quota_too_big_for_the_right_component_is_not_blamed_on_the_component(repo_copy: Path):
    edit(repo_copy, "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml",
         'path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "4"}',
         'path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "5"}')
    found = capacity_of(repo_copy)
    assert not [f for f in found if f.rule == "capacity-sku-component"]
    quota = [f for f in found if f.rule == "capacity-quota"]
    assert quota and all("lower the nvidia.com/gpu nominalQuota values written here so that they total at most 8" in f.hint for f in quota)
