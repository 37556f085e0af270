"""The gate runs Kueue's code with the feature gates of the cluster's Kueue manager (its configuration's featureGates,
or the Helm values' controllerManager.featureGates that the chart passes as --feature-gates), not with Kueue's defaults:
an elastic RayJob (the in-tree autoscaler, workload slices) is refused by Kueue's webhook where the manager leaves
ElasticJobsViaWorkloadSlices off and accepted where it turns it on."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from harness.gate import render_sample, validate_repository
from harness.gate.schema_check import Checker
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

KUEUE = "flux/infrastructure/controllers/kueue.yaml"
SAMPLE = "workloads/aurora-finetune.yaml"
ELASTIC = "ElasticJobsViaWorkloadSlices"
REFUSAL = "a kueue managed job should only use autoscaling when workload slicing is enabled"


def _elastic_sample(root) -> None:
    edit(root, SAMPLE, "    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n",
         '    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n  annotations:\n    kueue.x-k8s.io/elastic-job: "true"\n')
    edit(root, SAMPLE, "    enableInTreeAutoscaling: false\n", "    enableInTreeAutoscaling: true\n")


def _refusals(root) -> list:
    return [f for f in validate_repository(root).findings if f.rule == "kueue-webhook" and REFUSAL in f.message]


def test_an_elastic_job_is_refused_where_the_manager_keeps_kueues_default(repo_copy):
    _elastic_sample(repo_copy)
    found = _refusals(repo_copy)
    assert found and all(f.file == SAMPLE for f in found), found


def test_an_elastic_job_is_accepted_where_the_manager_configuration_enables_workload_slices(repo_copy):
    _elastic_sample(repo_copy)
    edit(repo_copy, KUEUE, "          FinishOrphanedWorkloads: false\n", f"          FinishOrphanedWorkloads: false\n          {ELASTIC}: true\n")
    assert _refusals(repo_copy) == []


def test_an_elastic_job_is_accepted_where_the_helm_values_enable_workload_slices(repo_copy):
    """The chart's --feature-gates (Kueue refuses them beside the configuration's featureGates: those go)."""
    _elastic_sample(repo_copy)
    edit(repo_copy, KUEUE, "        featureGates:\n          FinishOrphanedWorkloads: false\n", "")
    edit(repo_copy, KUEUE, "    controllerManager:\n", f"    controllerManager:\n      featureGates:\n        - {{name: {ELASTIC}, enabled: true}}\n")
    report = validate_repository(repo_copy)
    assert not [f for f in report.findings if f.rule in ("kueue-webhook", "kueue-config")], report.findings


def test_checks_under_different_managers_at_once_each_meet_their_own_gates():
    """The helper's gates are process-wide: requests under other gates wait for each other, none sees the other's."""
    job = render_sample("aurora-finetune", "team-a")
    job["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/elastic-job"] = "true"
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    checker = Checker().start()
    on = {"config": None, "gates": {ELASTIC: True}}
    managers = [on if i % 2 else None for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        verdicts = list(pool.map(lambda m: checker.check([job], managers=[m])[0], managers))
    for manager, problem in zip(managers, verdicts):
        if manager is None:
            assert problem is not None and REFUSAL in problem.errors[0]["message"], problem
        else:
            assert problem is None, problem
