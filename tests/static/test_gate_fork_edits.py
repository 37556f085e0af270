"""The gate on a fork's everyday edits (review F): findings at the document and line the user has to change."""
from __future__ import annotations

import pytest

from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import PROD, TEAM_A, TEAM_B, append, edit, write

pytestmark = pytest.mark.static


def _text(report) -> str:
    return "\n".join(f.text() for f in report.findings)


def test_a_local_queue_named_as_another_namespaces_is_found_at_its_own_document(repo_copy):
    """LocalQueue `default` in namespace ray and in namespace team-c: the finding of the team-c one is at its document."""
    append(repo_copy, TEAM_A, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: default, namespace: ray}\n"
                              "spec: {clusterQueue: team-a-cq}\n")
    append(repo_copy, TEAM_B, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-c\n---\napiVersion: kueue.x-k8s.io/v1beta2\n"
                              "kind: LocalQueue\nmetadata:\n  name: default\n  namespace: team-c\nspec:\n  clusterQueue: team-b-cq\n  stopPolicy: Hld\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("api-validation", TEAM_B, 54)], _text(report)


def test_a_workload_with_a_fixed_queue_label_is_one_finding_at_the_label(repo_copy):
    """The label written as team-a, not ${QUEUE_NAME}: the entries' `queue` (default on dev, team-b on prod) is not what is
    submitted. One finding at the label for both clusters, none at samples.yaml (which is not what to change)."""
    edit(repo_copy, "workloads/batch-inference.yaml", "kueue.x-k8s.io/queue-name: ${QUEUE_NAME}", "kueue.x-k8s.io/queue-name: team-a")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("sample-vars", "workloads/batch-inference.yaml", 11)], _text(report)
    assert "${QUEUE_NAME}" in report.findings[0].hint and "prod-eastus2" in report.findings[0].context, _text(report)


@pytest.mark.parametrize("key,said", [("Vars", "spell it `vars`"), ("var", "spell it `vars`"), ("namespace", "${NAMESPACE}")])
def test_an_unknown_key_of_a_samples_entry_is_a_finding_at_its_line(repo_copy, key, said):
    """A misspelt `vars` would leave every default in place (the job checked with 4 workers, not 2)."""
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', f'{key}: {{NUM_WORKERS: "2"}}' if key != "namespace"
         else 'vars: {NUM_WORKERS: "4"}\n  namespace: team-c')
    report = validate_repository(repo_copy)
    line = 10 if key == "namespace" else 9
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("sample-render", f"{PROD}/samples.yaml", line)], _text(report)
    assert said in report.findings[0].hint, _text(report)


ND96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"


@pytest.mark.parametrize("limit,named", [("47", False), ("10", True)])
def test_the_fit_hint_names_a_borrowing_limit_only_when_it_caps_the_maximum(repo_copy, limit, named):
    """100 CPU on team-a: Kueue's maximum is min(nominal + borrowingLimit, nominal + what the cohort lends). With the
    repository's limit 47 both are 94 (raising the limit cannot help); with 10 the limit is what caps it (57)."""
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "6"}')
    edit(repo_copy, ND96, 'resources/0/borrowingLimit, value: "47"}', f'resources/0/borrowingLimit, value: "{limit}"}}')
    fits = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-fits"]
    assert len(fits) == 1 and ("borrowingLimit" in fits[0].hint) == named, "\n".join(f.text() for f in fits)


def test_a_renamed_workload_namespace_is_one_federated_subject_finding_at_the_value(repo_copy):
    """Namespace ray renamed ml in Git, Terraform left as it is: one finding at workload_namespace's default, naming every
    variable set that gives it; a cluster's tfvars that sets it wrong, at that line."""
    for rel in ("base/namespace.yaml", "base/service-account.yaml", "workloads/batch-inference.yaml", "workloads/llm-training.yaml",
                "workloads/aurora-finetune.yaml", TEAM_A, TEAM_B, "overlays/single-queue/cluster-queue.yaml"):
        path = repo_copy / rel
        path.write_text(path.read_text().replace("\n  namespace: ray\n", "\n  namespace: ml\n").replace("\n  name: ray\n", "\n  name: ml\n"))
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "terraform-federated-subject"]
    assert [(f.file, f.line) for f in found] == [("terraform/variables.tf", 334)], "\n".join(f.text() for f in found)
    assert 'workload_namespace = "ml"' in found[0].hint and "prod-eastus2.tfvars" in found[0].message, found[0].text()
    append(repo_copy, "terraform/clusters/prod-eastus2.tfvars", 'workload_namespace = "ray"\n')
    edit(repo_copy, "terraform/variables.tf", 'default     = "ray"\n', 'default     = "ml"\n')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "terraform-federated-subject"]
    lines = len((repo_copy / "terraform/clusters/prod-eastus2.tfvars").read_text().splitlines())
    assert [(f.file, f.line) for f in found] == [("terraform/clusters/prod-eastus2.tfvars", lines)], "\n".join(f.text() for f in found)


def test_seven_worker_groups_in_k8s_job_mode_are_reported_at_the_worker_groups_with_the_pod_set_limit(repo_copy):
    """Kueue's webhook lets 7 worker groups through; with K8sJobMode's submitter the Workload has 9 pod sets (at most 8)."""
    groups = "".join(f"      - groupName: w{i}\n        replicas: 1\n        minReplicas: 1\n        maxReplicas: 1\n        rayStartParams: {{}}\n"
                     "        template:\n          spec:\n            containers:\n              - name: ray-worker\n"
                     "                image: ${RAY_IMAGE}\n                resources:\n"
                     '                  requests: {cpu: "1", memory: 1Gi}\n                  limits: {cpu: "1", memory: 1Gi}\n' for i in range(6))
    edit(repo_copy, "workloads/batch-inference.yaml", "    workerGroupSpecs:\n", "    workerGroupSpecs:\n" + groups)
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("kueue-inadmissible", "workloads/batch-inference.yaml", 65)], _text(report)
    assert "at most 6 worker groups" in report.findings[0].hint, _text(report)


def test_a_number_beyond_int32_is_refused_by_kueues_webhook_at_its_line(repo_copy):
    """The apiserver drops format: int32 from CRD schemas and accepts 3000000000; Kueue's webhook cannot decode it (400)."""
    edit(repo_copy, TEAM_A, "    reclaimWithinCohort: Any\n",
         "    reclaimWithinCohort: Any\n    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 3000000000}\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("kueue-webhook", TEAM_A, 15)], _text(report)
    assert "2147483647" in report.findings[0].hint, _text(report)
    edit(repo_copy, TEAM_A, "maxPriorityThreshold: 3000000000", "maxPriorityThreshold: 2147483647")
    assert validate_repository(repo_copy).findings == []


TEAM_C = ("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-c\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
          "metadata:\n  name: team-c\n  namespace: team-c\nspec:\n  clusterQueue: team-b-cq\n")


def test_an_entry_on_another_namespaces_queue_is_reported_at_the_entry(repo_copy):
    """A team in its own namespace: the entry naming its queue is what to change (the workload's namespace is right for the
    other entries); the hint gives the ${NAMESPACE} var that submits this one entry there."""
    append(repo_copy, TEAM_B, TEAM_C)
    append(repo_copy, f"{PROD}/samples.yaml", "- sample: batch-inference\n  queue: team-c\n  vars: {JOB_NAME: bi-c}\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("sample-queue", f"{PROD}/samples.yaml", 13)], _text(report)
    assert "vars: {NAMESPACE: team-c}" in report.findings[0].hint, _text(report)


def test_a_team_namespace_needs_its_storage_config_map_and_a_federated_credential(repo_copy):
    """The sample in team-c with a copy of the workload ServiceAccount: the ConfigMaps its containers read and mount are only in ray,
    and the federated credential trusts only ray/ray-workload. With both added, clean."""
    append(repo_copy, TEAM_B, TEAM_C + "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ray-workload\n  namespace: team-c\n"
                              '  annotations:\n    azure.workload.identity/client-id: "${WORKLOAD_IDENTITY_CLIENT_ID}"\n')
    edit(repo_copy, "workloads/batch-inference.yaml", "  namespace: ray\n", "  namespace: ${NAMESPACE}\n")
    append(repo_copy, "workloads/defaults.yaml", "NAMESPACE: ray\n")
    append(repo_copy, f"{PROD}/samples.yaml", "- sample: batch-inference\n  queue: team-c\n  vars: {JOB_NAME: bi-c, NAMESPACE: team-c}\n")
    report = validate_repository(repo_copy)
    assert sorted((f.rule, f.file, f.line) for f in report.findings) == [
        ("object-ref", "workloads/batch-inference.yaml", 56), ("object-ref", "workloads/batch-inference.yaml", 64),
        ("terraform-federated-subject", TEAM_B, 55)], _text(report)
    hints = sorted(f.hint for f in report.findings if f.rule == "object-ref")
    assert hints[0].startswith("add ConfigMap batch-inference-scripts to namespace team-c as it is written for ray"), _text(report)
    assert hints[1].startswith("add ConfigMap ray-storage to namespace team-c as it is written for ray"), _text(report)
    storage = (repo_copy / "base/service-account.yaml").read_text().split("---\n")
    append(repo_copy, TEAM_B, "---\n" + next(d for d in storage if "kind: ConfigMap" in d).replace("namespace: ray", "namespace: team-c"))
    append(repo_copy, TEAM_B, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: batch-inference-scripts\n  namespace: team-c\n"
                              "data:\n  batch_inference.py: print(1)\n")
    _trust_team_c(repo_copy)
    report = validate_repository(repo_copy)
    assert report.findings == [], _text(report)


def test_a_queued_job_without_shutdown_after_job_finishes_gets_the_line_to_add(repo_copy):
    edit(repo_copy, "workloads/batch-inference.yaml", "  shutdownAfterJobFinishes: true\n", "")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "kueue-webhook"]
    assert [(f.file, f.line) for f in found] == [("workloads/batch-inference.yaml", 12)], "\n".join(f.text() for f in found)
    assert "add spec.shutdownAfterJobFinishes: true" in found[0].hint, found[0].text()


def test_a_queue_written_in_a_file_no_kustomization_lists_is_named_in_the_hint(repo_copy):
    (repo_copy / "overlays/team-queues/team-c.yaml").write_text(
        (repo_copy / TEAM_B).read_text().replace("team-b", "team-c"))
    append(repo_copy, f"{PROD}/samples.yaml", "- sample: batch-inference\n  queue: team-c\n  vars: {JOB_NAME: bi-c}\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-queue"]
    assert [(f.file, f.line) for f in found] == [(f"{PROD}/samples.yaml", 13)], "\n".join(f.text() for f in found)
    assert "list overlays/team-queues/team-c.yaml" in found[0].hint, found[0].text()


def test_a_number_beyond_int32_in_a_kind_without_a_webhook_is_refused_at_its_line(repo_copy):
    """WorkloadPriorityClass has no Kueue webhook and the apiserver stores value 3000000000 (format int32 is dropped), but
    Kueue's typed informer cannot decode it: reported at the value's line, as Kueue cannot read it."""
    edit(repo_copy, "base/priority-classes.yaml", "value: 1000\n", "value: 3000000000\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("kueue-webhook", "base/priority-classes.yaml", 8)], _text(report)
    assert "Kueue cannot read it" in report.findings[0].message and "2147483647" in report.findings[0].hint, _text(report)


def test_a_shell_default_in_a_workload_is_one_finding_at_its_line_with_the_fix(repo_copy):
    """`${QUEUE_NAME:=team-a}` (the Flux layers' syntax) is no ${VAR} of the samples' envsubst form: one finding at the
    workload's line, whichever clusters' entries use the sample, and the fix is the plain ${VAR}."""
    edit(repo_copy, "workloads/batch-inference.yaml", "queue-name: ${QUEUE_NAME}", "queue-name: ${QUEUE_NAME:=team-a}")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("sample-render", "workloads/batch-inference.yaml", 11)], _text(report)
    assert "${QUEUE_NAME:=team-a}" in report.findings[0].message and report.findings[0].hint.startswith("write ${QUEUE_NAME}:"), _text(report)


def test_a_team_service_account_namespaced_by_its_kustomization_needs_a_federated_credential(repo_copy):
    """A team folder whose kustomization sets `namespace: team-c` over a ServiceAccount that writes none (the kustomize idiom):
    the cluster applies team-c/ray-workload, which no credential trusts; the finding is at its source document. With a
    credential for that subject, clean."""
    write(repo_copy, "overlays/team-queues/team-c/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
          "namespace: team-c\nresources:\n  - ns.yaml\n  - sa.yaml\n")
    write(repo_copy, "overlays/team-queues/team-c/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-c\n")
    write(repo_copy, "overlays/team-queues/team-c/sa.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ray-workload\n"
          '  annotations:\n    azure.workload.identity/client-id: "${WORKLOAD_IDENTITY_CLIENT_ID}"\n')
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml\n", "  - team-b.yaml\n  - team-c\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line, f.resource) for f in report.findings] == [
        ("terraform-federated-subject", "overlays/team-queues/team-c/sa.yaml", 1, "ServiceAccount/team-c/ray-workload")], _text(report)
    _trust_team_c(repo_copy)
    report = validate_repository(repo_copy)
    assert report.findings == [], _text(report)


def _trust_team_c(repo) -> None:
    """A federated identity credential for team-c's workload ServiceAccount, beside ray's."""
    append(repo, "terraform/identity.tf", '\nresource "azurerm_federated_identity_credential" "team_c" {\n  name                = "team-c-federated"\n'
                                         "  resource_group_name = azurerm_resource_group.this.name\n"
                                         "  parent_id           = azurerm_user_assigned_identity.ray_workload.id\n"
                                         '  audience            = ["api://AzureADTokenExchange"]\n'
                                         "  issuer              = azurerm_kubernetes_cluster.this.oidc_issuer_url\n"
                                         '  subject             = "system:serviceaccount:team-c:ray-workload"\n}\n')
