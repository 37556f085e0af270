"""The labels and taints a node pool gives its nodes, judged as the kubelet and the apiserver judge them.

AKS passes a pool's node_labels to the kubelet as --node-labels and its node_taints as --register-with-taints.
A label the kubelet may not set on itself (kubernetes.io / k8s.io namespaces outside its allowed set, such as
node-role.kubernetes.io/*), a label or taint whose syntax the apiserver's Node validation refuses, or a taint
effect that is not NoSchedule, PreferNoSchedule or NoExecute: the pool's nodes never join (AKS refuses the pool).
tools/kubecheck (op node-pools) runs k8s.io/kubelet's label rule and the pinned apiserver's ValidateNode.
Beside them, pool settings AKS refuses or that change what the nodes offer: a Spot pool in System mode (AKS's system
pools cannot use Spot VMs: the apply fails), a Spot-only setting (eviction_policy, spot_max_price) on a Regular pool
(azurerm's node pool create refuses it), upgrade_settings.max_surge on a Spot pool (the AKS resource provider: "Spot pools
can't set max surge"), what azurerm's schema refuses (harness.gate.azurerm_schema: an argument the block does not have, such
as gpu_instance_profile, the ARM API's name for gpu_instance, or priority on default_node_pool; a value outside a case-sensitive
enum, such as priority = "spot"; a pool name or temporary_name_for_rotation outside validate.KubernetesAgentPoolName), what AKS refuses
of a pool (a Windows pool's name over 6 characters, max_pods outside 10..250: harness.gate.pools models at most 250 pod slots; a
second pool with a name taken, PoolSettingError from harness.gate.pools, which no rule models further), each at its own line and the one finding of its pool's setting, and a gpu_instance (MIG: the
nodes advertise GPU instances, which the capacity checks count under both names the device plugin may use,
harness.gate.sku.mig_resources; on a size whose GPU has no MIG, T4 or A10, an error and whole GPUs counted).
"""
from __future__ import annotations

import re

from harness.core import HarnessError
from harness.gate.azurerm_schema import DEFAULT_POOL, MAX_PODS, NODE_POOL, POOL_CHECKS, WINDOWS_NAME_MAX, sdk_key
from harness.gate.findings import Finding
from harness.gate.helper import submit_kept
from harness.gate.matching import taint_dict
from harness.gate.pools import Pool
from harness.gate.sku import MIG_PROFILES
from harness.gate.sources import as_list, as_map

RULES = {
    "capacity-node-settings": "every node pool's node_labels and node_taints are ones its nodes can register with: the kubelet's rule for "
                              "--node-labels (no kubernetes.io / k8s.io label outside its allowed set) and the apiserver's Node validation "
                              "(label syntax; taints key=value:Effect with NoSchedule, PreferNoSchedule or NoExecute); no Spot-only setting "
                              "(eviction_policy, spot_max_price other than -1) on a pool whose priority is Regular (azurerm refuses it at apply); no "
                              "upgrade_settings.max_surge on a Spot pool (AKS refuses it); no argument its block's azurerm schema lacks "
                              "(gpu_instance_profile, which azurerm names gpu_instance; priority, mode, os_type... on default_node_pool); the "
                              "values azurerm's case-sensitive enums accept (priority, eviction_policy, mode, os_type, os_sku, kubelet_disk_type, type, "
                              "kubelet_config's cpu_manager_policy, linux_os_config's transparent_huge_page_enabled, gpu_instance: MIG1g..MIG7g ...); pool names and temporary_name_for_rotation azurerm accepts (a lowercase letter, "
                              "then lowercase letters and digits, 12 at most; AKS: 6 at most for a Windows pool), no two pools of a cluster "
                              "with one name, max_pods within AKS's 10..250; a gpu_instance only on a MIG-capable size (A100, H100: sku.yaml `mig`)",
    "capacity-spot-system-pool": "no node pool in mode System has priority = \"Spot\" (AKS refuses Spot system pools: the apply fails)",
    "capacity-gpu-mig": "warning: a GPU pool with gpu_instance (MIG) is named: its nodes advertise MIG instances under a resource name "
                        "the device plugin's MIG strategy decides (nvidia.com/gpu with `single`, nvidia.com/mig-<profile> with `mixed`, "
                        "whole GPUs with `none`); the capacity checks count the instances under either name",
}


class NodeSettingsError(HarnessError, RuntimeError):
    pass


def _schema_findings(pool: Pool, context: str) -> tuple[list[Finding], set[str]]:
    """capacity-node-settings for the arguments azurerm's schema refuses (harness.gate.azurerm_schema): one its pool block does not
    have, at the argument's line; a value its POOL_CHECKS refuse (an enum value outside azurerm's case-sensitive set, a name or
    temporary_name_for_rotation outside validate.KubernetesAgentPoolName), a Windows pool's name longer than AKS allows, a
    max_pods outside AKS's range, at the line that gives the value. With the arguments reported, whose other checks would only be
    follow-ons."""
    out = []
    for attr, (at, fix) in pool.unsupported.items():
        out.append(Finding(at.file, at.line, pool.address, "capacity-node-settings",
                           f"{pool.address} (pool {pool.name}) sets {attr} ({at.text} at {at.where()}), which azurerm's "
                           f"{DEFAULT_POOL if pool.default else NODE_POOL} schema does not have, so `terraform validate` fails (\"Unsupported "
                           f"argument: An argument named \"{attr}\" is not expected here\")"
                           + ("; the capacity checks read it as gpu_instance" if attr == "gpu_instance_profile" else ""), fix, context))
    refused = {}
    for attr, (value, at) in pool.settings.items():
        why = None if attr in pool.unsupported or attr not in POOL_CHECKS else POOL_CHECKS[attr].refusal(attr, value, sdk_key(attr, pool.default))
        if why:
            refused[attr] = at
            out.append(Finding(at.file, at.line, pool.address, "capacity-node-settings",
                               f"{pool.address} (pool {pool.name}) sets {attr} = {value!r} ({at.text} at {at.where()}): {why[0]}",
                               why[1] + (", or remove it to schedule whole GPUs" if attr == "gpu_instance" else ""), context))
    name, at = pool.settings.get("name", (None, None))
    if pool.os == "windows" and not pool.default and "name" not in refused and isinstance(name, str) and len(name) > WINDOWS_NAME_MAX:
        out.append(Finding(at.file, at.line, pool.address, "capacity-node-settings",
                           f"{pool.address} (pool {name}) is a Windows pool named {name!r} ({at.text} at {at.where()}): AKS refuses a Windows "
                           f"pool name longer than {WINDOWS_NAME_MAX} characters (azurerm's docs of {NODE_POOL} `name`), so `terraform apply` fails",
                           f"rename the pool to at most {WINDOWS_NAME_MAX} lowercase letters and digits (e.g. name = \"{name[:WINDOWS_NAME_MAX]}\")", context))
    pods, at = pool.settings.get("max_pods", (None, None))
    if isinstance(pods, (int, float)) and not isinstance(pods, bool) and not MAX_PODS[0] <= pods <= MAX_PODS[1]:
        refused["max_pods"] = at
        out.append(Finding(at.file, at.line, pool.address, "capacity-node-settings",
                           f"{pool.address} (pool {pool.name}) sets max_pods = {pods:g} ({at.text} at {at.where()}): AKS accepts {MAX_PODS[0]} to "
                           f"{MAX_PODS[1]} pods per node with every network plugin (learn.microsoft.com/azure/aks/azure-cni-overview, \"Maximum "
                           "pods per node\"), so creating the pool fails; the capacity checks count "
                           f"{min(max(int(pods), MAX_PODS[0]), MAX_PODS[1])} pod slots per node",
                           f"set max_pods between {MAX_PODS[0]} and {MAX_PODS[1]} (AKS's default: 30 with Azure CNI, 110 with kubenet, "
                           "250 with Azure CNI Overlay)", context))
    return out, {*pool.unsupported, *refused}


def _mig_findings(pool: Pool, context: str) -> list[Finding]:
    """A gpu_instance azurerm accepts: an error on a size whose GPUs have no MIG (sku.yaml `mig`), else capacity-gpu-mig."""
    profile, at = pool.settings.get("gpu_instance", (None, None))
    if not profile or str(profile) not in MIG_PROFILES:
        return []
    if pool.sku and not pool.sku.mig:
        size = f"{pool.vm_size} ({pool.sku.gpu or 'no GPU'}{', ' + pool.vm_size_origin.text + ' at ' + pool.vm_size_origin.where() if pool.vm_size_origin else ''})"
        return [Finding(at.file, at.line, pool.address, "capacity-node-settings",
                        f"{pool.address} (pool {pool.name}) sets gpu_instance = {profile} ({at.text} at {at.where()}) on {size}, whose GPU has "
                        "no MIG: AKS partitions only MIG-capable GPUs (A100, H100-class sizes; learn.microsoft.com/azure/aks/gpu-multi-instance), "
                        "and no device plugin advertises MIG instances of it; the capacity checks count its whole GPUs",
                        "remove gpu_instance (the pool schedules whole GPUs), or use a MIG-capable size (e.g. Standard_NC24ads_A100_v4) "
                        "for the pool", context)]
    names = " and ".join(sorted(pool.mig())) or "nvidia.com/gpu"
    return [Finding(at.file, at.line, pool.address, "capacity-gpu-mig",
                    f"{pool.address} (pool {pool.name}) sets gpu_instance = {profile} ({at.where()}): its nodes advertise MIG "
                    "instances, not whole GPUs, under the name the device plugin's MIG strategy decides (`single`: nvidia.com/gpu "
                    "counts instances; `mixed`: nvidia.com/mig-<profile>; `none`: whole GPUs, which MIG leaves unusable), which "
                    f"the gate cannot see; the capacity checks count {MIG_PROFILES[str(profile)][1]} instance(s) per GPU under {names}, so "
                    "quotas and requests under the other name pass here and pend on the cluster",
                    "run the device plugin with the MIG strategy whose resource name the quotas and requests use (the GPU "
                    "Operator's mig.strategy, the device-plugin chart's migStrategy), or remove gpu_instance to schedule whole GPUs",
                    context, severity="warning")]


def pool_setting_findings(pools: list[Pool], context: str) -> list[Finding]:
    """capacity-node-settings (the schema's, the Spot settings), capacity-spot-system-pool and capacity-gpu-mig for the pools of one
    cluster (each pool once, not once per zone); an argument the schema refuses is its one finding."""
    out = []
    for pool in {p.address: p for p in pools}.values():
        found, refused = _schema_findings(pool, context)
        out += found
        priority, at = pool.settings.get("priority", (None, None))
        if pool.system and priority == "Spot" and "priority" not in refused:
            out.append(Finding(at.file, at.line, pool.address, "capacity-spot-system-pool",
                               f"{pool.address} (pool {pool.name}) is a System pool with priority = \"Spot\" ({at.text} at {at.where()}): AKS "
                               "refuses Spot VMs for system pools, so `terraform apply` fails", "set mode = \"User\" on the Spot pool (Spot "
                               "pools are user pools; keep a Regular-priority pool in System mode), or remove priority = \"Spot\"", context))
        surge, where = pool.settings.get("upgrade_settings.max_surge", (None, None))
        if priority == "Spot" and where and "priority" not in refused:
            out.append(Finding(where.file, where.line, pool.address, "capacity-node-settings",
                               f"{pool.address} (pool {pool.name}) is a Spot pool (priority = \"Spot\" at {at.where()}) with upgrade_settings "
                               f"{where.text} ({where.where()}): the AKS resource provider refuses it on create (\"Spot pools can't set max "
                               "surge\"; azurerm: \"`max_surge` cannot be set when `priority` is set to `Spot`\"), so `terraform apply` fails",
                               "remove the upgrade_settings block from the Spot pool (Spot nodes are replaced, not surged, on upgrade)", context))
        for attr in ("eviction_policy", "spot_max_price"):
            value, where = pool.settings.get(attr, (None, None))
            if "priority" in refused or attr in refused:
                continue  # the refused priority (or the argument itself) is the finding
            if priority != "Spot" and value not in (None, "") and not (attr == "spot_max_price" and value == -1):
                out.append(Finding(where.file, where.line, pool.address, "capacity-node-settings",
                                   f"{pool.address} (pool {pool.name}) sets {attr} ({where.text} at {where.where()}) while its priority is "
                                   f"{priority or 'Regular (the default)'}: azurerm refuses it (\"`{attr}` can only be set when `priority` is set "
                                   "to `Spot`\"), so `terraform apply` fails", f"remove {attr} (or set it to null), or set priority = \"Spot\" "
                                   "if the pool is meant to run on Spot VMs", context))
        if "gpu_instance" not in refused:
            out += _mig_findings(pool, context)
    return out


def node_setting_findings(pools: list[Pool], context: str) -> list[Finding]:
    """capacity-node-settings for the pools of one cluster, at the line that sets the refused labels or taints;
    then pool_setting_findings."""
    written = [p for p in pools if p.written]
    if not written:
        return pool_setting_findings(pools, context)
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": p.name, "labels": {str(k): str(v) for k, v in as_map(
        p.written.get("node_labels", (None,))[0]).items()}}, "spec": {"taints": [taint_dict(t) for t in as_list(
            p.written.get("node_taints", (None,))[0])]}} for p in written]
    out = []
    for pool, answer in zip(written, submit_kept("kubecheck", "node-pools", NodeSettingsError, objects=nodes).result()):
        for err in answer.get("errors") or []:
            attr = "node_taints" if "taints" in str(err.get("field")) else "node_labels"
            value, origin = pool.written.get(attr) or next(iter(pool.written.values()))
            what = str(err.get("field") or attr)
            if attr == "node_taints":  # name the taint as written ("sku=gpu") and the part the apiserver refuses (its effect)
                index = next((int(i) for i in re.findall(r"taints\[(\d+)\]", what)), None)
                written = as_list(value)[index] if index is not None and index < len(as_list(value)) else None
                what = f"{attr} {written!r} ({what.split('.')[-1]})" if written is not None else attr
                hint = "write each taint key=value:Effect, the effect one of NoSchedule, PreferNoSchedule or NoExecute (e.g. \"sku=gpu:NoSchedule\")"
            else:
                hint = ("use labels outside kubernetes.io and k8s.io (except node.kubernetes.io/ and kubelet.kubernetes.io/), with valid label "
                        "keys and values")
            out.append(Finding(origin.file, origin.line, pool.address, "capacity-node-settings",
                               f"{pool.address} (pool {pool.name}) {what}: {err.get('detail') or err.get('message')}; its nodes never join the cluster",
                               hint, context))
    return out + pool_setting_findings(pools, context)
