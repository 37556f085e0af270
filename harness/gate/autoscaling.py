"""A node pool's autoscaling settings as azurerm 4.x and AKS take them: capacity-autoscaling's notes on a Pool
(harness.gate.pools builds the pools; these functions read the settings of one pool for it).

What refuses what (azurerm's source, internal/services/containers/):
- the default pool (azurerm_kubernetes_cluster's default_node_pool; kubernetes_nodepool.go, the expansion's
  `if enableAutoScaling` block): min_count and max_count must be above 0 ("`min_count` must be configured when
  `auto_scaling_enabled` is set to `true`"), a node_count written (0 counts as unset: min_count) within them on create
  ("`node_count`(N) must be equal to or greater than `min_count`(M) ..."), and "`max_count` must be >= `min_count`";
- azurerm_kubernetes_cluster_node_pool (kubernetes_cluster_node_pool_resource.go, resourceKubernetesClusterNodePoolCreate):
  only "`max_count` must be >= `min_count`" and both configured; min_count 0 is a user pool scaling to zero. A node_count
  outside the range (or min_count 0 on a pool in System mode) is refused by the AKS resource provider on create
  ("agentPoolProfile.count was N. It must be greater or equal to minCount:M and less than or equal to maxCount:K. If
  allowedMinCount was expected to be 0 but is 1: ... 3) The node is a system pool.").
One cause gives one note: min_count above max_count is reported with the values written, and nothing else is judged then.
"""
from __future__ import annotations

AUTOSCALING_KEYS = {"auto_scaling_enabled": 4, "enable_auto_scaling": 3}  # attribute -> azurerm major version that spells it so
AKS_RP = "the AKS resource provider refuses it on create"


def check_spelling(builder, pool, block, body, key: str | None) -> None:
    """A note when the autoscaling switch is spelled as another azurerm major version than the pinned one spells it."""
    if key is None or builder.major is None or AUTOSCALING_KEYS[key] == builder.major:
        return
    pool.notes.append((body.get(key).file, body.get(key).line,
                       f"{block.address}: `{key}` is the azurerm v{AUTOSCALING_KEYS[key]} name, but the provider is {builder.provider} "
                       f"(terraform/.terraform.lock.hcl, terraform/versions.tf), so `terraform plan` rejects it; read as the autoscaling switch here",
                       f"rename it to `{builder.switch}`" if builder.major in AUTOSCALING_KEYS.values() else "use the autoscaling attribute of the pinned azurerm version"))


def autoscaling(builder, pool, block, body, key: str) -> None:
    """Sets the pool's min_count and count (max_count) with where they are written, and notes what azurerm or AKS refuses."""
    default = block.type == "azurerm_kubernetes_cluster"  # its default_node_pool
    missing = [k for k in ("min_count", "max_count") if builder.value(block, body.get(k), k) is None]
    if missing:
        pool.notes.append((body.get(key).file, body.get(key).line,
                           f"{block.address}: {key} = true without {' and '.join(missing)}; azurerm requires both for an autoscaling pool",
                           "set min_count and max_count (the node range the autoscaler may use)"))
    lo, hi = ("node_count" if "min_count" in missing else "min_count"), ("node_count" if "max_count" in missing else "max_count")
    pool.min_count, pool.count = builder.number(block, body.get(lo), lo, 1), builder.number(block, body.get(hi), hi, 1)
    pool.min_origin, pool.count_origin = builder.origin(block, lo, body.get(lo), 1), builder.origin(block, hi, body.get(hi), 1)
    low, high = pool.min_origin, pool.count_origin
    if pool.min_count > pool.count:
        pool.notes.append((low.file, low.line, f"{block.address}: min_count {pool.min_count} ({low.text} at {low.where()}) is above max_count "
                           f"{pool.count} ({high.text} at {high.where()}); azurerm refuses it (\"`max_count` must be >= `min_count`\")",
                           f"set {low.name} to at most {pool.count}, or raise {high.name} to {pool.min_count} or more"))
        pool.min_count = pool.count  # counted in the range azurerm would need; the note above is the one finding
        return
    zero = [(k, o) for k, o, n in (("min_count", low, pool.min_count), ("max_count", high, pool.count)) if n == 0 and k not in missing]
    if zero and (default or (pool.system and zero[0][0] == "min_count")):
        name, at = zero[0]
        why = (f"azurerm refuses it for the default pool (\"`{name}` must be configured when `auto_scaling_enabled` is set to `true`\": 0 is not "
               "configured)" if default else f"{AKS_RP} for a System-mode pool (\"If allowedMinCount was expected to be 0 but is 1: ... The node "
                                              "is a system pool\")")
        pool.notes.append((at.file, at.line, f"{block.address}: {name} 0 ({at.text}) on {'the default (system) pool' if default else 'a System-mode pool'}; "
                           f"{why}", f"set {at.name} to 1 or more (a system pool keeps at least one node; to scale to zero, use a "
                           "User-mode azurerm_kubernetes_cluster_node_pool)"))
        return
    node_count = builder.value(block, body.get("node_count"), "node_count") if "node_count" not in (lo, hi) else None
    if isinstance(node_count, int) and node_count != 0 and not pool.min_count <= node_count <= pool.count:  # 0: azurerm sends min_count
        at = builder.origin(block, "node_count", body.get("node_count"))
        below = node_count < pool.min_count
        why = (f"azurerm refuses it on create (\"`node_count`({node_count}) must be equal to or {'greater' if below else 'less'} than "
               f"`{'min' if below else 'max'}_count`({pool.min_count if below else pool.count}) when `auto_scaling_enabled` is set to `true`\")"
               if default else f"{AKS_RP} (\"agentPoolProfile.count was {node_count}. It must be greater or equal to minCount:{pool.min_count} "
                               f"and less than or equal to maxCount:{pool.count}\")")
        pool.notes.append((at.file, at.line, f"{block.address}: node_count {node_count} ({at.text}) is outside min_count {pool.min_count}"
                           f"..max_count {pool.count}; {why}", f"set {at.name} within {pool.min_count}..{pool.count} (or leave node_count unset)"))


def fixed_size(builder, pool, block, body) -> None:
    """Sets a pool's count without autoscaling (node_count, with where it is written), and notes min_count/max_count set anyway."""
    fixed = [k for k in ("min_count", "max_count") if builder.value(block, body.get(k), k) is not None]
    if fixed:
        pool.notes.append((body.get(fixed[0]).file, body.get(fixed[0]).line,
                           f"{block.address}: {' and '.join(fixed)} set without autoscaling; azurerm requires them to be null then",
                           f"set {builder.switch} = true to autoscale between them, or remove them and keep node_count"))
    pool.count = builder.number(block, body.get("node_count"), "node_count", 1)
    pool.count_origin = builder.origin(block, "node_count", body.get("node_count"), 1)


def size_words(vm_size: str, count: int, min_count: int | None = None) -> str:
    """A pool's size as the gate writes it: "2 x SIZE", or "0-2 x SIZE, autoscaling" (min_count-max_count) for an autoscaling pool."""
    return f"{count} x {vm_size}" if min_count is None else f"{min_count}-{count} x {vm_size}, autoscaling"
