"""Capacity checks (harness/gate/capacity.py, pools.py, sku.py, terraform.py) and the identity wiring
(harness/gate/terraform_checks.py):
the repository passes, and each broken variant fails with a message that names the cluster,
ClusterQueue, resource, declared quota, allocatable capacity, Terraform file and pool."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from harness.cluster import node_objects
from harness.core import format_quantity, parse_quantity
from harness.gate import capacity, cluster_nodes, flavor_capacities, node_pools, validate_repository
from harness.gate import kueue_fit, placement, schema_check, terraform_checks, workloads
from harness.gate.pools import SYSTEM_TAINT, cluster_pools, node_matches, selects, untolerated
from harness.gate.sku import SKU_FILE, allocatable, sku_table
from harness.gate.terraform import TerraformConfig, load_tfvars
from harness.gate.render import render_repository
from harness.core.versions import REPO_ROOT
from tests.static.test_gate_corpus import edit, two_dev_gpu_nodes, write

pytestmark = pytest.mark.static

PROD_TFVARS = "terraform/clusters/prod-eastus2.tfvars"
DEV_TFVARS = "terraform/clusters/dev-westus3.tfvars"
ND96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
NC24 = "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml"


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
        gpu = [p for p in pools if p.labels.get("kubernetes.azure.com/accelerator") == "nvidia"]
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


def test_quota_above_capacity(repo_copy: Path):
    edit(repo_copy, ND96, 'path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "4"}',
         'path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "5"}')
    hits = only(findings(repo_copy), "capacity-quota")
    msg = hits[0].message
    assert "declared nominal quota 10" in msg and "ClusterQueue team-a-cq 5, ClusterQueue team-b-cq 5" in msg
    assert "allocatable 8" in msg and "pool gpupool, 1 x Standard_ND96amsr_A100_v4" in msg
    # One finding at the component patch line that writes the GPU quota of both team ClusterQueues.
    assert [(f.file, f.line) for f in hits] == [(ND96, 24)], "\n".join(f.text() for f in hits)
    assert "ClusterQueues team-a-cq, team-b-cq flavor gpu" in msg


def test_flavor_label_mismatch(repo_copy: Path):
    edit(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia", "accelerator: nvidia-h100")
    found = findings(repo_copy)
    hits = only(found, "capacity-flavor-labels")
    assert {f.context for f in hits} == {"cluster prod-eastus2", "cluster dev-westus3"}
    msg = next(f.message for f in hits if f.context == "cluster prod-eastus2")
    assert "flavor gpu" in msg and "nvidia-h100" in msg and "gpupool has kubernetes.azure.com/accelerator=nvidia" in msg
    assert hits[0].file == "base/resource-flavors.yaml" and hits[0].resource == "ResourceFlavor/gpu"
    assert hits[0].line == line_of(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia-h100"), "at the label it selects by"
    # The root cause once per cluster: its GPU quota and the GPU pods are listed under it, not reported again.
    assert "nvidia.com/gpu quota 8 of flavor gpu (ClusterQueue team-a-cq 4, ClusterQueue team-b-cq 4) has no capacity" in msg
    assert "sample pods aurora-finetune/gpu-workers, llm-training/gpu-workers, batch-inference/gpu-workers would stay Pending" in msg
    assert len(found) == 2, "\n".join(f.text() for f in found)


def test_pod_larger_than_any_node(repo_copy: Path):
    # On dev with two NC24ads nodes and quota for both (46 CPUs) a 23.8-CPU worker and a 100m head fit the quota (Kueue
    # admits the job) but not one node's 23.66 allocatable CPUs.
    two_dev_gpu_nodes(repo_copy)
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'requests: {cpu: "2", memory: 8Gi}', 'requests: {cpu: 100m, memory: 8Gi}')
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'limits: {cpu: "2", memory: 8Gi}', 'limits: {cpu: 100m, memory: 8Gi}')
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'requests: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "1"}',
         'requests: {cpu: "23.8", memory: 160Gi, nvidia.com/gpu: "1"}')
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'limits: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "1"}',
         'limits: {cpu: "23.8", memory: 160Gi, nvidia.com/gpu: "1"}')
    found = findings(repo_copy)
    hits = only(found, "capacity-pod-fits-node")
    assert [f.context for f in hits] == ["cluster dev-westus3, sample aurora-finetune on default"], [f.text() for f in found]
    msg = hits[0].message
    for part in ("ClusterQueue cluster-queue", "pod gpu-workers of sample aurora-finetune", "cpu 23.8", "allocatable cpu 23.66",
                 "terraform/node_pools.tf", "pool gpupool"):
        assert part in msg, f"{part!r} not in: {msg}"
    assert (hits[0].file, hits[0].line) == ("workloads/aurora-finetune.yaml", 90)
    assert not [f for f in found if f.rule == "capacity-pods-scheduled"], [f.text() for f in found]


def test_no_placement_findings_for_a_job_kueue_never_admits(repo_copy: Path):
    # 95 CPUs and the head's 2 are more than prod's team quota with all it may borrow (96): Kueue never admits the job,
    # so where its pods would land is moot (sample-fits says why; the gate's own run folds nothing under placement).
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'requests: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "1"}',
         'requests: {cpu: "95", memory: 160Gi, nvidia.com/gpu: "1"}')
    edit(repo_copy, "workloads/aurora-finetune.yaml", 'limits: {cpu: "18", memory: 160Gi, nvidia.com/gpu: "1"}',
         'limits: {cpu: "95", memory: 160Gi, nvidia.com/gpu: "1"}')
    found = capacity.capacity_findings(repo_copy, render_repository(repo_copy)[1])
    assert not [f for f in found if "aurora-finetune" in f.message], [f.text() for f in found]


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
    edit(repo_copy, PROD_TFVARS, '"Standard_ND96amsr_A100_v4"', '"Standard_NC6s_v3"')
    hits = only(findings(repo_copy), "capacity-unknown-sku")
    assert "Standard_NC6s_v3" in hits[0].message and ".ray-kueue-gate.yaml" in hits[0].hint and "skus:" in hits[0].hint
    assert (hits[0].file, hits[0].line) == (PROD_TFVARS, 11), hits[0]  # where the vm_size is written
    # The checked repository's gate configuration adds the size (a pre-commit hook's user cannot edit the installed
    # table): the capacity rules and the harness's simulated nodes size the pool from it.
    write(repo_copy, ".ray-kueue-gate.yaml", "skus:\n  Standard_NC6s_v3: {vcpu: 6, memory_gib: 112, gpus: 1}\n")
    found = findings(repo_copy)
    assert not [f for f in found if f.rule == "capacity-unknown-sku"], [f.text() for f in found]
    assert any(f.rule in ("capacity-quota", "capacity-sku-component") for f in found)  # 8 GPUs of quota on one GPU: sized now
    gpu = [n for n in cluster_nodes(repo_copy, "prod-eastus2") if n.vm_size == "Standard_NC6s_v3"]
    assert gpu and gpu[0].capacity["nvidia.com/gpu"] == 1 and gpu[0].capacity["cpu"] == 6


def test_gate_config_skus_of_a_wrong_shape_are_a_gate_config_finding(repo_copy: Path):
    from harness.gate import config

    write(repo_copy, ".ray-kueue-gate.yaml", "skus:\n  Standard_NC6s_v3: {vcpus: 6, memory_gib: 112}\n")
    cfg = config.load(repo_copy)
    assert cfg.findings and {(f.rule, f.line) for f in cfg.findings} == {("gate-config", 2)} and not cfg.skus


def test_cpu_pool_counts_for_the_default_flavor(repo_copy: Path):
    cfg = TerraformConfig.load(repo_copy)
    tfvars = {**load_tfvars(repo_copy / DEV_TFVARS), "cpu_node_count": 2}
    pools = cluster_pools(cfg, tfvars)
    default_pools = [p.name for p in pools if selects(p, {}, [])]
    gpu_pools = [p.name for p in pools if selects(p, {"kubernetes.azure.com/accelerator": "nvidia"}, [])]
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
    assert format_quantity("ephemeral-storage", parse_quantity("5Ti")) == "5120Gi"
    assert format_quantity("hugepages-2Mi", parse_quantity("1Gi")) == "1Gi"
    assert format_quantity("nvidia.com/gpu", Decimal("8.0")) == "8"


def test_quantity_parser_is_loaded_once(monkeypatch):
    import importlib.util

    parse_quantity("1")
    monkeypatch.setattr(importlib.util, "spec_from_file_location", lambda *a, **k: pytest.fail("loaded the quantity module again"))
    assert parse_quantity("2Gi") == 2 * 2**30


# -- Placement per pod set: tainted pools, autoscaling, root causes (issue 15, item 4) ------------------
GPU_POOL_LABELS = 'node_labels = { "aks.azure.com/gpu-sku" = var.gpu_sku_label }\n  node_taints = []'
GPU_FLAVOR = "  nodeLabels:\n    kubernetes.azure.com/accelerator: nvidia\n"


def taint_gpu_pool(root: Path, tolerate: bool = True) -> None:
    """The common AKS pattern: the GPU pool tainted, flavor gpu carrying the taint (and, to let Kueue
    inject it, the toleration)."""
    edit(root, "terraform/node_pools.tf", GPU_POOL_LABELS, GPU_POOL_LABELS.replace("node_taints = []", 'node_taints = ["sku=gpu:NoSchedule"]'))
    edit(root, "base/resource-flavors.yaml", GPU_FLAVOR, GPU_FLAVOR + "  nodeTaints:\n    - {key: sku, value: gpu, effect: NoSchedule}\n"
         + ("  tolerations:\n    - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}\n" if tolerate else ""))


def add_cpu_pool(root: Path, vm_size: str = "Standard_D16ds_v5", count: int = 2) -> None:
    for tfvars in (PROD_TFVARS, DEV_TFVARS):
        edit(root, tfvars, 'gpu_sku_label  = "a100"\n', f'gpu_sku_label  = "a100"\n\ncpu_vm_size    = "{vm_size}"\ncpu_node_count = {count}\n')


def tainted_pattern(root: Path) -> None:
    taint_gpu_pool(root)
    add_cpu_pool(root)


def autoscale_gpu_pool(root: Path, min_count: int, max_count: int, key: str = "auto_scaling_enabled") -> None:
    edit(root, "terraform/node_pools.tf", "  node_count              = var.gpu_node_count\n",
         f"  {key} = true\n  min_count            = {min_count}\n  max_count            = {max_count}\n")


def line_of(root: Path, rel: str, marker: str, nth: int = 0) -> int:
    hits = [i + 1 for i, line in enumerate((root / rel).read_text().splitlines()) if marker in line]
    assert len(hits) > nth, f"test case is stale: {marker!r} not in {rel}"
    return hits[nth]


def test_tainted_gpu_pool_with_a_cpu_pool_is_clean(repo_copy: Path):
    """GPU pods get both flavors and run on the GPU node; only CPU-only pods are limited to the CPU pool."""
    tainted_pattern(repo_copy)
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def drop_gpu_upgrade_settings(root: Path) -> None:
    """The GPU pool without its upgrade_settings block (a Spot pool cannot set max_surge: AKS refuses it)."""
    edit(root, "terraform/node_pools.tf", '  upgrade_settings {\n    max_surge = "10%"\n  }\n\n  tags = local.tags\n}\n\nresource "azurerm_kubernetes_cluster_node_pool" "cpu"',
         '  tags = local.tags\n}\n\nresource "azurerm_kubernetes_cluster_node_pool" "cpu"')


def test_spot_gpu_pool_whose_flavor_tolerates_it_with_a_cpu_pool_is_clean(repo_copy: Path):
    """A Spot GPU pool (AKS taints it kubernetes.azure.com/scalesetpriority=spot:NoSchedule) is the
    tainted-pool pattern with AKS's taint: clean once flavor gpu carries the toleration and a CPU pool
    takes the head pods; the pool's nodes carry the label and taint AKS gives them."""
    edit(repo_copy, "terraform/node_pools.tf", "  gpu_driver  = var.gpu_driver\n",
         '  gpu_driver  = var.gpu_driver\n  priority        = "Spot"\n  eviction_policy = "Delete"\n  spot_max_price  = -1\n')
    drop_gpu_upgrade_settings(repo_copy)
    edit(repo_copy, "base/resource-flavors.yaml", GPU_FLAVOR, GPU_FLAVOR + "  tolerations:\n"
         "    - {key: kubernetes.azure.com/scalesetpriority, operator: Equal, value: spot, effect: NoSchedule}\n")
    add_cpu_pool(repo_copy)
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)
    gpu = next(p for p in cluster_pools(TerraformConfig.load(repo_copy), load_tfvars(repo_copy / PROD_TFVARS)) if p.name == "gpupool")
    assert gpu.labels["kubernetes.azure.com/scalesetpriority"] == "spot"
    assert "kubernetes.azure.com/scalesetpriority=spot:NoSchedule" in gpu.taints


def test_tainted_pool_capacity_counts_each_pool_once_for_the_pods_that_reach_it(repo_copy: Path):
    tainted_pattern(repo_copy)
    _, clusters = render_repository(repo_copy)
    prod = next(c for c in clusters if c.name == "prod-eastus2")
    objects = [o for _, o in prod.applied()]
    pools = node_pools(repo_copy, "prod-eastus2")
    by_key = {(fc.flavor, fc.resource): fc for fc in flavor_capacities(objects, pools)}
    cpu = by_key[("default", "cpu")]
    assert [p.name for p in cpu.pools] == ["gpupool", "cpupool"]
    assert cpu.capacity == sum(p.allocatable()["cpu"] for p in cpu.pools) == Decimal("126.42")  # allocatable: 94.94 + 2 x 15.74
    assert cpu.via["azurerm_kubernetes_cluster_node_pool.gpu"] == {"flavor gpu"}  # only GPU pods reach the tainted pool
    assert cpu.via["azurerm_kubernetes_cluster_node_pool.cpu"] == {"alone"}
    assert [p.name for p in by_key[("gpu", "nvidia.com/gpu")].pools] == ["gpupool"]
    # Per pod set, with the flavors Kueue's flavor assigner gives it: the CPU-only head lands on the CPU pool, the GPU
    # workers (flavor gpu's nodeLabels and toleration) on the GPU pool.
    flavors = placement.flavors_of(objects)
    job = workloads.render_entry({"sample": "aurora-finetune", "queue": "team-a"}, repo_copy)[1]
    checker = schema_check.Checker().start()
    try:
        answer = kueue_fit.verdicts(checker, [o for o in objects if o.get("kind") in kueue_fit.QUEUE_KINDS], [(job, "team-a-cq", [])])[0]
    finally:
        checker.close()
    assert answer["mode"] == "Fit", answer
    landed = {ps["name"]: [p.name for p in placement.landing(placement.pod_view(None), tuple(flavors[f] for f in sorted(set(ps["flavors"].values()))), pools)]
              for ps in answer["pod_sets"] if ps["flavors"]}
    assert landed == {"head": ["cpupool"], "gpu-workers": ["gpupool"]}, answer


def test_gpu_node_count_zero_is_one_root_cause(repo_copy: Path):
    edit(repo_copy, PROD_TFVARS, "gpu_node_count = 1", "gpu_node_count = 0")
    report = validate_repository(repo_copy)
    assert len(report.findings) == 1, "\n".join(f.text() for f in report.findings)
    f = report.findings[0]
    assert (f.rule, f.file, f.line) == ("capacity-empty-pool", PROD_TFVARS, line_of(repo_copy, PROD_TFVARS, "gpu_node_count = 0"))
    for part in ("cluster prod-eastus2", "pool gpupool", "gpu_node_count = 0", "flavors default, gpu select no other pool",
                 "cpu quota 94 of flavor default", "nvidia.com/gpu quota 8 of flavor gpu", "sample pods aurora-finetune/head"):
        assert part in f.message, f"{part!r} not in: {f.message}"
    assert "gpu_node_count to 1 or more in " + PROD_TFVARS in f.hint


def test_autoscaling_pool_counts_at_max_count(repo_copy: Path):
    autoscale_gpu_pool(repo_copy, 1, 3)
    gpu = next(p for p in node_pools(repo_copy, "prod-eastus2") if p.name == "gpupool")
    assert (gpu.autoscaled, gpu.min_count, gpu.count) == (True, 1, 3)
    assert gpu.capacity()["nvidia.com/gpu"] == 24 and gpu.allocatable(gpu.min_nodes)["nvidia.com/gpu"] == 8
    assert gpu.count_origin.where() == f"terraform/node_pools.tf:{line_of(repo_copy, 'terraform/node_pools.tf', 'max_count')}"
    assert "1-3 x Standard_ND96amsr_A100_v4, autoscaling" in gpu.where()
    assert not findings(repo_copy)  # quota 8 GPUs is backed by min_count 1 already
    # The v3 spelling is understood as well (and reported, the lock file pins azurerm 4).
    edit(repo_copy, "terraform/node_pools.tf", "auto_scaling_enabled = true", "enable_auto_scaling = true")
    assert next(p for p in node_pools(repo_copy, "prod-eastus2") if p.name == "gpupool").count == 3
    assert {f.rule for f in findings(repo_copy)} == {"capacity-autoscaling"}


def test_cluster_nodes_is_the_pool_model_for_simulated_nodes():
    nodes = {n.pool: n for n in cluster_nodes(REPO_ROOT, "prod-eastus2")}
    gpu, system = nodes["gpupool"], nodes["system"]
    assert (gpu.vm_size, gpu.min_count, gpu.max_count, gpu.system) == ("Standard_ND96amsr_A100_v4", 1, 1, False)
    assert gpu.labels["kubernetes.azure.com/accelerator"] == gpu.labels["accelerator"] == "nvidia" and gpu.labels["agentpool"] == "gpupool" and gpu.taints == []
    assert gpu.allocatable["cpu"] == Decimal("94.94") and gpu.capacity["nvidia.com/gpu"] == 8
    assert system.system and {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"} in system.taints
    assert nodes["cpupool"].max_count == 0  # cpu_node_count defaults to 0: the pool is modelled, with no nodes
    assert gpu.labels["topology.kubernetes.io/zone"] == "0" and gpu.labels["topology.kubernetes.io/region"] == "eastus2"  # no zones


def test_simulated_nodes_carry_the_zones_aks_gives_them(repo_copy: Path):
    """AKS labels a zonal pool's nodes <region>-<zone>, spread over the pool's zones in turn, and a
    pool without zones "0"; the region is the cluster's location (here the resource group's)."""
    edit(repo_copy, PROD_TFVARS, "gpu_node_count = 1", 'gpu_node_count = 4\ngpu_zones = ["3", "1"]')
    edit(repo_copy, PROD_TFVARS, 'location              = "eastus2"', 'location              = "swedencentral"')
    zone = lambda n: (n["metadata"]["labels"]["topology.kubernetes.io/zone"], n["metadata"]["labels"]["topology.kubernetes.io/region"])  # noqa: E731
    nodes = {n["metadata"]["name"]: zone(n) for n in node_objects(cluster_nodes(repo_copy, "prod-eastus2"))}
    assert [v for k, v in sorted(nodes.items()) if "gpupool" in k] == [("swedencentral-1", "swedencentral")] * 2 + [("swedencentral-3", "swedencentral")] * 2
    assert len(nodes) == 6  # 2 system nodes, 4 GPU nodes: every node named once
    assert {v for k, v in nodes.items() if "system" in k} == {("0", "swedencentral")}


def test_a_flavor_per_zone_counts_that_zones_nodes(repo_copy: Path):
    """Flavors per zone (Kueue's documented pattern) against a zonal pool: the gate counts the nodes
    AKS puts in that zone, the same nodes the local cluster simulates."""
    edit(repo_copy, PROD_TFVARS, "gpu_node_count = 1", 'gpu_node_count = 2\ngpu_zones = ["1", "2"]')
    edit(repo_copy, "base/resource-flavors.yaml", "accelerator: nvidia", "accelerator: nvidia\n    topology.kubernetes.io/zone: eastus2-2")
    prod = lambda: [f for f in findings(repo_copy) if f.context == "cluster prod-eastus2"]  # noqa: E731  (dev-westus3 is in another region)
    assert prod() == [], "\n".join(f.text() for f in prod())  # zone 2 has one node: 8 GPUs for the 8 of quota
    edit(repo_copy, "base/resource-flavors.yaml", "zone: eastus2-2", "zone: eastus2-3")
    hits = only(prod(), "capacity-flavor-labels")
    assert "topology.kubernetes.io/zone=eastus2-1" in hits[0].message and "eastus2-3" in hits[0].message, hits[0].message
    assert "listed in the pool's `zones`" in hits[0].hint


def test_scheduler_matching_follows_kubernetes():
    """The answers of component-helpers (through tools/fluxbuild), as the scheduler gives them."""
    taint = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
    tolerates = lambda tol, t=taint, comparison=False: untolerated([t], [tol], comparison) is None  # noqa: E731
    assert tolerates({"key": "sku", "operator": "Exists"})
    assert tolerates({"operator": "Exists"})  # empty key with Exists tolerates everything
    assert not tolerates({"key": "sku", "value": "cpu"})
    assert not tolerates({"key": "sku", "value": "gpu", "effect": "NoExecute"})
    assert untolerated([{"key": "a", "effect": "PreferNoSchedule"}], []) is None
    assert untolerated([taint], []) == taint
    assert not tolerates({"key": "n", "operator": "Gt", "value": "1"}, {"key": "n", "value": "2", "effect": "NoSchedule"})
    assert tolerates({"key": "n", "operator": "Gt", "value": "1"}, {"key": "n", "value": "2", "effect": "NoSchedule"}, comparison=True)
    labels = {"agentpool": "gpupool", "gpus": "8"}
    term = lambda *exprs: {"nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}  # noqa: E731
    assert node_matches(labels, {"agentpool": "gpupool"}, term({"key": "gpus", "operator": "Gt", "values": ["4"]}))
    assert node_matches(labels, {}, term({"key": "zone", "operator": "NotIn", "values": ["1"]}))  # absent key: NotIn matches
    assert not node_matches(labels, {}, term({"key": "zone", "operator": "In", "values": ["1"]}))
    assert not node_matches(labels, {}, {"nodeSelectorTerms": [{}]})  # an empty term matches nothing


SAMPLE_WORKER_SPEC = "            serviceAccountName: ray-workload\n            containers:"

WORKERS_APART = """affinity:
              podAntiAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  - labelSelector: {matchLabels: {ray.io/group: gpu-workers}}
                    topologyKey: kubernetes.io/hostname
"""

# (case id, rule that must fire, file it must name, (text on the line it must name, occurrence), mutation)
CASES = [
    ("cpu-only-pod-too-big-for-cpu-pool", "capacity-pod-fits-node", "workloads/batch-inference.yaml", ('requests: {cpu: "4", memory: 16Gi}', 0),
     lambda r: (tainted_pattern(r), edit(r, PROD_TFVARS, '"Standard_D16ds_v5"', '"Standard_D4ds_v5"'))),
    ("gpu-node-count-zero", "capacity-empty-pool", PROD_TFVARS, ("gpu_node_count = 0", 0),
     lambda r: edit(r, PROD_TFVARS, "gpu_node_count = 1", "gpu_node_count = 0")),
    ("cpu-pool-sized-to-zero", "capacity-empty-pool", "terraform/variables.tf", ("default     = 0", 0),
     lambda r: (edit(r, "base/resource-flavors.yaml", "metadata:\n  name: default\nspec: {}", "metadata:\n  name: default\nspec:\n  nodeLabels: {agentpool: cpupool}"))),
    ("flavor-taint-not-tolerated", "capacity-pod-placement", "base/resource-flavors.yaml", ("nodeTaints:", 0),
     lambda r: taint_gpu_pool(r, tolerate=False)),  # every GPU pod alike: one finding at the flavor's nodeTaints
    ("pod-tolerates-another-taint", "capacity-pod-placement", "workloads/aurora-finetune.yaml", ("template:", 1),
     lambda r: (taint_gpu_pool(r, tolerate=False),
                edit(r, "workloads/aurora-finetune.yaml", SAMPLE_WORKER_SPEC,
                     SAMPLE_WORKER_SPEC.replace("containers:", "tolerations: [{key: sku, value: cpu, effect: NoSchedule}]\n            containers:")))),
    ("pod-selector-matches-no-pool", "capacity-pod-placement", "workloads/aurora-finetune.yaml", ("nodeSelector: {agentpool: gpupol}", 0),
     lambda r: edit(r, "workloads/aurora-finetune.yaml", SAMPLE_WORKER_SPEC, SAMPLE_WORKER_SPEC.replace("containers:", "nodeSelector: {agentpool: gpupol}\n            containers:"))),
    ("autoscaling-v3-attribute", "capacity-autoscaling", "terraform/node_pools.tf", ("enable_auto_scaling", 0),
     lambda r: autoscale_gpu_pool(r, 1, 1, key="enable_auto_scaling")),
    ("autoscaling-min-above-max", "capacity-autoscaling", "terraform/node_pools.tf", ("min_count", 0), lambda r: autoscale_gpu_pool(r, 2, 1)),
    # azurerm's expansion refuses a node_count outside min_count..max_count of an autoscaling pool: at the tfvars line that sets it (dev's 1).
    ("autoscaling-node-count-below-min", "capacity-autoscaling", "terraform/clusters/dev-westus3.tfvars", ("system_node_count", 0),
     lambda r: edit(r, "terraform/aks.tf", "    only_critical_addons_enabled = true\n",
                    "    only_critical_addons_enabled = true\n    auto_scaling_enabled = true\n    min_count = 2\n    max_count = 3\n")),
    ("max-count-without-autoscaling", "capacity-autoscaling", "terraform/node_pools.tf", ("max_count", 0),
     lambda r: edit(r, "terraform/node_pools.tf", "  node_count              = var.gpu_node_count\n",
                    "  node_count              = var.gpu_node_count\n  max_count               = 3\n")),
    # A quota is reported at the component patch line that writes it.
    ("autoscaling-quota-above-max", "capacity-quota", ND96, ('resources/0/nominalQuota, value: "5"}', 0),
     lambda r: (autoscale_gpu_pool(r, 1, 1), edit(r, ND96, '/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "4"}',
                                                  '/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "5"}'))),
    ("autoscaling-scale-up", "capacity-scale-up", "terraform/node_pools.tf", ("min_count", 0), lambda r: autoscale_gpu_pool(r, 0, 1)),
    ("two-flavors-claim-one-pool", "capacity-quota", ND96, ('value: "60"}', 0),
     lambda r: (append(r, "base/resource-flavors.yaml", "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: default-b\nspec: {}\n"),
                edit(r, "overlays/team-queues/team-b.yaml", "        - name: default\n", "        - name: default-b\n"),
                edit(r, ND96, 'flavors/0/resources/0/nominalQuota, value: "47"}', 'flavors/0/resources/0/nominalQuota, value: "60"}'))),
    # Each pod set alone fits; kube-scheduler's own plugins place the job's pods together: 4 workers that must not share a
    # node, on prod-eastus2's one GPU node, leave 3 Pending (the real scheduler agrees: tests/integration/test_samples_on_nodes.py).
    ("workers-anti-affine-on-one-gpu-node", "capacity-pods-scheduled", "workloads/llm-training.yaml", ("        template:", 0),
     lambda r: edit(r, "workloads/llm-training.yaml", SAMPLE_WORKER_SPEC, SAMPLE_WORKER_SPEC.replace("containers:", WORKERS_APART + "            containers:"))),
    # The namespace's LimitRange gives the submitter (no requests of its own) 30 CPU, more than a 24-vCPU node has. Kueue
    # charges it too (AdjustResources), so dev-westus3's CPU quota is raised for Kueue to admit the job (else sample-fits).
    ("limit-range-default-outgrows-the-node", "capacity-pod-fits-node", "workloads/batch-inference.yaml", ("  submitterPodTemplate:", 0),
     lambda r: (write(r, "base/limit-range.yaml", "apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: ray}\n"
                      "spec:\n  limits:\n    - {type: Container, defaultRequest: {cpu: \"30\"}, default: {cpu: \"30\"}}\n"),
                edit(r, "base/kustomization.yaml", "resources:\n", "resources:\n  - limit-range.yaml\n"),
                edit(r, NC24, 'resources/0/nominalQuota, value: "23"}', 'resources/0/nominalQuota, value: "96"}'))),
    # A resource no pool's nodes offer (AKS pre-allocates no huge pages; Kueue told to ignore it): at the request, not the template.
    ("resource-no-node-offers", "capacity-pod-fits-node", "workloads/llm-training.yaml", ("hugepages-2Mi: 2Gi}", 0),
     lambda r: (edit(r, "workloads/llm-training.yaml", 'requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1"}',
                     'requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1", hugepages-2Mi: 2Gi}'),
                edit(r, "workloads/llm-training.yaml", 'limits: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1"}',
                     'limits: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1", hugepages-2Mi: 2Gi}'),
                edit(r, "flux/infrastructure/controllers/kueue.yaml", "        integrations:\n",
                     "        resources:\n          excludeResourcePrefixes: [hugepages-]\n        integrations:\n"))),
    # A Windows pool beside the Linux ones: AKS labels it kubernetes.io/os=windows and taints nothing, so the heads may go there.
    ("windows-pool-beside-linux-pods", "capacity-pod-os", "workloads/batch-inference.yaml", ("  template:", 0),
     lambda r: append(r, "terraform/node_pools.tf", '\nresource "azurerm_kubernetes_cluster_node_pool" "win" {\n  name = "win"\n'
                      '  kubernetes_cluster_id = azurerm_kubernetes_cluster.this.id\n  vm_size = "Standard_D8ds_v6"\n  node_count = 1\n'
                      '  os_type = "Windows"\n}\n')),
    # Quota for two GPU workers (else Kueue never admits the job, sample-fits, and where its pods land is not reported), one GPU node.
    ("pod-set-more-pods-than-nodes", "capacity-pod-set-nodes", "clusters/dev-westus3/samples.yaml", ('NUM_WORKERS: "2"', 0),
     lambda r: (edit(r, "clusters/dev-westus3/samples.yaml", 'NUM_WORKERS: "1"', 'NUM_WORKERS: "2"'),
                [edit(r, NC24, f"{path}, value: {old}}}", f"{path}, value: {new}}}") for path, old, new in (
                    ("resources/0/nominalQuota", '"23"', '"46"'), ("resources/1/nominalQuota", "200Gi", "400Gi"),
                    ("/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota", '"1"', '"2"'))])),
]


def append(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.write_text(path.read_text() + text)


# node_settings.py's rules (the Spot-only settings azurerm refuses on a Regular pool), checked by the same test.
NODE_SETTING_CASES = [
    ("eviction-policy-on-a-regular-pool", "capacity-node-settings", "terraform/node_pools.tf", ('eviction_policy = "Delete"', 0),
     lambda r: edit(r, "terraform/node_pools.tf", "  node_taints = []\n", '  node_taints = []\n  priority    = "Regular"\n  eviction_policy = "Delete"\n')),
    ("spot-max-price-on-an-unset-priority-pool", "capacity-node-settings", "terraform/node_pools.tf", ("spot_max_price = 0.5", 0),
     lambda r: edit(r, "terraform/node_pools.tf", "  node_taints = []\n", "  node_taints = []\n  spot_max_price = 0.5\n")),
]


@pytest.mark.parametrize("case,rule,file,marker,mutate", CASES + NODE_SETTING_CASES, ids=[c[0] for c in CASES + NODE_SETTING_CASES])
def test_broken_capacity_fails_with_its_rule(repo_copy, case, rule, file, marker, mutate):
    mutate(repo_copy)
    report = validate_repository(repo_copy)
    fired = [f for f in report.findings if f.rule == rule]
    assert fired, f"{case}: expected rule {rule}, got:\n" + "\n".join(f.text() for f in report.findings)
    line = line_of(repo_copy, file, *marker)
    assert any((f.file, f.line) == (file, line) for f in fired), f"{case}: {rule} should name {file}:{line}:\n" + "\n".join(f.text() for f in fired)
    for f in fired:
        assert f.message and f.hint and "/tmp/" not in f.message, f"{case}: {f}"
    if rule == "capacity-scale-up":
        assert all(f.severity == "warning" for f in report.findings), "\n".join(f.text() for f in report.findings)


def test_every_capacity_rule_has_a_case():
    covered = {c[1] for c in CASES} | {"capacity-terraform", "capacity-unknown-sku", "capacity-flavor-labels"}  # tested above
    assert covered == set(capacity.RULES)


def test_every_scenario_runs_on_nodes_that_hold_its_quota():
    """Every behavioural scenario names the cluster whose pool nodes its pods run on, and those
    nodes hold the GPUs its layout's ClusterQueues promise (else the scenario's admitted jobs
    would stay Pending and the checker's bound-pod invariant fail for the wrong reason)."""
    from harness.gate import build_directory
    from harness.kueue.scenarios import SCENARIOS

    for sc in SCENARIOS:
        assert sc.cluster, f"scenario {sc.name} names no cluster: its pods would have no nodes"
        quota = sum((parse_quantity(r["nominalQuota"]) for o in build_directory(REPO_ROOT, sc.layout) if o["kind"] == "ClusterQueue"
                     for g in o["spec"]["resourceGroups"] for f in g["flavors"] for r in f["resources"] if r["name"] == "nvidia.com/gpu"),
                    Decimal(0))
        gpus = sum((n.allocatable.get("nvidia.com/gpu", 0) * n.max_count for n in cluster_nodes(REPO_ROOT, sc.cluster)), Decimal(0))
        assert quota > 0 and gpus >= quota, f"scenario {sc.name}: {sc.layout} promises {quota} GPUs, {sc.cluster}'s nodes hold {gpus}"


def test_gpu_driver_none_with_the_gpu_operator_is_clean(repo_copy: Path):
    """Bring-your-own driver (gpu_driver = "None") is the documented AKS path for the NVIDIA GPU
    Operator: with its HelmRelease in the cluster's infrastructure layer, no finding."""
    tfvars = repo_copy / "terraform/clusters/prod-eastus2.tfvars"
    tfvars.write_text(tfvars.read_text() + 'gpu_driver = "None"\n')
    controllers = repo_copy / "flux/infrastructure/controllers"
    (controllers / "gpu-operator.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu-operator\n---\n"
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: nvidia\n  namespace: flux-system\n"
        "spec:\n  interval: 24h\n  url: https://helm.ngc.nvidia.com/nvidia\n---\n"
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gpu-operator\n  namespace: flux-system\n"
        "spec:\n  targetNamespace: gpu-operator\n  interval: 12h\n  chart:\n    spec:\n      chart: gpu-operator\n      version: v25.3.0\n"
        "      sourceRef:\n        kind: HelmRepository\n        name: nvidia\n  values:\n    driver:\n      enabled: true\n")
    k = controllers / "kustomization.yaml"
    k.write_text(k.read_text() + "  - gpu-operator.yaml\n")
    report = validate_repository(repo_copy)
    assert not [f for f in report.findings if f.rule == "capacity-gpu-driver" or f.is_error], [f.text() for f in report.findings]


@pytest.mark.parametrize("request_gib,os_disk,placed", [(5, None, True), (200, None, False), (200, 512, True)])
def test_ephemeral_storage_is_the_os_disk(repo_copy: Path, request_gib, os_disk, placed):
    """A node's ephemeral-storage is its OS disk (AKS's 128 GB unless os_disk_size_gb says otherwise), 90% of it
    allocatable (the kubelet's nodefs.available<10% eviction). The manager's config excludes the resource from
    quota, so only where the pods land is judged."""
    edit(repo_copy, "flux/infrastructure/controllers/kueue.yaml", "        featureGates:\n",
         "        resources:\n          excludeResourcePrefixes: [ephemeral-storage]\n        featureGates:\n")
    edit(repo_copy, "workloads/batch-inference.yaml", 'requests: {cpu: "12", memory: 80Gi, nvidia.com/gpu: "1"}',
         f'requests: {{cpu: "12", memory: 80Gi, nvidia.com/gpu: "1", ephemeral-storage: {request_gib}Gi}}')
    if os_disk:
        edit(repo_copy, "terraform/node_pools.tf", "  max_pods                = var.max_pods\n",
             f"  max_pods                = var.max_pods\n  os_disk_size_gb         = {os_disk}\n")
    found = validate_repository(repo_copy).findings
    if placed:
        assert found == [], "\n".join(f.text() for f in found)
    else:
        assert {f.rule for f in found} == {"capacity-pod-fits-node"} and all("os_disk_size_gb" in f.hint for f in found), \
            "\n".join(f.text() for f in found)


@pytest.mark.parametrize("selector,placed", [
    ("{kubernetes.io/arch: amd64, beta.kubernetes.io/os: linux, kubernetes.azure.com/role: agent, kubernetes.azure.com/os-sku: Ubuntu}", True),
    ("{kubernetes.io/arch: arm64}", False),
], ids=["labels-every-node-has", "another-architecture"])
def test_labels_the_kubelet_and_aks_put_on_every_node_place_pods(repo_copy: Path, selector, placed):
    """The kubelet labels each node with its os and arch (x86-64 sizes: amd64), AKS with its role and OS image family:
    a pod that selects them lands wherever it would without them; one that selects another architecture lands nowhere."""
    edit(repo_copy, "workloads/aurora-finetune.yaml", SAMPLE_WORKER_SPEC,
         SAMPLE_WORKER_SPEC.replace("containers:", f"nodeSelector: {selector}\n            containers:"))
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("capacity")]
    if placed:
        assert found == [], found
    else:
        assert found and all(f.rule == "capacity-pod-placement" and "kubernetes.io/arch=arm64" in f.message for f in found), found


@pytest.mark.parametrize("quota,flagged", [("0", False), ("1", True)])
def test_a_flavor_staged_at_zero_quota_for_a_pool_not_there_yet_is_clean(repo_copy: Path, quota, flagged):
    """A flavor for a pool to come, listed at nominalQuota 0: Kueue admits nothing to it, so no pod can pend on it; with
    quota it selects no pool and is the root cause of pods that would pend."""
    (repo_copy / "base/resource-flavors.yaml").write_text((repo_copy / "base/resource-flavors.yaml").read_text()
                                                          + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                                                            "metadata:\n  name: h100\nspec:\n  nodeLabels:\n    agentpool: h100pool\n")
    edit(repo_copy, "overlays/single-queue/cluster-queue.yaml", '              nominalQuota: "0"     # set by components/gpu-sku\n---',
         '              nominalQuota: "0"     # set by components/gpu-sku\n        - name: h100\n          resources:\n'
         f'            - name: nvidia.com/gpu\n              nominalQuota: "{quota}"\n---')
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("capacity")]
    assert [f.rule for f in found] == (["capacity-flavor-labels"] if flagged else []), [f.text() for f in found]


def test_a_tfvars_json_file_is_read_as_its_tfvars(repo_copy: Path):
    """terraform/clusters/<name>.tfvars.json (Terraform reads it with -var-file as JSON): the cluster's pools come from it,
    and a finding names its line."""
    import json

    (repo_copy / PROD_TFVARS).unlink()
    values = {"cluster_name": "prod-eastus2", "location": "eastus2", "gpu_vm_size": "Standard_ND96amsr_A100_v4",
              "gpu_node_count": 1, "gpu_sku_label": "a100", "tags": {"environment": "prod"}}
    json_rel = PROD_TFVARS + ".json"
    (repo_copy / json_rel).write_text(json.dumps(values, indent=2) + "\n")
    found = findings(repo_copy)
    assert not found, [f.text() for f in found]
    (repo_copy / json_rel).write_text(json.dumps({**values, "gpu_node_count": 0}, indent=2) + "\n")
    hits = only(findings(repo_copy), "capacity-empty-pool")
    assert [(f.file, f.line) for f in hits] == [(json_rel, line_of(repo_copy, json_rel, '"gpu_node_count"'))], [f.text() for f in hits]


def test_an_empty_pool_whose_count_all_clusters_share_is_one_finding(repo_copy: Path):
    """The CPU pool's default node count (terraform/variables.tf) is each cluster's: one finding there, naming both."""
    edit(repo_copy, "base/resource-flavors.yaml", "metadata:\n  name: default\nspec: {}", "metadata:\n  name: default\nspec:\n  nodeLabels: {agentpool: cpupool}")
    hits = only(findings(repo_copy), "capacity-empty-pool")
    assert [(f.file, f.line) for f in hits] == [("terraform/variables.tf", line_of(repo_copy, "terraform/variables.tf", "default     = 0"))], \
        [f.text() for f in hits]
    assert "dev-westus3" in hits[0].message and "prod-eastus2" in hits[0].message


def test_gpu_driver_none_on_a_zonal_pool_is_one_finding(repo_copy: Path):
    tfvars = repo_copy / PROD_TFVARS
    tfvars.write_text(tfvars.read_text().replace("gpu_node_count = 1", "gpu_node_count = 2") + 'gpu_driver = "None"\ngpu_zones = ["1", "2"]\n')
    hits = only(findings(repo_copy), "capacity-gpu-driver")
    assert [(f.file, f.line) for f in hits] == [(PROD_TFVARS, line_of(repo_copy, PROD_TFVARS, "gpu_driver"))], [f.text() for f in hits]
