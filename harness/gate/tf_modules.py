"""The module calls of terraform/ (`module "x" { source = ... }`), as tools/tfeval reports them from Terraform's own
loader (`TerraformConfig.modules`: name, source, file, line, local, read, loaded, the resource types a loaded module
declares and what its arguments refer to). tfeval reads the resources of a local module called once (no count /
for_each) that calls no module itself, with the call's arguments as its inputs (tflint's NewModuleRunners): they are
resources like the root's, addressed module.<name>.<type>.<name>, whose settings trace through the call's arguments to
the root variables (the tfvars line). Every other module call is not read, so:

- `terraform-module-unread` (a warning) at every module block whose resources are not read;
- `pool_modules(cfg)`: the unread calls that may create node pools of the cluster: a module Terraform's loader read
  (a local one) that declares azurerm_kubernetes_cluster_node_pool or azurerm_kubernetes_cluster (its calls' too), or
  one it could not read (registry, git: not installed offline) whose arguments refer to an AKS cluster (a resource, a
  data source, or another such module). harness.gate.pools.cluster_pools refuses to model a cluster's pools then, so
  that the rules needing every pool (capacity-*, operator placement, TAS nodes, node subnets) claim nothing.
"""
from __future__ import annotations

from harness.gate.findings import Finding
from harness.gate.terraform import TERRAFORM_DIR, TerraformConfig, TerraformError

RULE = "terraform-module-unread"
POOL_TYPES = ("azurerm_kubernetes_cluster_node_pool", "azurerm_kubernetes_cluster")
CLUSTER_REFS = ("azurerm_kubernetes_cluster.", "azurerm_kubernetes_cluster_node_pool.", "data.azurerm_kubernetes_cluster.")
POOL_RULES = "capacity-*, operator placement, Kueue's topology-aware nodes, terraform-node-subnet"

RULES = {
    RULE: f"(warning) a module block of {TERRAFORM_DIR}/ whose resources the gate does not read (it reads the root module's and those "
          "of a local module called once without count/for_each that calls no module itself); "
          "when the module may create the cluster's node pools (a local module declaring azurerm_kubernetes_cluster_node_pool, "
          "or a registry/git module given the cluster), the checks that need every node pool are skipped rather than judged "
          "on the pools of the root module alone",
}


def _address(call: dict) -> str:
    return f"module.{call['name']}"


def pool_modules(cfg: TerraformConfig) -> list[dict]:
    """The unread module calls that may create node pools of the cluster, in the order tfeval gives them."""
    unread = [c for c in cfg.modules if not c.get("read")]
    holds = {c["name"] for c in unread if c.get("loaded") and set(c.get("types") or ()) & set(POOL_TYPES)}
    changed = True
    while changed:  # a module not loaded, given the cluster or a module that may hold it
        changed = False
        for c in unread:
            if c["name"] not in holds and not c.get("loaded") and any(
                    r.startswith(CLUSTER_REFS) or r.removeprefix("module.") in holds for r in c.get("refs") or ()):
                holds.add(c["name"])
                changed = True
    return [c for c in unread if c["name"] in holds]


class UnreadPools(TerraformError):
    """The cluster's node pools cannot be modelled: a module the gate does not read may create some. `diagnostic`: another
    rule (terraform-module-unread) reports it, so the pool rules' callers stay silent (as for Terraform's own errors)."""
    diagnostic = True


def require_read(cfg: TerraformConfig) -> None:
    """UnreadPools (at the first such module block) when an unread module may create node pools of the cluster."""
    held = pool_modules(cfg)
    if held:
        where = ", ".join(f"{_address(c)} ({c['file']}:{c.get('line')})" for c in held)
        raise UnreadPools(f"the node pools are incomplete: {where} may create node pools, and the gate reads {TERRAFORM_DIR}/'s root "
                          "module only", held[0]["file"], held[0]["line"])


def unread_findings(cfg: TerraformConfig) -> list[Finding]:
    """terraform-module-unread: one warning at each module block whose resources the gate does not read."""
    pools = {c["name"] for c in pool_modules(cfg)}
    out = []
    for c in cfg.modules:
        if c.get("read"):
            continue
        source = c.get("source") or "a source that does not evaluate"
        kind = "a local module" if c.get("local") else "not a local module (registry or git: not installed offline)"
        types = ", ".join(c.get("types") or ()) if c.get("loaded") else ""
        declared = f"the resources it declares ({types})" if types else "its resources"
        if c["name"] in pools:
            why = ("declares node pools of the cluster" if c.get("loaded") else
                   "is given the AKS cluster (" + ", ".join(r for r in c.get("refs") or () if r.startswith((*CLUSTER_REFS, "module."))) + ")")
            message = (f"{_address(c)} (source {source!r}, {kind}) is not read by the gate: {declared} are not checked, and since it "
                       f"{why}, the node pools of every cluster are incomplete without it, so the checks that need every pool "
                       f"({POOL_RULES}) are skipped")
            hint = (f"declare the node pools in {TERRAFORM_DIR}/ itself (resource \"azurerm_kubernetes_cluster_node_pool\" in the root "
                    "module, with the values the module call passes), where the gate reads and checks them against the queues")
        else:
            message = (f"{_address(c)} (source {source!r}, {kind}) is not read by the gate: {declared} are not checked "
                       "(no node pools of the cluster are expected in it, so the capacity checks still run)")
            hint = (f"nothing to fix if it creates no node pools or Flux objects of the clusters: disable {RULE} for "
                    f"{c['file']} in .ray-kueue-gate.yaml (`disable:` with a reason); otherwise declare those in {TERRAFORM_DIR}/ itself")
        out.append(Finding(c["file"], c.get("line"), _address(c), RULE, message, hint, severity="warning"))
    return out
