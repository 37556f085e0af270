"""aks-deprecated-label (harness.gate.node_labels): a node selection by a label AKS's "Use labels" page lists as deprecated
is one warning where the label is written, with its recommended substitute as the fix; the shipped repository selects
the supported kubernetes.azure.com/accelerator, and the simulated GPU nodes carry both labels."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import GPU_LABELS, node_pools
from harness.gate.node_labels import DEPRECATED, deprecated_label_findings
from harness.gate.sources import Sources
from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

FLAVORS = "base/resource-flavors.yaml"
POD = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ray}
spec:
  nodeSelector:
    agentpool: gpupool
    kubernetes.io/os: linux
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference:
            matchExpressions:
              - {key: node-role.kubernetes.io/agent, operator: Exists}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchExpressions:
              - {key: accelerator, operator: In, values: [nvidia]}
          topologyKey: failure-domain.beta.kubernetes.io/zone
  containers: [{name: c, image: busybox}]
"""


def _found(tmp_path: Path, text: str):
    (tmp_path / "pod.yaml").write_text(text)
    return deprecated_label_findings(tmp_path, Sources.load(tmp_path).docs, lambda file: True)


def test_each_deprecated_label_a_pod_selects_nodes_by_is_one_warning_at_it_with_its_substitute(tmp_path):
    found = sorted(_found(tmp_path, POD), key=lambda f: f.line)
    assert [(f.line, f.rule, f.severity) for f in found] == [(6, "aks-deprecated-label", "warning"), (14, "aks-deprecated-label", "warning"),
                                                             (20, "aks-deprecated-label", "warning")], "\n".join(f.text() for f in found)
    assert found[0].hint == "select kubernetes.azure.com/agentpool: gpupool instead of agentpool: gpupool", found[0].text()
    assert found[1].hint.startswith("use key: kubernetes.azure.com/role instead of node-role.kubernetes.io/agent, with values [agent]")
    assert "topology.kubernetes.io/zone" in found[2].hint and "topologyKey" in found[2].message
    assert all(f.resource == "Pod/ray/p" and "learn.microsoft.com/azure/aks/use-labels" in f.message for f in found)


def test_a_pod_label_selector_and_the_supported_labels_are_clean(tmp_path):
    """A pod (anti-)affinity's labelSelector selects pods, not nodes: its key `accelerator` is no node label; and every
    recommended substitute is clean."""
    text = POD.replace("    agentpool: gpupool\n", "").replace("node-role.kubernetes.io/agent", "kubernetes.azure.com/role")
    assert _found(tmp_path, text.replace("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")) == []
    substitutes = "".join(f"    {new}: x\n" for new, _ in DEPRECATED.values())
    assert _found(tmp_path, POD.split("  affinity:")[0].replace("    agentpool: gpupool\n", substitutes)) == []


def test_the_flavor_on_the_deprecated_label_is_one_warning_however_many_clusters_apply_it(repo_copy):
    """The shipped `gpu` flavor put back on `accelerator`: the only finding is one warning at the label (both clusters
    apply it; the capacity checks still place its pods, AKS sets both labels today)."""
    edit(repo_copy, FLAVORS, "    kubernetes.azure.com/accelerator: nvidia\n", "    accelerator: nvidia\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line, f.severity) for f in found] == [("aks-deprecated-label", FLAVORS, 16, "warning")], \
        "\n".join(f.text() for f in found)
    assert found[0].hint == "select kubernetes.azure.com/accelerator: nvidia instead of accelerator: nvidia"
    assert "Kueue copies the flavor's nodeLabels" in found[0].message


def test_the_shipped_selections_use_the_supported_label_and_the_gpu_nodes_carry_both():
    """The shipped flavor and device plugin select kubernetes.azure.com/accelerator; the node model (the KWOK nodes of
    harness.cluster and the kind worker) gives GPU nodes both labels, as AKS does today."""
    root = Path(__file__).resolve().parents[2]
    assert "    kubernetes.azure.com/accelerator: nvidia\n" in (root / FLAVORS).read_text()
    assert GPU_LABELS == {"kubernetes.azure.com/accelerator": "nvidia", "accelerator": "nvidia"}
    pools = node_pools(root, "prod-eastus2")
    gpu = [p for p in pools if p.sku and p.sku.gpus]
    assert gpu and all(p.labels[k] == v for p in gpu for k, v in GPU_LABELS.items())
    assert not any(k in p.labels for p in pools if p not in gpu for k in GPU_LABELS)
