"""Installs the pinned Kueue and KubeRay operator into a kind cluster (the `kind` backend).

The manifests come from the same Go module versions the local backend builds (their
kustomize `config/` trees), with the production images from MCR. One worker gets the labels
AKS puts on GPU nodes (harness.gate.node_labels.GPU_LABELS) and fake nvidia.com/gpu capacity, so the `gpu` flavor has a node.
Runs only where Docker and the image registries are reachable (GitHub-hosted runners).
"""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from harness import toolchain as tools
from harness.cluster.kind_cluster import KindCluster
from harness.core import timeouts, versions
from harness.gate import GPU_LABELS

FAKE_GPUS = "8"


def _kustomize(directory: Path, images: dict[str, str]) -> str:
    """Builds a module's read-only kustomize tree from a writable overlay that swaps the image."""
    kustomize = tools.ensure("kustomize")["kustomize"].path()
    with tempfile.TemporaryDirectory() as tmp:
        lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", f"resources: [{directory}]", "images:"]
        for name, new in images.items():
            repo, tag = new.rsplit(":", 1)
            lines += [f"  - name: {name}", f"    newName: {repo}", f"    newTag: {tag}"]
        (Path(tmp) / "kustomization.yaml").write_text("\n".join(lines) + "\n")
        return subprocess.run([str(kustomize), "build", tmp, "--load-restrictor=LoadRestrictionsNone"],
                              check=True, capture_output=True, text=True).stdout


def install_controllers(cluster: KindCluster) -> None:
    kueue = versions.pins()["kueue"]
    kuberay = versions.pins()["kuberay"]
    kueue_yaml = _kustomize(tools.module_dir("kueue") / "config/default",
                            {"registry.k8s.io/kueue/kueue": f"mcr.microsoft.com/oss/v2/kueue/kueue:v{kueue['production']}"})
    ray_yaml = _kustomize(tools.module_dir("kuberay") / "config/default",
                          {"kuberay/operator": f"mcr.microsoft.com/oss/v2/kuberay/operator:v{kuberay['production']}"})
    for manifest in (ray_yaml, kueue_yaml):
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=manifest)
    cluster.kubectl("-n", "kueue-system", "rollout", "status", "deploy/kueue-controller-manager", f"--timeout={timeouts.KIND_ROLLOUT:.0f}s",
                    timeout=timeouts.KIND_ROLLOUT + timeouts.KIND_KUBECTL)
    nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json"))["items"]
    node = nodes[-1]["metadata"]["name"]
    cluster.kubectl("label", "node", node, *(f"{k}={v}" for k, v in GPU_LABELS.items()), "--overwrite")
    patch = json.dumps([{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": FAKE_GPUS}])
    cluster.kubectl("patch", "node", node, "--subresource=status", "--type=json", "-p", patch)
