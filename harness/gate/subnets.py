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

The cluster's network_profile is held to the combinations azurerm 4.x documents and AKS accepts (terraform-network-profile,
website/docs/r/kubernetes_cluster.html.markdown): network_policy "cilium" needs network_data_plane "cilium", and the Cilium
data plane refuses another policy (ARM CiliumDataplaneRequiresNetworkPolicyCilium); the Cilium data plane, overlay and
network_policy "azure" need network_plugin "azure"; the Cilium data plane needs overlay or pod subnets; pod_cidr with
network_plugin "azure" needs overlay. Its address ranges (terraform-address-ranges): the service CIDR (AKS's 10.0.0.0/16
when service_cidr is not set) must not overlap the subnets the pools use (ServiceCidrOverlapExistingSubnetsCidr); with
overlay the pod CIDR (10.244.0.0/16 by default) must not overlap their virtual network, nor the service CIDR; with
overlay or kubenet each node takes a /24 of the pod CIDR, which must hold every node plus an upgrade's surge.
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
    "terraform-network-profile": "the cluster's network_profile is a combination azurerm and AKS accept (network_policy cilium with "
                                 "network_data_plane cilium and no other policy on it; Cilium, overlay and network_policy azure with "
                                 "network_plugin azure; Cilium with overlay or pod subnets; pod_cidr with azure only in overlay)",
    "terraform-address-ranges": "the service CIDR (10.0.0.0/16 unless service_cidr is set) overlaps no subnet the node pools use; an overlay "
                                "pod CIDR (10.244.0.0/16 unless pod_cidr is set) overlaps neither their virtual network nor the service "
                                "CIDR; with overlay or kubenet the pod CIDR holds a /24 for every node plus an upgrade's surge nodes",
}
AZURE_RESERVED = 5  # per subnet: the network and broadcast addresses and three Azure uses
DEFAULT_SERVICE_CIDR, DEFAULT_POD_CIDR = "10.0.0.0/16", "10.244.0.0/16"  # AKS's, when network_profile sets none
NODE_POD_PREFIX = 24  # overlay and kubenet give each node a /24 of the pod CIDR


def subnet_findings(root: Path, cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]]) -> list[Finding]:
    """terraform-node-subnet, terraform-network-profile and terraform-address-ranges for every cluster's tfvars scope
    (`scopes`: terraform_checks._scopes); a profile or range finding the clusters share is one, naming them."""
    out, shared = [], {}
    for label, ev in scopes:
        if tfvars_cluster(label) is None:
            continue  # the variable defaults alone are no cluster
        try:
            pools = cluster_pools(cfg, load_tfvars(root / label, root), label)
        except TerraformError:
            continue  # capacity-terraform or terraform-expression reports it
        out += _cluster(cfg, ev, pools, label)
        for f in _profile_findings(cfg, ev, label) + _range_findings(cfg, ev, pools, label):
            shared.setdefault((f.file, f.line, f.resource, f.rule), {})[tfvars_cluster(label)] = (f.message, f.hint)
    for (file, line, resource, rule), by_cluster in shared.items():  # one place, one finding: the clusters' messages together
        texts: dict[str, list[str]] = {}
        for name, (message, _) in by_cluster.items():
            texts.setdefault(message, []).append(name)
        names = " | ".join(by_cluster)
        out.append(Finding(file, line, resource, rule, "; ".join(f"cluster {' | '.join(c)}: {m}" for m, c in texts.items()),
                           "; ".join(dict.fromkeys(h for _, h in by_cluster.values())), f"cluster {names}"))
    return out


def _profile(ev: Evaluation) -> tuple[Block | None, dict[str, Value]]:
    """The cluster and its network_profile's arguments (none written: AKS's kubenet defaults)."""
    for cluster in ev.of_type("azurerm_kubernetes_cluster"):
        profiles = cluster.body.nested("network_profile")
        return cluster, (profiles[0].attrs if profiles else {})
    return None, {}


def _known(profile: dict[str, Value], name: str, default: object = None) -> object:
    """The argument's value; `default` when it is not written; ... when Terraform knows it only at apply."""
    v = profile.get(name)
    return default if v is None else (v.value if v.known and not v.error else ...)


# azurerm 4.x's documented combinations: (the argument at fault, whether the profile `p` satisfies it, the reason, the fixes)
_COMBINATIONS = (
    ("network_policy", lambda p: p["network_policy"] not in ("calico", "azure") or p["network_data_plane"] != "cilium",
     "the Cilium data plane enforces Cilium network policies only: AKS refuses the cluster (CiliumDataplaneRequiresNetworkPolicyCilium)",
     ('set network_policy = "cilium" (it enforces Kubernetes NetworkPolicy; Calico policies need network_data_plane = "azure")',)),
    ("network_policy", lambda p: p["network_policy"] != "cilium" or p["network_data_plane"] == "cilium",
     'azurerm: "When network_policy is set to cilium, the network_data_plane field must be set to cilium"',
     ('set network_data_plane = "cilium"', 'set network_policy = "calico"')),
    ("network_plugin", lambda p: p["network_data_plane"] != "cilium" or p["network_plugin"] == "azure",
     'azurerm: "When network_data_plane is set to cilium, the network_plugin field can only be set to azure"', ('set network_plugin = "azure"',)),
    ("network_plugin", lambda p: p["network_plugin_mode"] != "overlay" or p["network_plugin"] == "azure",
     'azurerm: "When network_plugin_mode is set to overlay, the network_plugin field can only be set to azure"', ('set network_plugin = "azure"',)),
    ("network_policy", lambda p: p["network_policy"] != "azure" or p["network_plugin"] == "azure",
     'azurerm: "When network_policy is set to azure, the network_plugin field can only be set to azure"',
     ('set network_plugin = "azure"', 'set network_policy = "calico"')),
    ("pod_cidr", lambda p: p["pod_cidr"] is None or p["network_plugin"] != "azure" or p["network_plugin_mode"] == "overlay",
     'azurerm: "When network_plugin is set to azure - the pod_cidr field must not be set, unless specifying network_plugin_mode to '
     'overlay": flat Azure CNI gives pods addresses of the node subnet', ('set network_plugin_mode = "overlay"', 'remove pod_cidr')),
    ("network_data_plane", lambda p: p["network_data_plane"] != "cilium" or p["network_plugin_mode"] == "overlay" or p["pod_subnet_id"],
     'azurerm: "When network_data_plane is set to cilium, one of either network_plugin_mode = overlay or pod_subnet_id must be specified"',
     ('set network_plugin_mode = "overlay"', "give the pools a pod_subnet_id")),
)


def _profile_findings(cfg: TerraformConfig, ev: Evaluation, label: str) -> list[Finding]:
    """terraform-network-profile: each argument at fault once, with every reason; nothing on a value known only at apply."""
    cluster, profile = _profile(ev)
    if cluster is None:
        return []
    names = ("network_plugin", "network_plugin_mode", "network_policy", "network_data_plane", "pod_cidr")
    p = {n: _known(profile, n) for n in names}
    p["pod_subnet_id"] = any("pod_subnet_id" in b for b in cluster.body.nested("default_node_pool"))
    faults: list[tuple[str, list[str], tuple[str, ...]]] = []  # (argument, reasons, fixes): faults one fix mends are one
    for arg, holds, why, fixes in _COMBINATIONS:
        if ... in p.values() or holds(p):
            continue
        joined = next((f for f in faults if set(f[2]) & set(fixes)), None)
        if joined:
            joined[1].append(why)
            faults[faults.index(joined)] = (joined[0], joined[1], tuple(x for x in joined[2] if x in fixes))
        else:
            faults.append((arg, [why], fixes))
    written = ", ".join(f"{n} = {profile[n].text}" for n in names if n in profile)
    return [Finding(*(setting_origin(cfg, profile[arg], label) if arg in profile else (cluster.file, cluster.line)), cluster.address,
                    "terraform-network-profile", f"{cluster.address} network_profile {{{written}}}: {'; '.join(why)}; terraform apply "
                    "fails creating the cluster, and nothing Flux would apply on it exists", ", or ".join(fixes)) for arg, why, fixes in faults]


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


def _nodes(pools, bodies: dict, subnet: str | None = None) -> dict[str, tuple[int, int, object]]:
    """pool name -> (nodes, max_pods, Terraform body) of the pools (whose vnet_subnet_id is `subnet`, when given); a zonal pool
    comes as one Pool per zone."""
    out: dict[str, tuple[int, int, object]] = {}
    for pool in pools:
        body = bodies.get(pool.address)
        ref = body.get("vnet_subnet_id") if body is not None else None
        if subnet is not None and (ref is None or subnet not in ref.refs):
            continue
        out[pool.name] = (out.get(pool.name, (0,))[0] + pool.count, pool.max_pods, body)
    return out


def _range_findings(cfg: TerraformConfig, ev: Evaluation, pools, label: str) -> list[Finding]:
    """terraform-address-ranges: the service and pod CIDRs against the subnets the pools use, their virtual networks and the
    nodes; each at the range written last (the profile's, else the subnet's or network's), with AKS's defaults."""
    cluster, profile = _profile(ev)
    plugin, mode = _known(profile, "network_plugin", "kubenet"), _known(profile, "network_plugin_mode")
    if cluster is None or ... in (plugin, mode):
        return []
    service, service_at = _cidr(cfg, profile, "service_cidr", DEFAULT_SERVICE_CIDR, label)
    pods, pods_at = _cidr(cfg, profile, "pod_cidr", DEFAULT_POD_CIDR, label) if plugin == "kubenet" or mode == "overlay" else (None, None)
    bodies, out = _pool_bodies(ev), []
    subnets: dict[str, Block] = {b.address: b for b in ev.of_type("azurerm_subnet") if not b.absent}
    vnets: dict[str, Block] = {b.address: b for b in ev.of_type("azurerm_virtual_network") if not b.absent}
    used = [a for a in subnets if any(a in (body.get(k).refs if body.get(k) else ()) for body in bodies.values() if body is not None
                                      for k in ("vnet_subnet_id", "pod_subnet_id"))]
    seen_vnets: set[str] = set()
    profile_at = (cluster.body.nested("network_profile") or [cluster.body])[0]
    for address in used:
        prefixes = subnets[address].body.get("address_prefixes")
        ranges = _networks(prefixes)
        hit = [str(r) for r in ranges if service is not None and r.overlaps(service)]
        if hit:
            out.append(Finding(*(service_at or _origin(cfg, prefixes, label)), cluster.address, "terraform-address-ranges",
                               f"{address} {', '.join(hit)} overlaps the service CIDR {service}"
                               f"{'' if service_at else ' (AKS default: network_profile sets no service_cidr)'}: service cluster IPs must not "
                               "overlap a subnet, and AKS refuses the cluster (ServiceCidrOverlapExistingSubnetsCidr)",
                               "choose a VNet and subnet range outside " + str(service) + " (vnet_cidr, nodes_subnet_cidr), or set "
                               "network_profile.service_cidr and dns_service_ip to a range nothing on the VNet uses"))
        ref = subnets[address].body.get("virtual_network_name")
        vnet = next((vnets[r] for r in (ref.refs if ref else ()) if r in vnets), None)
        if mode != "overlay" or pods is None or vnet is None or vnet.address in seen_vnets:
            continue
        seen_vnets.add(vnet.address)
        space = vnet.body.get("address_space")
        hit = [str(r) for r in _networks(space) if r.overlaps(pods)]
        if hit:
            out.append(Finding(*(pods_at or _origin(cfg, space, label)), cluster.address, "terraform-address-ranges",
                               f"the overlay pod CIDR {pods}{'' if pods_at else ' (AKS default: network_profile sets no pod_cidr)'} overlaps "
                               f"{vnet.address} {', '.join(hit)}: with Azure CNI Overlay the pod CIDR must not overlap the cluster's "
                               "virtual network, and pod traffic to those addresses would not be routed", "set network_profile.pod_cidr to a "
                               "private range outside the virtual network and the service CIDR" + ("" if pods_at else " (or choose vnet_cidr outside it)")))
    if pods is not None and service is not None and pods.overlaps(service) and (pods_at or service_at):
        out.append(Finding(*(pods_at or service_at), cluster.address, "terraform-address-ranges",
                           f"the pod CIDR {pods} overlaps the service CIDR {service}: AKS refuses the cluster", "give network_profile.pod_cidr "
                           "and service_cidr separate ranges"))
    nodes = _nodes(pools, bodies)
    need = sum(n for n, _, _ in nodes.values()) + max((_surge(body, n) for n, _, body in nodes.values() if n), default=0)
    room = 2 ** max(0, NODE_POD_PREFIX - pods.prefixlen) if pods is not None and pods.prefixlen <= NODE_POD_PREFIX else 0
    if pods is not None and need > room:
        what = ", ".join(f"pool {name} {n} node(s)" for name, (n, _, _) in sorted(nodes.items()) if n)
        out.append(Finding(*(pods_at or (profile_at.file, profile_at.line)), cluster.address, "terraform-address-ranges",
                           f"the pod CIDR {pods} holds {room} node range(s) of a /{NODE_POD_PREFIX} (each node takes one with "
                           f"{'overlay' if mode == 'overlay' else plugin}), but the pools need {need} with an upgrade's surge ({what}): "
                           "AKS cannot create, scale or upgrade the nodes beyond it",
                           f"give network_profile.pod_cidr a larger range (a /{max(8, NODE_POD_PREFIX - max(1, need - 1).bit_length())} or larger)"))
    return out


def _cidr(cfg: TerraformConfig, profile: dict[str, Value], name: str, default: str, label: str):
    """(network, where it is written, or None for AKS's default) of a profile CIDR; (None, None) when it is not one or unknown."""
    v = profile.get(name)
    if v is not None and (not v.known or v.error):
        return None, None
    try:
        return ipaddress.ip_network(str(v.value if v is not None else default), strict=False), (setting_origin(cfg, v, label) if v else None)
    except ValueError:
        return None, None  # not a CIDR: azurerm's validation says so


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
        users = {name: (n, 1 + (max_pods if flat and "pod_subnet_id" not in body else 0), _surge(body, n))
                 for name, (n, max_pods, body) in _nodes(pools, bodies, address).items()}  # (nodes, addresses per node, surge nodes)
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
