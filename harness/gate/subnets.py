"""Each cluster's node subnets against the nodes Terraform puts in them (terraform-node-subnet).

Azure keeps 5 addresses of every subnet. A node takes one address of its pool's vnet_subnet_id; with Azure CNI
without overlay (network_plugin "azure", no network_plugin_mode "overlay", no pod_subnet_id) it also takes max_pods
addresses for its pods when it is created. A node pool upgrade adds max_surge nodes beside the others (pools are
upgraded one after another: the largest surge counts). A subnet whose range lies outside its virtual network's
address_space is refused by Azure, and so is creating or scaling a pool whose nodes do not fit (SubnetIsFull).

The values are Terraform's, for each cluster's tfvars (harness.gate.terraform): the subnet's address_prefixes,
the virtual network's address_space, the cluster's network_profile, and per pool (harness.gate.pools) its node
count (max_count when it autoscales), max_pods and upgrade_settings.max_surge. Address arithmetic is Python's
ipaddress.
"""
from __future__ import annotations

import ipaddress
import math
from pathlib import Path

from harness.gate.findings import Finding
from harness.gate.pools import cluster_pools
from harness.gate.terraform import Block, Evaluation, TerraformConfig, TerraformError, Value, load_tfvars, setting_origin, tfvars_cluster, variable_origin

RULES = {
    "terraform-node-subnet": "each cluster's node subnet lies inside its virtual network and holds an address for every node its pools "
                             "create (and for their pods, with Azure CNI without overlay), plus an upgrade's surge nodes, beside the 5 Azure keeps",
}
AZURE_RESERVED = 5  # per subnet: the network and broadcast addresses and three Azure uses


def subnet_findings(root: Path, cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]]) -> list[Finding]:
    """terraform-node-subnet for every cluster's tfvars scope (`scopes`: terraform_checks._scopes)."""
    out = []
    for label, ev in scopes:
        if tfvars_cluster(label) is None:
            continue  # the variable defaults alone are no cluster
        try:
            pools = cluster_pools(cfg, load_tfvars(root / label, root), label)
        except TerraformError:
            continue  # capacity-terraform or terraform-expression reports it
        out += _cluster(cfg, ev, pools, label)
    return out


def _networks(value: Value | None) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    if value is None or value.error or not value.known or not isinstance(value.value, list):
        return []
    try:
        return [ipaddress.ip_network(str(p), strict=False) for p in value.value]
    except ValueError:
        return []  # not a CIDR: the variable's validation (terraform-expression) or Azure says so


def _origin(cfg: TerraformConfig, v: Value, tfvars_rel: str) -> tuple[str, int | None]:
    """Where a list of one variable (`[var.x]`) or the argument itself is written."""
    if len(set(v.variables)) == 1 and not v.error:
        return variable_origin(cfg, v.variables[0], tfvars_rel)[:2]
    return setting_origin(cfg, v, tfvars_rel)


def _surge(body, nodes: int) -> int:
    """The nodes an upgrade adds beside `nodes`: max_surge "N%" rounded up, or N; 1 when it is not set (AKS's
    smallest default)."""
    settings = body.nested("upgrade_settings") if body is not None else []
    written = settings[0].get("max_surge") if settings else None
    value = str(written.value) if written is not None and written.known and written.value is not None else "1"
    try:
        return max(1, math.ceil(nodes * float(value[:-1]) / 100)) if value.endswith("%") else max(0, int(value))
    except ValueError:
        return 1


def _pool_bodies(ev: Evaluation) -> dict[str, object]:
    """The Terraform body of each pool, by the address pools.py gives it."""
    bodies: dict[str, object] = {b.address: b.body for b in ev.of_type("azurerm_kubernetes_cluster_node_pool")}
    for cluster in ev.of_type("azurerm_kubernetes_cluster"):
        for body in cluster.body.nested("default_node_pool"):
            bodies[cluster.address] = body
    return bodies


def _flat_cni(ev: Evaluation) -> bool:
    for cluster in ev.of_type("azurerm_kubernetes_cluster"):
        for profile in cluster.body.nested("network_profile"):
            plugin, mode = profile.get("network_plugin"), profile.get("network_plugin_mode")
            return (plugin is not None and plugin.value == "azure") and (mode is None or mode.value != "overlay")
    return False


def _cluster(cfg: TerraformConfig, ev: Evaluation, pools, label: str) -> list[Finding]:
    subnets: dict[str, Block] = {b.address: b for b in ev.of_type("azurerm_subnet") if not b.absent}
    vnets: dict[str, Block] = {b.address: b for b in ev.of_type("azurerm_virtual_network") if not b.absent}
    bodies, flat, out = _pool_bodies(ev), _flat_cni(ev), []
    cluster = tfvars_cluster(label)
    for address, subnet in subnets.items():
        prefixes = subnet.body.get("address_prefixes")
        ranges = _networks(prefixes)
        if not ranges:
            continue
        vnet_ref = subnet.body.get("virtual_network_name")
        vnet = next((vnets[r] for r in (vnet_ref.refs if vnet_ref else ()) if r in vnets), None)
        space = _networks(vnet.body.get("address_space")) if vnet else []
        file, line = _origin(cfg, prefixes, label)
        outside = [str(r) for r in ranges if space and not any(r.version == s.version and r.subnet_of(s) for s in space)]
        if outside:
            out.append(Finding(file, line, address, "terraform-node-subnet",
                               f"cluster {cluster}: {address} {', '.join(outside)} lies outside its virtual network's address_space "
                               f"{', '.join(map(str, space))}: Azure refuses the subnet, and the cluster is not created",
                               "choose the subnet inside the virtual network's address space (vnet_cidr)", f"cluster {cluster}"))
            continue
        users: dict[str, tuple[int, int, int]] = {}  # pool name -> (nodes, addresses per node, surge nodes)
        for pool in pools:
            body = bodies.get(pool.address)
            ref = body.get("vnet_subnet_id") if body is not None else None
            if ref is None or address not in ref.refs:
                continue
            nodes, per_node, _ = users.get(pool.name, (0, 0, 0))  # a zonal pool comes as one Pool per zone
            nodes += pool.count
            users[pool.name] = (nodes, 1 + (pool.max_pods if flat and "pod_subnet_id" not in body else 0), _surge(body, nodes))
        held = sum(n * per for n, per, _ in users.values())
        surge = max((s * per for n, per, s in users.values() if n), default=0)
        free = sum(r.num_addresses for r in ranges) - AZURE_RESERVED * len(ranges)
        if users and held + surge > free:
            what = ", ".join(f"pool {name} {n} node(s)" for name, (n, _, _) in sorted(users.items()) if n)
            pods = " with their max_pods pod addresses each (Azure CNI without overlay)" if flat else ""
            out.append(Finding(file, line, address, "terraform-node-subnet",
                               f"cluster {cluster}: {address} {', '.join(map(str, ranges))} has {free} addresses for nodes (Azure keeps "
                               f"{AZURE_RESERVED}), but its pools need {held} ({what}{pods}) and an upgrade {surge} more for its surge nodes: "
                               + ("AKS cannot create or scale the pools (SubnetIsFull)" if held > free else
                                  "AKS creates the pools but cannot upgrade them (SubnetIsFull), so every Kubernetes upgrade fails"),
                               "give the subnet a larger range (nodes_subnet_cidr)" + (", or use network_plugin_mode = \"overlay\"" if flat else ""),
                               f"cluster {cluster}"))
    return out
