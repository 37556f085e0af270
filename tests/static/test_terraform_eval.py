"""terraform/ evaluated by Terraform's evaluator (tools/tfeval through harness.gate.terraform) on the
cases the hand-written evaluator it replaced got wrong: `!` inside a string literal, function calls,
for_each, conditionals, autoscaling min/max; each value with the file and line where it is written.
Terraform's errors come back as diagnostics with file:line, never as a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.gate.pools import PoolSettingError, cluster_pools
from harness.gate.terraform import TerraformConfig, TerraformError, load_tfvars

pytestmark = pytest.mark.static

VERSIONS = """terraform {
  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "~> 4.0"
    }
  }
}
"""

CLUSTER = """resource "azurerm_kubernetes_cluster" "this" {
  name = var.cluster_name
  default_node_pool {
    name       = "system"
    vm_size    = coalesce(var.system_vm_size, "Standard_D4ds_v6")
    node_count = max(var.system_nodes, 2)
  }
}
"""

VARIABLES = """variable "cluster_name" {
  type = string
}

variable "env" {
  type    = string
  default = "dev"
}

variable "system_vm_size" {
  type    = string
  default = null
}

variable "system_nodes" {
  type    = number
  default = 1
}

variable "pools" {
  type = map(object({ vm_size = string, nodes = number }))
  default = {
    a100 = { vm_size = "Standard_NC24ads_A100_v4", nodes = 2 }
    d8   = { vm_size = "Standard_D8ds_v6", nodes = 3 }
  }
}

variable "gpu_enabled" {
  type    = bool
  default = true
}

variable "settings" {
  type    = any
  default = {}
}
"""

POOLS = """resource "azurerm_kubernetes_cluster_node_pool" "gpu" {
  count = var.gpu_enabled ? 1 : 0

  name                  = lookup({ dev = "gpudev" }, var.env, "gpupool")
  kubernetes_cluster_id = azurerm_kubernetes_cluster.this.id
  vm_size               = "Standard_NC24ads_A100_v4"
  auto_scaling_enabled  = true
  min_count             = var.env == "prod" ? 2 : 1
  max_count             = try(var.settings.gpu_max, 4)
  max_pods              = try(var.settings.max_pods, 110)
  node_labels           = { note = var.env != "prod" ? "not-prod!" : "prod!" }
  node_taints           = var.env == "prod" ? ["sku=gpu:NoSchedule"] : []
}

resource "azurerm_kubernetes_cluster_node_pool" "extra" {
  for_each = var.pools

  name                  = each.key
  kubernetes_cluster_id = azurerm_kubernetes_cluster.this.id
  vm_size               = each.value.vm_size
  node_count            = each.value.nodes
  zones                 = [for z in range(1, 3) : tostring(z)]
}
"""


def line(root: Path, rel: str, marker: str) -> int:
    hits = [i + 1 for i, text in enumerate((root / rel).read_text().splitlines()) if marker in text]
    assert hits, f"{marker!r} not in {rel}"
    return hits[0]


@pytest.fixture
def module(tmp_path: Path) -> Path:
    tf = tmp_path / "terraform"
    (tf / "clusters").mkdir(parents=True)
    for name, text in (("versions.tf", VERSIONS), ("aks.tf", CLUSTER), ("variables.tf", VARIABLES), ("node_pools.tf", POOLS)):
        (tf / name).write_text(text)
    (tf / "clusters/prod.tfvars").write_text('cluster_name = "prod"\nenv          = "prod"\nsettings     = { gpu_max = 6 }\n')
    return tmp_path


def pools_of(root: Path, tfvars: str | None = None):
    cfg = TerraformConfig.load(root)
    rel = f"terraform/clusters/{tfvars}.tfvars" if tfvars else None
    return {p.name: p for p in cluster_pools(cfg, load_tfvars(root / rel, root) if rel else {}, rel)}


def test_bang_inside_a_string_literal_and_conditionals(module: Path):
    dev = pools_of(module)["gpudev"]
    assert dev.labels["note"] == "not-prod!" and dev.taints == []
    prod = pools_of(module, "prod")["gpupool"]
    assert prod.labels["note"] == "prod!" and prod.taints == ["sku=gpu:NoSchedule"]
    gpu = next(b for b in TerraformConfig.load(module).of_type("azurerm_kubernetes_cluster_node_pool") if b.name == "gpu")
    labels = gpu.body.get("node_labels")
    assert (labels.value, labels.file, labels.line) == ({"note": "not-prod!"}, "terraform/node_pools.tf", line(module, "terraform/node_pools.tf", "node_labels"))


def test_function_calls(module: Path):
    pools = pools_of(module)
    system = pools["system"]
    assert (system.vm_size, system.count) == ("Standard_D4ds_v6", 2)  # coalesce(null, ...), max(1, 2)
    # computed from a variable, not the variable itself: the finding names the expression
    assert system.count_origin.where() == f"terraform/aks.tf:{line(module, 'terraform/aks.tf', 'node_count')}"
    assert system.count_origin.text == "node_count = max(var.system_nodes, 2)"
    assert pools["gpudev"].max_pods == 110  # try() falls back
    extra = next(b for b in TerraformConfig.load(module).of_type("azurerm_kubernetes_cluster_node_pool") if b.name == "extra")
    assert extra.body.get("zones").value == ["1", "2"]


def test_for_each_pools(module: Path):
    pools = pools_of(module)
    a100, d8 = pools["a100"], pools["d8"]
    assert (a100.vm_size, a100.count, a100.address) == ("Standard_NC24ads_A100_v4", 2, 'azurerm_kubernetes_cluster_node_pool.extra["a100"]')
    assert (d8.vm_size, d8.count) == ("Standard_D8ds_v6", 3)
    assert a100.labels["kubernetes.azure.com/accelerator"] == a100.labels["accelerator"] == "nvidia" and "kubernetes.azure.com/accelerator" not in d8.labels
    assert a100.count_origin.where() == f"terraform/node_pools.tf:{line(module, 'terraform/node_pools.tf', 'each.value.nodes')}"


def test_autoscaling_min_and_max(module: Path):
    dev = pools_of(module)["gpudev"]
    assert (dev.autoscaled, dev.min_count, dev.count) == (True, 1, 4)
    prod = pools_of(module, "prod")["gpupool"]
    assert (prod.min_count, prod.count) == (2, 6)  # the conditional, and try() reading the tfvars object
    assert prod.min_origin.where() == f"terraform/node_pools.tf:{line(module, 'terraform/node_pools.tf', 'min_count')}"
    assert prod.count_origin.where() == f"terraform/node_pools.tf:{line(module, 'terraform/node_pools.tf', 'max_count')}"


def test_count_zero_keeps_the_pool_with_no_nodes_and_names_the_setting(module: Path):
    (module / "terraform/clusters/nogpu.tfvars").write_text('cluster_name = "x"\ngpu_enabled  = false\n')
    gpu = pools_of(module, "nogpu")["gpudev"]
    assert gpu.count == 0 and gpu.min_count == 0
    assert gpu.count_origin.where() == "terraform/clusters/nogpu.tfvars:2"
    assert gpu.count_origin.text == "gpu_enabled = False"


def test_value_known_only_after_apply_is_not_guessed(module: Path):
    path = module / "terraform/node_pools.tf"
    path.write_text(path.read_text().replace('vm_size               = "Standard_NC24ads_A100_v4"',
                                             "vm_size               = azurerm_kubernetes_cluster.this.default_node_pool[0].vm_size"))
    with pytest.raises(PoolSettingError) as err:
        pools_of(module)
    assert "not known before apply" in str(err.value) and "azurerm_kubernetes_cluster.this is known only after apply" in str(err.value)
    assert (err.value.file, err.value.line) == ("terraform/node_pools.tf", line(module, "terraform/node_pools.tf", "vm_size  "))


@pytest.mark.parametrize("old,new,summary", [
    ("max(var.system_nodes, 2)", "max(var.system_node, 2)", "Reference to undeclared input variable"),
    ("coalesce(var.system_vm_size", "coalesced(var.system_vm_size", "Call to unknown function"),
    ("max(var.system_nodes, 2)", 'max(var.system_nodes, "two")', "Invalid function argument"),
])
def test_terraform_errors_are_diagnostics_with_file_and_line(module: Path, old, new, summary):
    path = module / "terraform/aks.tf"
    path.write_text(path.read_text().replace(old, new))
    errors = TerraformConfig.load(module).defaults.errors()
    assert [(d.summary, d.file, d.line) for d in errors] == [(summary, "terraform/aks.tf", line(module, "terraform/aks.tf", new))]
    with pytest.raises(PoolSettingError) as err:
        pools_of(module)
    assert err.value.diagnostic and (err.value.file, err.value.line) == ("terraform/aks.tf", line(module, "terraform/aks.tf", new))


def test_syntax_error_names_file_and_line(module: Path):
    with (module / "terraform/aks.tf").open("a") as f:
        f.write('\nresource "azurerm_resource_group" "broken" {\n  name = "x\n}\n')
    with pytest.raises(TerraformError) as err:
        TerraformConfig.load(module)
    assert err.value.file == "terraform/aks.tf" and err.value.line == line(module, "terraform/aks.tf", 'name = "x')


def test_tfvars_value_of_the_wrong_type_and_failed_validation(module: Path):
    path = module / "terraform/variables.tf"
    path.write_text(path.read_text().replace('variable "env" {\n  type    = string\n  default = "dev"\n',
                                             'variable "env" {\n  type    = string\n  default = "dev"\n  validation {\n'
                                             '    condition     = contains(["dev", "prod"], var.env)\n    error_message = "env must be dev or prod."\n  }\n'))
    (module / "terraform/clusters/bad.tfvars").write_text('cluster_name = "x"\nenv          = "stage"\nsystem_nodes = "many"\n')
    ev = TerraformConfig.load(module).evaluate(load_tfvars(module / "terraform/clusters/bad.tfvars", module))
    found = {(d.summary, d.file, d.line) for d in ev.errors()}
    assert found == {("Invalid value for variable", "terraform/clusters/bad.tfvars", 2),
                     ("Invalid value for input variable", "terraform/clusters/bad.tfvars", 3)}
    assert any("env must be dev or prod." in d.detail for d in ev.errors())


def test_tfvars_lines_and_literal_values(module: Path):
    tfvars = load_tfvars(module / "terraform/clusters/prod.tfvars", module)
    assert tfvars == {"cluster_name": "prod", "env": "prod", "settings": {"gpu_max": 6}}
    assert tfvars.lines == {"cluster_name": 1, "env": 2, "settings": 3}
    (module / "terraform/clusters/ref.tfvars").write_text('cluster_name = var.other\n')
    with pytest.raises(TerraformError) as err:
        load_tfvars(module / "terraform/clusters/ref.tfvars", module)
    assert (err.value.file, err.value.line) == ("terraform/clusters/ref.tfvars", 1)


def test_read_ahead_answers_wait_for_the_rules_and_nothing_is_asked_twice(module: Path, monkeypatch):
    """terraform.start(root) asks tfeval ahead for the module and each cluster's tfvars while the gate reads its sources;
    the rules' own questions then take those answers (or wait for the one on its way) instead of asking again."""
    from harness.gate import terraform

    terraform.helper.cache_clear()  # a helper of this test's own, with an empty cache
    asked: list[str] = []
    helper = terraform.helper()
    real = helper.process.request
    monkeypatch.setattr(helper.process, "request", lambda req: asked.append(json.dumps(req, sort_keys=True)) or real(req))
    try:
        terraform.start(module)
        cfg = TerraformConfig.load(module)
        tfvars = sorted((module / "terraform" / "clusters").glob("*.tfvars"))
        assert tfvars, "the module fixture has cluster tfvars"
        evaluations = [cfg.evaluate(load_tfvars(p, module)) for p in tfvars]
        assert all(ev.resources for ev in evaluations)
        expected = 1 + 2 * len(tfvars)  # the module, then per cluster its tfvars and the module with them
        assert len(asked) == expected and len(set(asked)) == expected, asked
    finally:
        helper.process.close()
        terraform.helper.cache_clear()
