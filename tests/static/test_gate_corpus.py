"""The static gate against broken variants of this repository: each must fail with its rule."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text, f"corpus case is stale: {old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1))


def append(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.write_text(path.read_text() + text)


TEAM_A = "overlays/team-queues/team-a.yaml"
TEAM_B = "overlays/team-queues/team-b.yaml"
SINGLE = "overlays/single-queue/cluster-queue.yaml"
ND96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
PROD = "clusters/prod-eastus2"

# (case id, rule that must fire, file the finding must name, mutation)
CORPUS = [
    ("yaml-syntax", "yaml-syntax", TEAM_A, lambda r: append(r, TEAM_A, "  broken: [unclosed\n")),
    ("wrong-apiversion", "schema-unknown-kind", TEAM_A, lambda r: edit(r, TEAM_A, "apiVersion: kueue.x-k8s.io/v1beta2", "apiVersion: kueue.x-k8s.io/v1")),
    ("old-kueue-api", "kueue-api-version", "base/resource-flavors.yaml",
     lambda r: edit(r, "base/resource-flavors.yaml", "apiVersion: kueue.x-k8s.io/v1beta2", "apiVersion: kueue.x-k8s.io/v1beta1")),
    ("typo-field", "schema", TEAM_B, lambda r: edit(r, TEAM_B, "queueingStrategy:", "queueingStrategyy:")),
    ("bad-quantity", "bad-quantity", SINGLE, lambda r: edit(r, ND96, 'nominalQuota, value: "96"}', 'nominalQuota, value: "96 cores"}')),
    ("dangling-localqueue", "localqueue-clusterqueue", TEAM_B, lambda r: edit(r, TEAM_B, "clusterQueue: team-b-cq", "clusterQueue: team-c-cq")),
    ("missing-flavor", "clusterqueue-flavor", SINGLE, lambda r: edit(r, SINGLE, "- name: gpu\n", "- name: gpu-h100\n")),
    ("covered-resources", "covered-resources", SINGLE, lambda r: edit(r, SINGLE, "coveredResources: [cpu, memory]", "coveredResources: [cpu]")),
    ("borrowing-without-cohort", "borrowing-without-cohort", TEAM_A, lambda r: edit(r, TEAM_A, "  cohortName: shared-cohort\n", "")),
    ("no-namespace-selector", "namespace-selector", SINGLE, lambda r: edit(r, SINGLE, "  namespaceSelector: {}\n", "")),
    ("both-overlays", "cluster-overlay", f"{PROD}/kustomization.yaml",
     lambda r: append(r, f"{PROD}/queues/kustomization.yaml", "  - ../../../overlays/single-queue\n")),
    ("no-overlay", "cluster-overlay", f"{PROD}/kustomization.yaml",
     lambda r: edit(r, f"{PROD}/queues/kustomization.yaml", "  - ../../../overlays/team-queues", "  - ../../../base")),
    ("missing-flux-path", "flux-path", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "path: ./clusters/prod-eastus2/queues", "path: ./clusters/prod-eastus2/queue")),
    ("dangling-depends-on", "flux-depends-on", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "- name: infra-controllers", "- name: infra-controller")),
    ("depends-on-cycle", "flux-cycle", f"{PROD}/infrastructure.yaml",
     lambda r: edit(r, f"{PROD}/infrastructure.yaml", "spec:\n", "spec:\n  dependsOn:\n    - name: queues\n")),
    ("undefined-variable", "flux-variable-undefined", f"{PROD}/queues.yaml",
     lambda r: edit(r, "base/service-account.yaml", '"${AZURE_TENANT_ID}"', '"${AZURE_TENANT}"')),
    ("flux-unknown-field", "schema", f"{PROD}/queues.yaml", lambda r: edit(r, f"{PROD}/queues.yaml", "  prune: true", "  prunne: true")),
    ("unsuspended-rayjob", "sample-suspend", "workloads/batch-inference.yaml",
     lambda r: edit(r, "workloads/batch-inference.yaml", "suspend: true", "suspend: false")),
    ("shutdown-false", "sample-shutdown", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "shutdownAfterJobFinishes: true", "shutdownAfterJobFinishes: false")),
    ("wrong-queue-label", "sample-queue", "workloads/batch-inference.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", "queue: team-b", "queue: default")),
    ("workload-larger-than-queue", "sample-fits", "workloads/llm-training.yaml",
     lambda r: edit(r, f"{PROD}/samples.yaml", 'NUM_WORKERS: "4"', 'NUM_WORKERS: "9"')),
    ("workload-larger-than-small-sku", "sample-fits", "workloads/llm-training.yaml",
     lambda r: edit(r, "clusters/dev-westus3/samples.yaml", 'NUM_WORKERS: "1"', 'NUM_WORKERS: "4"')),
    ("uncovered-resource", "sample-fits", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", 'nvidia.com/gpu: "1"}', 'nvidia.com/gpu: "1", rdma/ib: "1"}')),
    ("rayjob-unknown-field", "schema", "workloads/aurora-finetune.yaml",
     lambda r: edit(r, "workloads/aurora-finetune.yaml", "  entrypoint:", "  entrypointt:")),
    ("unknown-sample", "sample-render", f"{PROD}/samples.yaml", lambda r: edit(r, f"{PROD}/samples.yaml", "sample: batch-inference", "sample: batch-inferense")),
    ("missing-resource-file", "kustomize-build", "overlays/team-queues/kustomization.yaml",
     lambda r: edit(r, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml", "  - team-c.yaml")),
    ("dangling-source-ref", "flux-source-ref", f"{PROD}/queues.yaml",
     lambda r: edit(r, f"{PROD}/queues.yaml", "    name: flux-system\n  path:", "    name: flux-systen\n  path:")),
    ("dangling-chart-ref", "flux-source-ref", "flux/infrastructure/controllers/kueue.yaml",
     lambda r: edit(r, "flux/infrastructure/controllers/kueue.yaml", "    kind: OCIRepository\n    name: kueue\n", "    kind: OCIRepository\n    name: kueue-chart\n")),
    ("queues-without-prune", "flux-prune", f"{PROD}/queues.yaml", lambda r: edit(r, f"{PROD}/queues.yaml", "  prune: true", "  prune: false")),
    ("chart-tag-drift", "versions-drift", "flux/infrastructure/controllers/kueue.yaml",
     lambda r: edit(r, "flux/infrastructure/controllers/kueue.yaml", "    tag: 0.17.1", "    tag: 0.17.2")),
    ("image-tag-drift", "versions-drift", "flux/infrastructure/controllers/kuberay-operator.yaml",
     lambda r: edit(r, "flux/infrastructure/controllers/kuberay-operator.yaml", "      tag: v1.6.1", "      tag: v1.6.2")),
    ("pin-moved-alone", "versions-drift", "flux/infrastructure/controllers/kueue.yaml",
     lambda r: edit(r, "versions.yaml", "  production: 0.17.1", "  production: 0.18.1")),
    ("two-layers-same-queues", "object-collision", TEAM_A,
     lambda r: append(r, f"{PROD}/queues.yaml", (r / f"{PROD}/queues.yaml").read_text().replace("name: queues\n", "name: queues-copy\n", 1).replace("# Layer 2", "---\n# Layer 2", 1))),
]


def test_repository_is_clean():
    report = validate_repository(Path(__file__).resolve().parents[2])
    assert report.findings == [], "\n".join(f.text() for f in report.findings)
    assert report.builds >= 10 and report.objects > 0


@pytest.mark.parametrize("case,rule,file,mutate", CORPUS, ids=[c[0] for c in CORPUS])
def test_broken_input_fails_with_its_rule(repo_copy, case, rule, file, mutate):
    mutate(repo_copy)
    report = validate_repository(repo_copy)
    fired = [f for f in report.findings if f.rule == rule]
    assert fired, f"{case}: expected rule {rule}, got:\n" + "\n".join(f.text() for f in report.findings)
    assert any(f.file == file for f in fired), f"{case}: {rule} should name {file}:\n" + "\n".join(f.text() for f in fired)
    for f in fired:
        assert f.message and f.hint, f"{case}: finding without message or fix hint: {f}"


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 20
    assert len({c[1] for c in CORPUS}) >= 18  # most rules have a case of their own
