"""Capacity verdicts on the right basis, with the fix per cause (hostile review D, #3 #5 #6 #7): the kubelet's disk
(kubelet_disk_type), GPU Feature Discovery's labels, zonal pools with fewer nodes than zones, and hints that name
the pool's vm_size line, the pod's own constraint or the flavor order."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from tests.static.test_gate_corpus import edit, write

pytestmark = pytest.mark.static

KUEUE = "flux/infrastructure/controllers/kueue.yaml"
EXCLUDE_EPHEMERAL = ("        featureGates:\n", "        resources:\n          excludeResourcePrefixes: [ephemeral-storage]\n        featureGates:\n")
GPU_DRIVER = "  gpu_driver  = var.gpu_driver\n"


def _text(found) -> str:
    return "\n".join(f.text() for f in found)


@pytest.mark.parametrize("temp_disk,verdict", [(None, "warning"), (64, "error"), (2000, None)])
def test_a_temporary_kubelet_disk_is_sized_from_the_temp_disk(repo_copy: Path, temp_disk, verdict):
    """With kubelet_disk_type = "Temporary" the kubelet's storage is the VM's temp disk: os_disk_size_gb plays no part. A
    size whose temp disk the gate does not know gives a not-judged warning, not a verdict from the OS disk."""
    edit(repo_copy, KUEUE, *EXCLUDE_EPHEMERAL)
    edit(repo_copy, "terraform/node_pools.tf", GPU_DRIVER, GPU_DRIVER + '  kubelet_disk_type = "Temporary"\n')
    edit(repo_copy, "workloads/llm-training.yaml", 'requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1"}',
         'requests: {cpu: "16", memory: 128Gi, nvidia.com/gpu: "1", ephemeral-storage: 400Gi}')
    if temp_disk is not None:
        write(repo_copy, ".ray-kueue-gate.yaml", "skus:\n" + "".join(
            f"  {size}: {{vcpu: {cpu}, memory_gib: {mem}, gpus: {gpus}, gpu: A100 80GB, temp_disk_gib: {temp_disk}}}\n"
            for size, cpu, mem, gpus in (("Standard_NC24ads_A100_v4", 24, 220, 1), ("Standard_ND96amsr_A100_v4", 96, 1900, 8))))
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("capacity")]
    if verdict is None:
        assert found == [], _text(found)
        return
    assert found and all(f.rule == "capacity-pod-fits-node" and f.location().startswith("workloads/llm-training.yaml:") for f in found), _text(found)
    assert all(f.severity == verdict for f in found), _text(found)
    assert all("os_disk_size_gb" not in f.hint or "kubelet_disk_type" in f.hint for f in found), _text(found)
    if verdict == "warning":
        assert all("not judged" in f.message and "temp_disk_gib" in f.hint for f in found), _text(found)
    else:
        assert all("temp disk" in f.hint and "kubelet_disk_type" in f.hint for f in found), _text(found)
