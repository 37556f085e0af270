"""A quota finding is at the line that writes the value the cluster ends up with (harness.gate.writers): the patch whose
target selects the queue, applied last; the substitute entry Flux takes a ${VAR} from; a replacement's source; and an
optional empty pool that no flavor singles out is not blamed for a quota written too high."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.gate import validate_repository
from tests.static.test_capacity import ND96, PROD_TFVARS, line_of
from tests.static.test_gate_corpus import append, edit, write

pytestmark = pytest.mark.static

TEAMS = "overlays/team-queues/kustomization.yaml"
ISR = "components/gpu-sku/standard-nd96isr-h100-v5/kustomization.yaml"
TEAM_GPUS = '/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "4"}'


def add_team_c(root: Path) -> None:
    """README "Adding a team", step 1 only: three teams of half the pool each."""
    write(root, "overlays/team-queues/team-c.yaml", (root / "overlays/team-queues/team-b.yaml").read_text().replace("team-b", "team-c"))
    edit(root, TEAMS, "  - team-b.yaml\n", "  - team-b.yaml\n  - team-c.yaml\n")


def quota_findings(root: Path) -> list:
    report = validate_repository(root)
    return [f for f in report.findings if f.rule.startswith("capacity-")]


def at(found: list, rule: str) -> set[tuple[str, int | None]]:
    return {(f.file, f.line) for f in found if f.rule == rule}


def test_the_team_patch_not_the_whole_pool_patch_of_the_same_value(repo_copy: Path):
    """The whole-pool patch writes 768Gi too, but selects no team queue: memory is the team patch's line."""
    add_team_c(repo_copy)
    found = quota_findings(repo_copy)
    assert at(found, "capacity-quota") == {(ND96, line_of(repo_copy, ND96, "resources/0/nominalQuota, value: \"47\"}")),
                                           (ND96, line_of(repo_copy, ND96, "resources/1/nominalQuota, value: 768Gi}", 1)),
                                           (ND96, line_of(repo_copy, ND96, TEAM_GPUS))}, "\n".join(f.text() for f in found)


def test_a_team_value_equal_to_the_whole_pool_value(repo_copy: Path):
    edit(repo_copy, ND96, TEAM_GPUS, TEAM_GPUS.replace('"4"', '"8"'))
    found = quota_findings(repo_copy)
    assert at(found, "capacity-quota") == {(ND96, line_of(repo_copy, ND96, TEAM_GPUS.replace('"4"', '"8"'), 1))}, \
        "\n".join(f.text() for f in found)


def test_a_cluster_sku_component_applied_last_is_where_the_team_quotas_are(repo_copy: Path):
    """The cluster's own component (another VM size, README) writes the final quotas: adding a team is capacity-quota
    there, not a wrong component."""
    shutil.copytree(repo_copy / "components/gpu-sku/standard-nd96amsr-a100-v4", repo_copy / "components/gpu-sku/standard-nd96isr-h100-v5")
    edit(repo_copy, ISR, "ND96amsr_A100_v4", "ND96isr_H100_v5")
    edit(repo_copy, PROD_TFVARS, "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5")
    append(repo_copy, "clusters/prod-eastus2/queues/kustomization.yaml", "components: [../../../components/gpu-sku/standard-nd96isr-h100-v5]\n")
    assert not quota_findings(repo_copy)
    add_team_c(repo_copy)
    found = quota_findings(repo_copy)
    assert not at(found, "capacity-sku-component"), "\n".join(f.text() for f in found)
    assert {file for file, _ in at(found, "capacity-quota")} == {ISR}, "\n".join(f.text() for f in found)
    assert (ISR, line_of(repo_copy, ISR, TEAM_GPUS)) in at(found, "capacity-quota")


def test_a_substituted_quota_is_where_the_cluster_sets_the_variable(repo_copy: Path):
    edit(repo_copy, ND96, TEAM_GPUS, TEAM_GPUS.replace('"4"', '"${TEAM_GPUS:=4}"'))
    assert not quota_findings(repo_copy)  # the default fits
    edit(repo_copy, "clusters/prod-eastus2/queues.yaml", "      CLUSTER_NAME: prod-eastus2\n",
         '      CLUSTER_NAME: prod-eastus2\n      TEAM_GPUS: "6"\n')
    found = [f for f in quota_findings(repo_copy) if f.rule == "capacity-quota"]
    assert {(f.file, f.line) for f in found} == {("clusters/prod-eastus2/queues.yaml", line_of(repo_copy, "clusters/prod-eastus2/queues.yaml", "TEAM_GPUS"))}
    assert found[0].hint.startswith("lower TEAM_GPUS here") and f"{ND96}:{line_of(repo_copy, ND96, 'TEAM_GPUS')}" in found[0].hint


def test_a_substituted_default_is_where_the_default_is_written(repo_copy: Path):
    edit(repo_copy, ND96, TEAM_GPUS, TEAM_GPUS.replace('"4"', '"${TEAM_GPUS:=6}"'))
    found = [f for f in quota_findings(repo_copy) if f.rule == "capacity-quota"]
    assert {(f.file, f.line) for f in found} == {(ND96, line_of(repo_copy, ND96, "TEAM_GPUS"))}
    assert "default of ${TEAM_GPUS}" in found[0].hint


def test_a_value_written_in_the_overlay_and_replaced_by_the_component(repo_copy: Path):
    edit(repo_copy, "overlays/team-queues/team-b.yaml", 'nominalQuota: "0"     # set by components/gpu-sku', 'nominalQuota: "50"')
    edit(repo_copy, ND96, 'resources/0/nominalQuota, value: "47"}', 'resources/0/nominalQuota, value: "50"}')
    found = quota_findings(repo_copy)
    assert at(found, "capacity-quota") == {(ND96, line_of(repo_copy, ND96, 'resources/0/nominalQuota, value: "50"}'))}, \
        "\n".join(f.text() for f in found)


def test_a_patch_in_a_file_and_a_replacement(repo_copy: Path):
    text = (repo_copy / ND96).read_text()
    head, _, team = text.partition("  - target:\n      kind: ClusterQueue\n      labelSelector: ray-on-aks/quota-share=team\n")
    ops = [line.strip() for line in team.splitlines() if line.strip().startswith("- {op")]
    write(repo_copy, ND96, head + "  - target:\n      kind: ClusterQueue\n      labelSelector: ray-on-aks/quota-share=team\n    path: team.yaml\n")
    team_file = ND96.replace("kustomization.yaml", "team.yaml")
    write(repo_copy, team_file, "\n".join(ops).replace('nominalQuota, value: "47"}', 'nominalQuota, value: "50"}', 1) + "\n")
    found = quota_findings(repo_copy)
    assert at(found, "capacity-quota") == {(team_file, 1)}, "\n".join(f.text() for f in found)
    write(repo_copy, team_file, "\n".join(ops) + "\n")
    append(repo_copy, TEAMS, "configMapGenerator:\n  - name: team-sizes\n    namespace: ray\n    literals: [TEAM_B_CPU=60]\n"
           "    options: {disableNameSuffixHash: true}\nreplacements:\n  - source: {kind: ConfigMap, name: team-sizes, fieldPath: data.TEAM_B_CPU}\n"
           "    targets:\n      - select: {kind: ClusterQueue, name: team-b-cq}\n"
           "        fieldPaths: [spec.resourceGroups.0.flavors.0.resources.0.nominalQuota]\n")
    found = quota_findings(repo_copy)
    where = f"{TEAMS}:{line_of(repo_copy, TEAMS, '- source:')}"  # the finding's place, or named as another place of the total
    assert any(where in f.location() + f.message for f in found if f.rule == "capacity-quota"), "\n".join(f.text() for f in found)
    assert not any(f.file == "overlays/team-queues/team-b.yaml" for f in found), "\n".join(f.text() for f in found)


def test_a_quota_one_optional_node_would_cover_is_the_quota(repo_copy: Path):
    """The CPU pool is optional and off by default: a cpu quota above the GPU node is the quota's, however small the overshoot."""
    edit(repo_copy, ND96, 'resources/0/nominalQuota, value: "47"}', 'resources/0/nominalQuota, value: "50"}')
    found = quota_findings(repo_copy)
    assert at(found, "capacity-quota") == {(ND96, line_of(repo_copy, ND96, 'resources/0/nominalQuota, value: "50"}'))}, \
        "\n".join(f.text() for f in found)
    assert not at(found, "capacity-empty-pool")


def test_an_empty_pool_a_flavor_singles_out_is_set_in_the_cluster_tfvars(repo_copy: Path):
    edit(repo_copy, "base/resource-flavors.yaml", "metadata:\n  name: default\nspec: {}", "metadata:\n  name: default\nspec:\n  nodeLabels: {agentpool: cpupool}")
    found = [f for f in quota_findings(repo_copy) if f.rule == "capacity-empty-pool"]
    # Both clusters take the count from the same default: one finding there, whose fix is each cluster's own tfvars.
    assert len(found) == 1 and found[0].hint.startswith("set cpu_node_count = 1 (or more) in the tfvars of each cluster named "
                                                        "(terraform/clusters/<cluster>.tfvars"), "\n".join(f.text() for f in found)


def test_one_total_written_in_several_places_is_one_finding(repo_copy: Path):
    """A Cohort's own GPU quota on top of the teams' 4 + 4 on the 8-GPU node: one capacity-quota finding for the total,
    naming where the other part is written."""
    write(repo_copy, "overlays/team-queues/cohorts.yaml",
          "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: shared-cohort\nspec:\n  resourceGroups:\n"
          "    - coveredResources: [nvidia.com/gpu]\n      flavors:\n        - name: gpu\n          resources:\n"
          "            - name: nvidia.com/gpu\n              nominalQuota: \"2\"\n")
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml\n", "  - team-b.yaml\n  - cohorts.yaml\n")
    found = [f for f in quota_findings(repo_copy) if f.rule == "capacity-quota"]
    assert len(found) == 1 and "overlays/team-queues/cohorts.yaml:12" in (found[0].location() + found[0].message), \
        "\n".join(f.text() for f in found)
