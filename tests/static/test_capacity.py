"""Capacity checks (harness/gate/capacity.py, pools.py, sku.py, terraform.py) and the identity wiring
(harness/gate/terraform_checks.py):
the repository passes, and each broken variant fails with a message that names the cluster,
ClusterQueue, resource, declared quota, real capacity, Terraform file and pool."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from harness.core import format_quantity, parse_quantity
from harness.gate import capacity, flavor_capacities, node_pools
from harness.gate import terraform_checks
from harness.gate.pools import SYSTEM_TAINT, cluster_pools, selects
from harness.gate.sku import SKU_FILE, allocatable, sku_table
from harness.gate.terraform import TerraformConfig, load_tfvars
from harness.gate.render import render_repository
from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

PROD_TFVARS = "terraform/clusters/prod-eastus2.tfvars"
DEV_TFVARS = "terraform/clusters/dev-westus3.tfvars"
ND96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, f"test case is stale: {old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1))



def findings(root: Path):
    _, clusters = render_repository(root)
    return capacity.capacity_findings(root, clusters) + terraform_checks.wiring_findings(root)


def only(found, rule):
    hits = [f for f in found if f.rule == rule]
    assert hits, f"expected {rule}; got: " + "\n".join(f.text() for f in found)
    return hits


def test_repository_passes():
    found = findings(REPO_ROOT)
    assert not found, "\n".join(f.text() for f in found)


def test_every_cluster_has_pools_and_a_known_sku():
    cfg = TerraformConfig.load(REPO_ROOT)
    skus, _ = sku_table()
    for name, sku in (("prod-eastus2", "Standard_ND96amsr_A100_v4"), ("dev-westus3", "Standard_NC24ads_A100_v4")):
        pools = cluster_pools(cfg, load_tfvars(REPO_ROOT / f"terraform/clusters/{name}.tfvars"))
        system = [p for p in pools if p.system]
        gpu = [p for p in pools if p.labels.get("accelerator") == "nvidia"]
        assert len(system) == 1 and SYSTEM_TAINT in system[0].taints
        assert [(p.vm_size, p.count) for p in gpu] == [(sku, 1)]
        assert all(p.vm_size in skus for p in pools)


def test_sku_table_allocatable_matches_the_aks_formula():
    doc = yaml.safe_load(SKU_FILE.read_text())
    skus, reservation = sku_table()
    required = {"Standard_ND96amsr_A100_v4", "Standard_ND96asr_v4", "Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4",
                "Standard_NC96ads_A100_v4", "Standard_NC40ads_H100_v5", "Standard_ND96isr_H100_v5",
                "Standard_D4ds_v6", "Standard_D8ds_v6", "Standard_D4ds_v5", "Standard_D8ds_v5"}
    assert required <= set(skus)
    for name, sku in skus.items():
        computed = allocatable(sku, reservation["max_pods_assumed"])
        listed = {k: parse_quantity(v) for k, v in doc["skus"][name]["allocatable"].items()}
        assert listed == computed, f"{name}: table says {listed}, formula gives {computed}"
    # Published AKS reservation points (1.29+): 8 cores reserve 180m, 64 cores 740m.
    d8 = allocatable(skus["Standard_D8ds_v5"], 110)
    assert d8["cpu"] == Decimal("7.82")


def test_gpu_sku_changed_without_quotas(repo_copy: Path):
    edit(repo_copy, PROD_TFVARS, 'gpu_vm_size    = "Standard_ND96amsr_A100_v4"', 'gpu_vm_size    = "Standard_NC24ads_A100_v4"')
    hits = only(findings(repo_copy), "capacity-quota")
    gpu = [f for f in hits if "nvidia.com/gpu" in f.message and "team-a-cq" in f.resource]
    assert gpu, [f.message for f in hits]
    msg = gpu[0].message
    for part in ("cluster prod-eastus2", "ClusterQueue team-a-cq", "nvidia.com/gpu", "declared nominal quota 8", "real capacity 1",
                 "terraform/node_pools.tf", "pool gpupool", "Standard_NC24ads_A100_v4", PROD_TFVARS):
        assert part in msg, f"{part!r} not in: {msg}"
    assert any("flavor default cpu" in f.message and "quota 96" in f.message and "capacity 24" in f.message for f in hits)
    assert all(f.context == "cluster prod-eastus2" for f in hits)


def test_quota_above_capacity(repo_copy: Path):
    edit(repo_copy, ND96, 'path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "4"}',
         'path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "5"}')
    hits = only(findings(repo_copy), "capacity-quota")
    msg = hits[0].message
    assert "declared nominal quota 10" in msg and "ClusterQueue team-a-cq 5, ClusterQueue team-b-cq 5" in msg
    assert "real capacity 8" in msg and "pool gpupool, 1 x Standard_ND96amsr_A100_v4" in msg
    assert {f.resource for f in hits} == {"ClusterQueue/team-a-cq", "ClusterQueue/team-b-cq"}
    assert hits[0].file.startswith("overlays/team-queues/")


def test_flavor_label_mismatch(repo_copy: Path):
    edit(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia", "accelerator: nvidia-h100")
    found = findings(repo_copy)
    hits = only(found, "capacity-flavor-labels")
    assert {f.context for f in hits} == {"cluster prod-eastus2", "cluster dev-westus3"}
    msg = hits[0].message
    assert "flavor gpu" in msg and "nvidia-h100" in msg and "gpupool has accelerator=nvidia" in msg
    assert hits[0].file == "base/resource-flavors.yaml" and hits[0].resource == "ResourceFlavor/gpu"
    # Its GPU quota now has no capacity behind it either.
    assert any("nvidia.com/gpu" in f.message and "real capacity 0" in f.message for f in only(found, "capacity-quota"))


def test_pod_larger_than_any_node(repo_copy: Path):
    # 95 CPUs fit prod's team quota (48 + 48 borrowed) but not one ND96 node's 94.94 allocatable.
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'requests: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "1"}',
         'requests: {cpu: "95", memory: 160Gi, nvidia.com/gpu: "1"}')
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'limits: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "1"}',
         'limits: {cpu: "95", memory: 160Gi, nvidia.com/gpu: "1"}')
    hits = only(findings(repo_copy), "capacity-pod-fits-node")
    prod = [f for f in hits if f.context.startswith("cluster prod-eastus2")]
    assert prod, [f.message for f in hits]
    msg = prod[0].message
    for part in ("ClusterQueue team-a-cq", "pod gpu-workers of sample aurora-finetune", "cpu 95", "allocatable cpu 94.94",
                 "terraform/node_pools.tf", "pool gpupool"):
        assert part in msg, f"{part!r} not in: {msg}"
    assert prod[0].file == "workloads/aurora-finetune.yaml"


def test_missing_federated_credential_subject(repo_copy: Path):
    edit(repo_copy, "terraform/identity.tf", "  subject             = local.workload_subject\n", "")
    hits = only(findings(repo_copy), "terraform-federated-subject")
    assert "has no subject" in hits[0].message and "system:serviceaccount:ray:ray-workload" in hits[0].message
    assert hits[0].file == "terraform/identity.tf" and hits[0].line


def test_federated_subject_for_another_service_account(repo_copy: Path):
    edit(repo_copy, "terraform/variables.tf", 'default     = "ray-workload"\n', 'default     = "ray-worker"\n')
    hits = only(findings(repo_copy), "terraform-federated-subject")
    assert "system:serviceaccount:ray:ray-worker" in hits[0].message and "ray/ray-workload" in hits[0].message


def test_cluster_without_tfvars(repo_copy: Path):
    (repo_copy / DEV_TFVARS).unlink()
    hits = only(findings(repo_copy), "capacity-terraform")
    assert hits[0].file == DEV_TFVARS and "dev-westus3" in hits[0].message


def test_unknown_vm_size(repo_copy: Path):
    edit(repo_copy, PROD_TFVARS, '"Standard_ND96amsr_A100_v4"', '"Standard_NC8as_T4_v3"')
    hits = only(findings(repo_copy), "capacity-unknown-sku")
    assert "Standard_NC8as_T4_v3" in hits[0].message and "harness/gate/sku.yaml" in hits[0].message


def test_cpu_pool_counts_for_the_default_flavor(repo_copy: Path):
    cfg = TerraformConfig.load(repo_copy)
    tfvars = {**load_tfvars(repo_copy / DEV_TFVARS), "cpu_node_count": 2}
    pools = cluster_pools(cfg, tfvars)
    default_pools = [p.name for p in pools if selects(p, {}, [])]
    gpu_pools = [p.name for p in pools if selects(p, {"accelerator": "nvidia"}, [])]
    assert default_pools == ["gpupool", "cpupool"] and gpu_pools == ["gpupool"]  # never the tainted system pool


def test_flavor_capacities_are_the_quotas_against_the_selected_pools():
    _, clusters = render_repository(REPO_ROOT)
    prod = next(c for c in clusters if c.name == "prod-eastus2")
    by_key = {(fc.flavor, fc.resource): fc for fc in flavor_capacities([o for _, o in prod.applied()], node_pools(REPO_ROOT, "prod-eastus2"))}
    gpu = by_key[("gpu", "nvidia.com/gpu")]
    assert [p.name for p in gpu.pools] == ["gpupool"] and gpu.capacity == 8
    assert gpu.nominal_total == sum((q for _, q in gpu.quotas), Decimal(0)) and gpu.headroom == gpu.capacity - gpu.nominal_total
    assert all(fc.headroom >= 0 for fc in by_key.values())


def test_format_quantity():
    assert format_quantity("memory", Decimal(768) * 2**30) == "768Gi"
    assert format_quantity("memory", parse_quantity("7680Mi")) == "7.5Gi"
    assert format_quantity("cpu", parse_quantity("500m")) == "0.5"
    assert format_quantity("nvidia.com/gpu", Decimal("8.0")) == "8"


def test_quantity_parser_is_loaded_once(monkeypatch):
    import importlib.util

    parse_quantity("1")
    monkeypatch.setattr(importlib.util, "spec_from_file_location", lambda *a, **k: pytest.fail("loaded the quantity module again"))
    assert parse_quantity("2Gi") == 2 * 2**30
