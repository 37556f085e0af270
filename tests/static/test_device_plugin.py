"""Layer 1's NVIDIA device plugin (flux/infrastructure/controllers/nvidia-device-plugin.yaml) as the gate sees it: its chart
rendered with the HelmRelease's values (harness.gate.chart_render), its DaemonSet's pods on the GPU pools' nodes only
(harness.gate.daemonsets), and capacity-gpu-driver's placement judgement (harness.gate.gpu_driver). The broken variants
(plugin removed, GPU pool taint not tolerated) are CORPUS cases of tests/static/test_gate_corpus.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.versions import REPO_ROOT
from harness.gate import chart_render, config, daemonsets, node_pools, validate_repository
from harness.gate.render import render_repository
from tests.static.test_gate_corpus import append, edit

pytestmark = pytest.mark.static

PLUGIN = "flux/infrastructure/controllers/nvidia-device-plugin.yaml"
def _taint_gpu_pool(root: Path, effect: str = "NoSchedule") -> None:
    """A fork that taints its GPU pool sku=gpu:NoSchedule (as AKS's GPU guide does; or another effect), its `gpu` flavor
    tolerating it and a CPU node for the pods that do not."""
    edit(root, "terraform/node_pools.tf", "  node_taints = []\n", f'  node_taints = ["sku=gpu:{effect}"]\n')
    append(root, "base/resource-flavors.yaml", f"  tolerations:\n    - {{key: sku, operator: Equal, value: gpu, effect: {effect}}}\n")
    for cluster in ("prod-eastus2", "dev-westus3"):
        append(root, f"terraform/clusters/{cluster}.tfvars", "cpu_node_count = 1\n")


def test_the_shipped_plugin_runs_one_pod_on_each_gpu_node_and_nothing_else():
    """The chart rendered with the shipped values: the plugin's DaemonSet lands on the GPU pool only (kubernetes.azure.com/accelerator:
    nvidia), takes one pod slot there, and the chart's node-feature-discovery subchart, off unless nfd.enabled or
    gfd.enabled, is not rendered (Helm's ProcessDependencies, as helm install runs it)."""
    _, clusters = render_repository(REPO_ROOT, gate_config=config.DEFAULTS)
    for cluster in clusters:
        if cluster.name == "local":
            continue
        charted = chart_render.chart_objects(config.DEFAULTS, REPO_ROOT, cluster)
        names = {o["metadata"]["name"] for _, o in charted}
        assert "nvidia-device-plugin" in names and not any("node-feature-discovery" in n for n in names), names
        pools = {p.name: p for p in daemonsets.on_pools([o for _, o in charted], node_pools(REPO_ROOT, cluster.name))}
        assert pools["gpupool"].daemon_names == ("nvidia-device-plugin",) and pools["gpupool"].daemons["pods"] == 1, pools["gpupool"]
        assert not pools["system"].daemon_names and not pools["cpupool"].daemon_names


def test_a_tainted_gpu_pool_is_clean_with_the_shipped_plugin(repo_copy: Path):
    """The shipped plugin tolerates every NoSchedule taint (its affinity keeps it to GPU nodes): a fork's
    sku=gpu:NoSchedule GPU pool needs no edit of the plugin."""
    _taint_gpu_pool(repo_copy)
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_tainted_gpu_pool_the_plugin_tolerates_is_clean(repo_copy: Path):
    """A NoExecute taint, with the plugin given its toleration: clean."""
    _taint_gpu_pool(repo_copy, "NoExecute")
    append(repo_copy, PLUGIN, "      - key: sku\n        operator: Equal\n        value: gpu\n        effect: NoExecute\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_tainted_gpu_pool_the_plugin_does_not_tolerate_is_one_finding_per_cluster_at_its_tolerations(repo_copy: Path):
    _taint_gpu_pool(repo_copy, "NoExecute")
    report = validate_repository(repo_copy)
    line = next(i + 1 for i, text in enumerate((repo_copy / PLUGIN).read_text().splitlines()) if text.strip() == "tolerations:")
    assert [(f.rule, f.file, f.line, f.context) for f in report.findings] == [
        ("capacity-gpu-driver", PLUGIN, line, f"cluster {c}") for c in ("dev-westus3", "prod-eastus2")], \
        "\n".join(f.text() for f in report.findings)
    assert all("sku=gpu:NoExecute" in f.message and "sku=gpu:NoExecute" in f.hint for f in report.findings)


def test_a_plugin_affinity_that_selects_no_gpu_node_is_found_at_the_affinity(repo_copy: Path):
    text = (repo_copy / PLUGIN).read_text()
    (repo_copy / PLUGIN).write_text(text.replace('values: ["nvidia"]', 'values: ["amd"]'))
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-gpu-driver"]
    line = next(i + 1 for i, t in enumerate(text.splitlines()) if t.strip() == "affinity:")
    assert found and {(f.file, f.line) for f in found} == {(PLUGIN, line)}, "\n".join(f.text() for f in found)


def test_gpu_driver_none_with_only_the_device_plugin_still_needs_the_driver(repo_copy: Path):
    """The plugin advertises GPUs the driver reports: gpu_driver = "None" without the GPU Operator is still the finding,
    at gpu_driver, and says the plugin is there (its hint does not ask to add it)."""
    append(repo_copy, "terraform/clusters/prod-eastus2.tfvars", 'gpu_driver = "None"\n')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-gpu-driver"]
    assert [(f.file, f.context) for f in found] == [("terraform/clusters/prod-eastus2.tfvars", "cluster prod-eastus2")], \
        "\n".join(f.text() for f in found)
    assert "nor does any NVIDIA device plugin" not in found[0].message and "nvidia-device-plugin.yaml" not in found[0].hint
