"""The Kubernetes version each cluster's Terraform gives AKS, against the one the gate validates with.

The gate (and the embedded control plane) judge every object as the pinned Kubernetes does
(versions.yaml `kubernetes.production`, built from its module): its API schemas, the apiserver's
validation, kube-scheduler's plugins. A cluster whose `kubernetes_version` (or a node pool's
`orchestrator_version`) is another minor runs another apiserver, kubelet and scheduler than the one the
pull request was proven against.
"""
from __future__ import annotations

import re

from harness.gate.findings import Finding
from harness.gate.terraform import Evaluation, TerraformConfig, TerraformError, setting_origin, tfvars_cluster

RULES = {
    "terraform-kubernetes-version": "each cluster's AKS kubernetes_version (and a node pool's orchestrator_version) is the Kubernetes minor "
                                    "versions.yaml pins as production, the one the gate and the harness validate with",
}
SETTINGS = {"azurerm_kubernetes_cluster": "kubernetes_version", "azurerm_kubernetes_cluster_node_pool": "orchestrator_version"}


def version_findings(cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]], production: str | None) -> list[Finding]:
    """Per cluster scope (`scopes` after the variable defaults: each tfvars over them), a version of another minor."""
    if not production:
        return []
    out, seen = [], set()
    for label, ev in scopes[1:]:
        for kind, attr in SETTINGS.items():
            for block in ev.of_type(kind):
                v = block.body.get(attr)
                if v is None or v.error:
                    continue  # unset: AKS's default for the cluster (the control plane's version for a pool)
                try:
                    value = v.get(f"{block.address} {attr}")
                except TerraformError:
                    continue  # terraform-expression reports it
                minor = re.match(r"^(\d+\.\d+)(\.\d+)?$", str(value)) if value is not None else None
                if value is None or (minor and minor.group(1) == production):
                    continue
                file, line = setting_origin(cfg, v, label if tfvars_cluster(label) else None)
                if (file, line, str(value)) in seen:
                    continue
                seen.add((file, line, str(value)))
                out.append(Finding(file, line, block.address, "terraform-kubernetes-version",
                                   f"{attr} is {value!r} ({label}), but versions.yaml pins Kubernetes {production}: AKS would run another "
                                   "apiserver, kubelet and scheduler than the one the gate and the harness validate this change with",
                                   f"set {attr} to {production} (or a {production}.x patch), or move versions.yaml's kubernetes pin "
                                   "(production and the module version the harness builds) to that minor first"))
    return out
