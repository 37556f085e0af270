"""The Node objects and pools the capacity checks build from Terraform, as AKS registers them: architecture,
operating system, MIG, Spot system pools, and the hints of the findings they cause (harness/gate/pools.py,
scheduling.py, placement.py, podsets.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

PROD_TFVARS = "terraform/clusters/prod-eastus2.tfvars"
DEV_TFVARS = "terraform/clusters/dev-westus3.tfvars"
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
