"""The labels a node pool's nodes carry whatever the cluster installs: the kubelet's own and those AKS adds
(`aks_labels`), for harness.gate.pools; and the labels AKS deprecates (`DEPRECATED`), which `aks-deprecated-label`
reports wherever the repository selects nodes by one (`deprecated_label_findings`)."""
from __future__ import annotations

from pathlib import Path

from harness.gate import origin
from harness.gate.findings import Finding
from harness.gate.sku import Sku
from harness.gate.sources import as_map, resource_id

# What AKS labels every GPU node with (the reserved kubernetes.azure.com/accelerator, and its deprecated predecessor,
# which AKS still sets): the KWOK and kind nodes of harness.cluster carry both.
GPU_LABELS = {"kubernetes.azure.com/accelerator": "nvidia", "accelerator": "nvidia"}

# AKS's "Use labels" page, section "Deprecated labels" (learn.microsoft.com/azure/aks/use-labels#deprecated-labels,
# MicrosoftDocs/azure-aks-docs articles/aks/use-labels.md): deprecated label -> (recommended substitute, the value it
# takes, None: the old label's value). AKS still sets them today; a selector on one stops matching the day it no longer does.
USE_LABELS = "learn.microsoft.com/azure/aks/use-labels#deprecated-labels"
DEPRECATED: dict[str, tuple[str, str | None]] = {
    "failure-domain.beta.kubernetes.io/region": ("topology.kubernetes.io/region", None),
    "failure-domain.beta.kubernetes.io/zone": ("topology.kubernetes.io/zone", None),
    "beta.kubernetes.io/arch": ("kubernetes.io/arch", None),
    "beta.kubernetes.io/instance-type": ("node.kubernetes.io/instance-type", None),
    "beta.kubernetes.io/os": ("kubernetes.io/os", None),
    "node-role.kubernetes.io/agent": ("kubernetes.azure.com/role", "agent"),
    "kubernetes.io/role": ("kubernetes.azure.com/role", "agent"),
    "agentpool": ("kubernetes.azure.com/agentpool", None),
    "storageprofile": ("kubernetes.azure.com/storageprofile", None),
    "storagetier": ("kubernetes.azure.com/storagetier", None),
    "accelerator": ("kubernetes.azure.com/accelerator", None),
}

RULES = {
    "aks-deprecated-label": "warning: no ResourceFlavor nodeLabels, nodeSelector, node affinity term, topologyKey or Topology "
                            "level selects nodes by a label AKS's \"Use labels\" page lists as deprecated (accelerator, agentpool, "
                            "storageprofile, storagetier, kubernetes.io/role, beta.kubernetes.io/*, failure-domain.beta.kubernetes.io/*); "
                            "the fix is its recommended substitute (kubernetes.azure.com/accelerator, ...): the day AKS no longer sets "
                            "the old label, the pods selecting it pend",
}


def aks_labels(name: str, vm_size: str, system: bool, sku: Sku | None, os_sku: str | None = None, os: str = "linux") -> dict[str, str]:
    """Labels every node of a pool has whatever the Terraform says: the kubelet's own (os, and arch from the size) and
    those AKS adds (the reserved accelerator label on GPU sizes, and its deprecated predecessor); region and zone: by_zone."""
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
        labels.update(GPU_LABELS)
    return labels


def _selects(path: list) -> str | None:
    """How the field at `path` (a label key's place) selects nodes, None when it does not: a map of node labels (a
    ResourceFlavor's nodeLabels, a nodeSelector anywhere, a Helm chart's value of that name included), the key of a
    node affinity term's matchExpressions (required or preferred; never a pod affinity's labelSelector), a
    topologyKey, a Kueue Topology level."""
    if len(path) >= 2 and path[-2] in ("nodeSelector", "nodeLabels"):
        return f"its {path[-2]}"
    if len(path) >= 5 and path[-1] == "key" and path[-3] == "matchExpressions" and (path[-4] == "preference" or path[-5] == "nodeSelectorTerms"):
        return "its preferred node affinity" if path[-4] == "preference" else "its required node affinity"
    if path and path[-1] in ("topologyKey", "nodeLabel"):
        return f"its {path[-1]}"
    return None


def deprecated_label_findings(root: Path, docs, reads) -> list[Finding]:
    """aks-deprecated-label, one warning where each deprecated label is written. `docs`: the repository's documents
    (harness.gate.sources.Sources.docs); `reads(file)`: whether the gate reads the file (a Kubernetes manifest)."""
    out = []
    for doc in docs:
        if not doc.obj.get("kind") or not reads(doc.file):
            continue
        for path, value in origin.entries(doc.obj):
            if isinstance(value, (dict, list)) or not path:
                continue
            by_key = len(path) >= 2 and path[-2] in ("nodeSelector", "nodeLabels")
            label = str(path[-1]) if by_key else str(value)
            how = _selects(path) if label in DEPRECATED else None
            if how is None:
                continue
            new, new_value = DEPRECATED[label]
            found = origin.field_line(root, doc.file, doc.line, list(path), value)
            pends = ("Kueue copies the flavor's nodeLabels into the nodeSelector of every pod it admits to it, so those pods pend "
                     "holding the flavor's quota" if doc.obj.get("kind") == "ResourceFlavor" and path[-2] == "nodeLabels" else
                     "the preference no longer applies" if "preference" in path else
                     "spreading or co-locating by it no longer works" if path[-1] == "topologyKey" else
                     "the pods it places pend")
            if by_key:
                fix = f"select {new}: {new_value if new_value is not None else value} instead of {label}: {value}"
            elif path[-1] == "key":
                fix = f"use key: {new} instead of {label}" + (f", with values [{new_value}]" if new_value is not None else " (same values)")
            else:
                fix = f"use {new} instead of {label}"
            field = f"{origin.dotted(path[:-1])}[{label}]" if by_key else origin.dotted(path)
            out.append(Finding(doc.file, found[0] if found else doc.line, resource_id(doc.obj), "aks-deprecated-label",
                               f"{resource_id(doc.obj)} selects nodes by the label {label} in {how} ({field}), which AKS "
                               f"lists as deprecated, replaced by {new} ({USE_LABELS}): the day AKS no longer sets {label}, {pends}",
                               fix, severity="warning"))
    return out
