"""The labels a node pool's nodes carry whatever the cluster installs: the kubelet's own and those AKS adds
(`aks_labels`), for harness.gate.pools."""
from __future__ import annotations

from harness.gate.sku import Sku


def aks_labels(name: str, vm_size: str, system: bool, sku: Sku | None, os_sku: str | None = None, os: str = "linux") -> dict[str, str]:
    """Labels every node of a pool has whatever the Terraform says: the kubelet's own (os, and arch from the size) and
    those AKS adds (the reserved accelerator label on GPU sizes); region and zone: by_zone."""
    labels = {
        "agentpool": name,
        "kubernetes.azure.com/agentpool": name,
        "kubernetes.azure.com/mode": "system" if system else "user",
        "kubernetes.azure.com/role": "agent",
        "node.kubernetes.io/instance-type": vm_size,
        "beta.kubernetes.io/instance-type": vm_size,
        "kubernetes.io/os": os,
        "beta.kubernetes.io/os": os,
    }
    if os == "linux" and os_sku in (None, "Ubuntu", "AzureLinux"):  # AKS labels the OS image family; Linux pools default to Ubuntu
        labels["kubernetes.azure.com/os-sku"] = os_sku or "Ubuntu"
    if sku:
        labels["kubernetes.io/arch"] = labels["beta.kubernetes.io/arch"] = sku.arch
    if sku and sku.gpus:
        labels["accelerator"] = "nvidia"
        labels["kubernetes.azure.com/accelerator"] = "nvidia"
    return labels
