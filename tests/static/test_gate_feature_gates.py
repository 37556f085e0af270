"""The gate runs Kueue's code with the feature gates of the cluster's Kueue manager (its configuration's featureGates,
or the Helm values' controllerManager.featureGates that the chart passes as --feature-gates), not with Kueue's defaults:
an elastic RayJob (the in-tree autoscaler, workload slices) is refused by Kueue's webhook where the manager leaves
ElasticJobsViaWorkloadSlices off and accepted where it turns it on. And Kueue's webhook defaulting as the manager
runs it: an unlabelled RayJob is queued where its namespace has a LocalQueue `default` (LocalQueueDefaulting)."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from harness.gate import kueue_manager, render_sample, validate_repository
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


VALUES_GATES = "    controllerManager:\n      featureGates:\n        - {name: %s, enabled: %s}\n"
CONFIG_GATES = "        featureGates:\n          FinishOrphanedWorkloads: false\n"


@pytest.mark.parametrize("name,enabled,keep_config,said", [
    (ELASTIC, "true", True, "feature gates for CLI and configuration cannot both specified"),
    ("ElasticJobsViaWorkloadSlice", "true", False, "unrecognized feature gate: ElasticJobsViaWorkloadSlice"),
    (ELASTIC, '"true"', False, "entries the chart cannot pass as --feature-gates"),
], ids=["in-both-places", "unknown-name", "enabled-not-a-bool"])
def test_helm_values_gates_the_manager_refuses_are_one_finding_at_them(repo_copy, name, enabled, keep_config, said):
    """The chart passes controllerManager.featureGates as --feature-gates; Kueue's manager refuses them beside the
    configuration's featureGates, or with a name it does not know, and exits (cmd/kueue: ValidateFeatureGates, Set)."""
    if not keep_config:
        edit(repo_copy, KUEUE, CONFIG_GATES, "")
    edit(repo_copy, KUEUE, "    controllerManager:\n", VALUES_GATES % (name, enabled))
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "kueue-config"]
    assert found and all(f.file == KUEUE and f.line == 46 and said in f.message for f in found), found


def test_a_missing_topology_is_no_finding_where_the_manager_turns_topology_aware_scheduling_off(repo_copy):
    """Kueue adds TopologyNotFound to a ClusterQueue only with TopologyAwareScheduling on (cache.go handleTASFlavor)."""
    edit(repo_copy, "base/resource-flavors.yaml", "  name: gpu\nspec:\n", "  name: gpu\nspec:\n  topologyName: gpu-topology\n")
    assert [f.rule for f in validate_repository(repo_copy).findings if f.rule == "clusterqueue-topology"]
    edit(repo_copy, KUEUE, "          FinishOrphanedWorkloads: false\n", "          FinishOrphanedWorkloads: false\n          TopologyAwareScheduling: false\n")
    assert [f for f in validate_repository(repo_copy).findings if f.rule == "clusterqueue-topology"] == []


def test_a_plain_build_meets_the_manager_of_the_clusters_that_include_it(repo_copy):
    """Only prod-eastus2 (team-queues) turns workload slices on, by a Flux patch of its own: an elastic RayJob the
    team-queues overlay lists is judged with prod's gates, in the overlay's plain build too."""
    hr = next(d for d in yaml.safe_load_all((repo_copy / KUEUE).read_text()) if d and d.get("kind") == "HelmRelease")
    config = hr["spec"]["values"]["managerConfig"]["controllerManagerConfigYaml"]
    config = config.replace("  FinishOrphanedWorkloads: false\n", f"  FinishOrphanedWorkloads: false\n  {ELASTIC}: true\n")
    ks = repo_copy / "clusters/prod-eastus2/infrastructure.yaml"
    ks.write_text(ks.read_text().rstrip("\n") + "\n  patches:\n    - target: {kind: HelmRelease, name: kueue}\n      patch: |\n"
                  "        - op: replace\n          path: /spec/values/managerConfig/controllerManagerConfigYaml\n"
                  f"          value: {json.dumps(config)}\n")
    job = render_sample("batch-inference", "team-a")
    job["metadata"].update(name="elastic-probe", annotations={"kueue.x-k8s.io/elastic-job": "true"})
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    (repo_copy / "overlays/team-queues/elastic-probe.yaml").write_text(yaml.safe_dump(job))
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "resources:\n", "resources:\n  - elastic-probe.yaml\n")
    assert _refusals(repo_copy) == []


def test_a_gate_the_helper_refuses_leaves_the_next_requests_gates_alone():
    """A manager with a gate Kueue does not know (which kueue-config reports) is judged with the defaults, and the
    requests after it still meet their own gates and load their configurations."""
    job = render_sample("aurora-finetune", "team-a")
    job["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/elastic-job"] = "true"
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    checker = Checker().start()
    (refused,) = checker.check([job], managers=[{"config": None, "gates": {"NoSuchGate": True, ELASTIC: True}}])
    assert refused is not None and REFUSAL in refused.errors[0]["message"], refused
    assert checker.check([job], managers=[{"config": None, "gates": {ELASTIC: True}}]) == [None]
    config = f"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfeatureGates:\n  {ELASTIC}: true\n"
    assert kueue_manager.refusals(config) == ()


@pytest.mark.parametrize("layout,queued", [("single-queue", True), ("team-queues", False)])
def test_an_unlabelled_rayjob_is_queued_where_its_namespace_has_a_default_localqueue(repo_copy, layout, queued):
    """LocalQueueDefaulting (locked on in Kueue 0.17): Kueue's mutating webhook labels a RayJob without a queue-name label
    for its namespace's LocalQueue `default` (single-queue has one in namespace ray, team-queues none); the gate judges
    it as queued then, here a worker group Kueue would undercharge."""
    job = render_sample("batch-inference", "none")
    job["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")
    job["metadata"]["name"] = "nightly-batch"
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(replicas=1, minReplicas=2, maxReplicas=2)
    (repo_copy / "clusters/dev-westus3/queues/nightly-batch.yaml").write_text(yaml.safe_dump(job))
    edit(repo_copy, "clusters/dev-westus3/queues/kustomization.yaml", "resources:\n  - ../../../overlays/single-queue\n",
         f"resources:\n  - ../../../overlays/{layout}\n  - nightly-batch.yaml\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "kueue-unaccounted-pods"]
    assert bool(found) == queued and all(f.file == "clusters/dev-westus3/queues/nightly-batch.yaml" for f in found), found


KUBERAY = "flux/infrastructure/controllers/kuberay-operator.yaml"
KUBERAY_VALUES = "  values:\n    image:\n"
SUSPENDED = "worker group gpu-workers can be suspended only when the RayJobDeletionPolicy feature gate is enabled"


def _kuberay_gates(root, entries: str) -> None:
    edit(root, KUBERAY, KUBERAY_VALUES, f"  values:\n    featureGates:\n{entries}    image:\n")


def test_kuberay_checks_run_with_the_gates_its_helm_values_set(repo_copy):
    """KubeRay 1.6's validation refuses a suspended worker group where RayJobDeletionPolicy is off (on by default): the
    gate judges the sample with the operator's values.featureGates, which the chart passes as --feature-gates."""
    edit(repo_copy, SAMPLE, "      - groupName: gpu-workers\n", "      - groupName: gpu-workers\n        suspend: true\n")
    refused = lambda: [f for f in validate_repository(repo_copy).findings if f.rule == "kuberay-validation" and SUSPENDED in f.message]
    assert refused() == []
    _kuberay_gates(repo_copy, "      - {name: RayJobDeletionPolicy, enabled: false}\n")
    found = refused()
    assert found and all(f.file == SAMPLE for f in found), found


@pytest.mark.parametrize("entries,said", [
    ("      - {name: RayCronJob, enabled: true}\n", None),
    ("      - {name: RayCronJobs, enabled: true}\n", "unrecognized feature gate: RayCronJobs"),
    ("      - {name: TopologyAwareScheduling, enabled: true}\n", "unrecognized feature gate: TopologyAwareScheduling"),
    ('      - {name: RayCronJob, enabled: "yes"}\n', "entries the chart cannot pass as --feature-gates"),
], ids=["known", "unknown-name", "a-kueue-gate", "enabled-not-a-bool"])
def test_kuberay_helm_values_gates_the_operator_refuses_are_one_finding_at_them(repo_copy, entries, said):
    """KubeRay's main sets --feature-gates on its process's gate and exits when that fails; Kueue's gates are not
    registered there (they are in the gate's helper, which runs both operators' code)."""
    _kuberay_gates(repo_copy, entries)
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "kuberay-feature-gates"]
    if said is None:
        assert found == []
    else:
        lines = (repo_copy / KUBERAY).read_text().splitlines()
        assert found and all(f.file == KUBERAY and lines[f.line - 1].strip() == "featureGates:" and said in f.message for f in found), found


def test_a_kuberay_gate_in_the_kueue_configuration_is_refused_as_kueues_manager_refuses_it():
    """Kueue's manager registers only Kueue's gates: a KubeRay gate in its configuration's featureGates ends it at start."""
    config = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfeatureGates:\n  RayCronJob: true\n"
    assert [p["detail"] for p in kueue_manager.refusals(config)] == ["unrecognized feature gate: RayCronJob"]
    assert [p["detail"] for p in kueue_manager.refusals(kueue_manager.CHART_CONFIG, "RayJobDeletionPolicy=false")] == \
        ["unrecognized feature gate: RayJobDeletionPolicy"]


def test_a_gate_neither_the_values_nor_the_configuration_set_is_at_kueues_own_default():
    """The default comes from the pinned Kueue's features registry (through the helper), not from a copy kept here."""
    assert kueue_manager.feature_enabled(None, "TopologyAwareScheduling") is True  # beta, on since Kueue 0.14
    assert kueue_manager.feature_enabled(None, ELASTIC) is False
    assert kueue_manager.feature_enabled({"config": None, "gates": {"TopologyAwareScheduling": False}}, "TopologyAwareScheduling") is False


def test_the_manager_validates_its_gates_before_it_sets_them():
    """cmd/kueue runs ValidateFeatureGates before it sets --feature-gates, so the gate dependencies it reads from the
    process-wide gate are Kueue's defaults there: ElasticJobsViaWorkloadSlicesWithTAS alone on the command line starts the
    manager. The helper validates under the defaults too, whatever gates other requests run under meanwhile."""
    elastic = {"config": None, "gates": {ELASTIC: True, "ElasticJobsViaWorkloadSlicesWithTAS": True}}
    checker = Checker().start()
    job = render_sample("aurora-finetune", "team-a")
    with ThreadPoolExecutor(4) as pool:
        running = [pool.submit(checker.check, [job], None, [elastic]) for _ in range(4)]
        assert kueue_manager.refusals(kueue_manager.CHART_CONFIG, "ElasticJobsViaWorkloadSlicesWithTAS=true") == ()
        [r.result() for r in running]


def test_the_ray_integrations_the_gate_knows_are_kueues_own_framework_names():
    """sample_admission.INTEGRATIONS: the pinned Kueue manager accepts each name in integrations.frameworks."""
    from harness.gate.sample_admission import INTEGRATIONS

    config = ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks:\n"
              + "".join(f"    - {name}\n" for name in INTEGRATIONS.values()))
    assert kueue_manager.refusals(config) == ()


def test_a_queued_raycluster_is_judged_by_the_integrations_the_manager_enables(repo_copy):
    from tests.static.test_gate_corpus import raycluster_sample

    raycluster_sample(repo_copy)
    assert [f.rule for f in validate_repository(repo_copy).findings if f.rule == "kueue-integration-off"] == ["kueue-integration-off"]
    edit(repo_copy, KUEUE, "            - ray.io/rayjob\n", "            - ray.io/rayjob\n            - ray.io/raycluster\n")
    assert [f for f in validate_repository(repo_copy).findings if f.rule == "kueue-integration-off"] == []
