"""operator-placement: the Kueue chart's controller-manager pod, rendered with the HelmRelease's values, placed on each
cluster's own node pools by kube-scheduler's plugins (harness/gate/operator_placement.py, tools/kubecheck `place`)."""
from __future__ import annotations

import pytest

from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import KUEUE, edit, kueue_controller

pytestmark = pytest.mark.static


def _placement(root):
    return [f for f in validate_repository(root).findings if f.rule == "operator-placement"]


def test_a_request_above_the_system_pool_is_an_error_at_the_request(repo_copy):
    """4 CPUs on the system pool (Standard_D4ds_v6: 3.86 allocatable): Pending on every cluster, each judged with its pools."""
    kueue_controller(repo_copy, "4", "kubernetes.azure.com/mode: system")
    found = _placement(repo_copy)
    assert sorted((f.file, f.line, f.context.split(":")[0]) for f in found) == [
        (KUEUE, 52, "cluster dev-westus3"), (KUEUE, 52, "cluster prod-eastus2")], "\n".join(f.text() for f in found)
    for f in found:
        assert f.is_error and "Insufficient cpu" in f.message and "Deployment kueue-controller-manager" in f.message
        assert "cpu 4 requested, 3.86 allocatable on a Standard_D4ds_v6 node of pool system" in f.hint
        assert "system_vm_size" in f.hint


def test_a_request_that_fits_is_clean(repo_copy):
    kueue_controller(repo_copy, "2", "kubernetes.azure.com/mode: system")
    assert validate_repository(repo_copy).findings == []


def test_a_selector_no_pool_carries_is_an_error_at_the_entry(repo_copy):
    edit(repo_copy, KUEUE, "      # The system pool is tainted", "      nodeSelector:\n        agentpool: nope\n      # The system pool is tainted")
    found = _placement(repo_copy)
    assert {(f.file, f.line) for f in found} == {(KUEUE, 51)} and len(found) == 2, "\n".join(f.text() for f in found)
    assert all("didn't match Pod's node affinity/selector" in f.message and "agentpool=system" in f.hint for f in found)


def test_an_untolerated_taint_names_the_charts_tolerations(repo_copy):
    """The system pool selected without the CriticalAddonsOnly toleration: the chart's own key, found by rendering a probe."""
    kueue_controller(repo_copy, "1", "kubernetes.azure.com/mode: system")
    edit(repo_copy, KUEUE, "      tolerations:\n        - key: CriticalAddonsOnly\n          operator: Exists\n          effect: NoSchedule\n", "")
    found = _placement(repo_copy)
    assert {(f.file, f.line) for f in found} == {(KUEUE, 45)}, "\n".join(f.text() for f in found)
    assert all("CriticalAddonsOnly=true:NoSchedule" in f.hint and "controllerManager.tolerations" in f.hint for f in found)
