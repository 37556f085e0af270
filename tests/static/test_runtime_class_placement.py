"""The placement rules judge the pods as the apiserver admits them: a RuntimeClass's scheduling (its tolerations and
nodeSelector) is merged into every pod that names it (the RuntimeClass admission plugin's setScheduling)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static


def _runtime_class(root: Path, scheduling: str) -> None:
    """base/ applies RuntimeClass gpu-rt with `scheduling` (its YAML body, indented under scheduling:)."""
    (root / "base/runtime-class.yaml").write_text(
        f"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: gpu-rt}}\nhandler: runc\nscheduling:\n{scheduling}")
    kustomization = root / "base/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("resources:\n", "resources:\n  - runtime-class.yaml\n", 1))


def _gpu_pool_tainted_with_runtime_class(root: Path, tolerated: str) -> None:
    """The GPU pool tainted sku=gpu:NoSchedule; every pod template (head, workers, submitter) of the three workloads names
    RuntimeClass gpu-rt, whose scheduling tolerates the taint `tolerated` (key=value)."""
    key, value = tolerated.split("=")
    _runtime_class(root, f"  tolerations:\n    - {{key: {key}, operator: Equal, value: {value}, effect: NoSchedule}}\n")
    pools = root / "terraform/node_pools.tf"
    pools.write_text(pools.read_text().replace("  node_taints = []", '  node_taints = ["sku=gpu:NoSchedule"]', 1))
    for path in (root / "workloads").glob("*.yaml"):
        text = re.sub(r"^( +)serviceAccountName: ray-workload\n", r"\g<0>\1runtimeClassName: gpu-rt\n", path.read_text(), flags=re.M)
        path.write_text(re.sub(r"^( +)restartPolicy: Never\n", r"\g<0>\1runtimeClassName: gpu-rt\n", text, flags=re.M))


def test_a_runtime_class_that_tolerates_the_pool_taint_is_clean(repo_copy):
    """The pods tolerate the GPU pool's taint through their RuntimeClass: no capacity error (the flavor-labels warnings
    that the tolerations come from the pods, not the flavor, at most)."""
    _gpu_pool_tainted_with_runtime_class(repo_copy, "sku=gpu")
    found = validate_repository(repo_copy).findings
    errors = [f for f in found if f.severity == "error"]
    assert errors == [], "\n".join(f.text() for f in errors)
    assert {f.rule for f in found} <= {"capacity-flavor-labels"}, "\n".join(f.text() for f in found)


def test_a_runtime_class_that_tolerates_another_taint_leaves_the_pool_out(repo_copy):
    """The same with a RuntimeClass tolerating another taint: the GPU pool stays out of reach (errors)."""
    _gpu_pool_tainted_with_runtime_class(repo_copy, "sku=other")
    found = validate_repository(repo_copy).findings
    assert "capacity-flavor-labels" in {f.rule for f in found if f.severity == "error"}, "\n".join(f.text() for f in found)


def _gpu_workers_with_runtime_class(root: Path, node_selector: str) -> None:
    """base/ applies RuntimeClass gpu-rt whose scheduling.nodeSelector is `node_selector` (key: value); the GPU worker
    template of llm-training names it (flavor gpu, which Kueue assigns those pods, labels them kubernetes.azure.com/accelerator: nvidia)."""
    _runtime_class(root, f"  nodeSelector:\n    {node_selector}\n")
    path = root / "workloads/llm-training.yaml"
    text, n = re.subn(r"^( +)serviceAccountName: ray-workload\n( +containers:\n +- name: ray-worker)",
                      r"\1runtimeClassName: gpu-rt\n\g<0>", path.read_text(), flags=re.M)
    assert n == 1, "the worker template of llm-training moved: update this test"
    path.write_text(text)


def test_a_runtime_class_node_selector_against_the_flavor_is_one_finding_at_it(repo_copy):
    """RuntimeClass gpu-rt selects kubernetes.azure.com/accelerator: amd, flavor gpu labels the pods kubernetes.azure.com/accelerator: nvidia. Kueue merges the
    flavor's labels into the template (the template itself sets no accelerator) and the RuntimeClass admission refuses
    every worker pod (setScheduling's conflict): one finding per cluster at the class's nodeSelector, naming both."""
    _gpu_workers_with_runtime_class(repo_copy, "kubernetes.azure.com/accelerator: amd")
    found = validate_repository(repo_copy).findings
    assert found, "the conflict was not reported"
    assert all(f.rule == "capacity-pod-placement" and (f.file, f.line) == ("base/runtime-class.yaml", 6) for f in found), \
        "\n".join(f.text() for f in found)
    assert len(found) == len({f.context for f in found}), "\n".join(f.text() for f in found)  # one per cluster
    for f in found:
        assert "runtimeClass.scheduling.nodeSelector[kubernetes.azure.com/accelerator] = amd" in f.message and "flavor gpu" in f.message, f.text()
        assert "workloads/llm-training.yaml:" in f.message and "kubernetes.azure.com/accelerator: nvidia" in f.hint, f.text()


def test_a_runtime_class_node_selector_that_agrees_with_the_flavor_is_clean(repo_copy):
    """The same RuntimeClass selecting kubernetes.azure.com/accelerator: nvidia, as the flavor does: nothing to report."""
    _gpu_workers_with_runtime_class(repo_copy, "kubernetes.azure.com/accelerator: nvidia")
    found = validate_repository(repo_copy).findings
    assert found == [], "\n".join(f.text() for f in found)
