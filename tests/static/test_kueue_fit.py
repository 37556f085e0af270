"""sample-fits as Kueue's own flavor assigner decides it (harness/gate/kueue_fit.py): queue shapes the real Kueue
admits must be clean, each next to the variant it does not admit (the broken variants of other shapes are in
test_gate_corpus.py's CORPUS; tests/integration/test_admit_parity.py holds the verdicts to the real Kueue's)."""
from __future__ import annotations

import pytest

from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import DEV, KUEUE, PROD, append, edit, write

pytestmark = pytest.mark.static

SKU_TEAM = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"


def _fits(repo) -> list:
    return [f for f in validate_repository(repo).findings if f.rule == "sample-fits"]


def _parent_cohort(repo, workers: str) -> None:
    """Each team 1 GPU of its own and no borrowing limit; their cohort's parent holds 4 more."""
    edit(repo, SKU_TEAM, '      - {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "4"}\n'
         '      - {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/borrowingLimit, value: "4"}',
         '      - {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "1"}\n'
         '      - {op: remove, path: /spec/resourceGroups/1/flavors/0/resources/0/borrowingLimit}')
    append(repo, "overlays/team-queues/team-a.yaml",
           "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: shared-cohort\nspec:\n  parentName: root\n"
           "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: root\nspec:\n  resourceGroups:\n"
           "    - coveredResources: [nvidia.com/gpu]\n      flavors:\n        - name: gpu\n          resources:\n"
           "            - name: nvidia.com/gpu\n              nominalQuota: \"4\"\n")
    edit(repo, f"{PROD}/samples.yaml", 'NUM_WORKERS: "4"', f'NUM_WORKERS: "{workers}"')


def test_quota_a_parent_cohort_lends_is_counted(repo_copy):
    _parent_cohort(repo_copy, "5")  # 1 + team-b's 1 + the parent's 4 = 6 GPUs reachable: 5 workers fit
    assert _fits(repo_copy) == []


def test_more_than_the_cohort_tree_holds_pends(repo_copy):
    """Only GPUs are short (7 workers, 6 GPUs in the tree): smaller workers keep cpu and memory within the queue, so the
    reason is the GPU whichever order Kueue's assigner walks the resources in."""
    _parent_cohort(repo_copy, "7")
    for _ in range(2):  # requests and limits
        edit(repo_copy, "workloads/llm-training.yaml", '{cpu: "16", memory: 128Gi, nvidia.com/gpu: "1"}',
             '{cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}')
    found = _fits(repo_copy)
    assert [(f.file, f.line) for f in found] == [(f"{PROD}/samples.yaml", 7)], found
    assert "insufficient quota for nvidia.com/gpu in flavor gpu" in found[0].message, found[0].message
    assert "borrowingLimit" not in found[0].hint and f"nvidia.com/gpu in flavor gpu, written at {SKU_TEAM}:24" in found[0].hint


def test_a_job_short_of_two_resources_gets_one_reason_every_run(repo_copy):
    """Kueue's assigner walks resources in Go map order; the gate names the first short one in the ClusterQueue's own
    order (cpu's resource group is written before the GPU's), the same on every run."""
    _parent_cohort(repo_copy, "7")  # 7 workers of 16 cpu: cpu (116 > 94) and GPUs (7 > 6) both short
    messages = {_fits(repo_copy)[0].message for _ in range(6)}
    assert len(messages) == 1, messages
    assert "insufficient quota for cpu in flavor default" in messages.pop()


def test_pod_sets_may_take_different_flavors(repo_copy):
    """The head takes `default`, the 12-cpu worker no longer fits there and takes `default-b`."""
    append(repo_copy, "base/resource-flavors.yaml", "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: default-b\nspec: {}\n")
    edit(repo_copy, "overlays/single-queue/cluster-queue.yaml", "    - coveredResources: [nvidia.com/gpu]",
         "        - name: default-b\n          resources:\n            - name: cpu\n              nominalQuota: \"12\"\n"
         "            - name: memory\n              nominalQuota: 100Gi\n    - coveredResources: [nvidia.com/gpu]")
    edit(repo_copy, "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml", 'value: "23"}', 'value: "12"}')
    edit(repo_copy, "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml", "value: 200Gi}", "value: 100Gi}")
    (repo_copy / DEV / "samples.yaml").write_text("- sample: batch-inference\n  queue: default\n")
    assert _fits(repo_copy) == []


@pytest.mark.parametrize("excluded", [True, False])
def test_a_resource_the_manager_excludes_is_not_charged(repo_copy, excluded):
    edit(repo_copy, "workloads/batch-inference.yaml", 'requests: {cpu: "12", memory: 80Gi, nvidia.com/gpu: "1"}',
         'requests: {cpu: "12", memory: 80Gi, nvidia.com/gpu: "1", ephemeral-storage: 1Gi}')
    if excluded:
        edit(repo_copy, KUEUE, "        featureGates:\n", "        resources:\n          excludeResourcePrefixes: [ephemeral-storage]\n        featureGates:\n")
    found = _fits(repo_copy)
    if excluded:
        assert found == []
    else:
        # One cause, one finding: at the request, naming both clusters (and their ClusterQueues), not one per cluster at samples.yaml.
        assert [(f.file, f.line) for f in found] == [("workloads/batch-inference.yaml", 88)], found
        assert "ephemeral-storage unavailable in ClusterQueue" in found[0].message and "drop the ephemeral-storage request" in found[0].hint
        assert "cluster dev-westus3" in found[0].context and "ClusterQueue team-b-cq" in found[0].context, found[0].context


TAS_QUEUE = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cluster-queue
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
        - name: gpu-tas
          resources:
            - {name: cpu, nominalQuota: "24"}
            - {name: memory, nominalQuota: 200Gi}
            - {name: nvidia.com/gpu, nominalQuota: "1"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: default
  namespace: ray
spec:
  clusterQueue: cluster-queue
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: gpu-tas
spec:
  nodeLabels: {kubernetes.azure.com/accelerator: nvidia}
  topologyName: aks
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata:
  name: aks
spec:
  levels:
    - nodeLabel: LEVEL
"""


@pytest.mark.parametrize("level", ["kubernetes.io/hostname", "example.com/rack"])
def test_topology_aware_queue_is_judged_on_the_clusters_ready_nodes(repo_copy, level):
    """A topology-aware flavor whose level every AKS node carries admits the samples (Kueue's TAS cache keeps only Ready
    nodes: the gate's nodes are Ready as AKS registers them); a level no node carries leaves them pending."""
    write(repo_copy, "overlays/single-queue/cluster-queue.yaml", TAS_QUEUE.replace("LEVEL", level))
    found = _fits(repo_copy)
    if level == "kubernetes.io/hostname":
        assert found == []
    else:
        assert found and all(("TAS" in f.message or "topology" in f.message.lower()) and f.file == f"{DEV}/samples.yaml" for f in found), found


def test_a_limit_range_with_only_a_max_charges_it_to_containers_without_requests(repo_copy):
    """The apiserver stores a Container limit's default as its max and defaultRequest as its default; Kueue sizes a
    Workload with the stored LimitRange, so the submitter (no resources written) is charged the max: here more than
    the dev cluster's queue holds."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import edit

    (repo_copy / "base/limits.yaml").write_text("apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: guardrail\n  namespace: ray\n"
                                                "spec:\n  limits:\n    - type: Container\n      max: {cpu: \"32\", memory: 256Gi}\n")
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "resources:\n  - limits.yaml\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-fits"]
    # One finding, at the max the default is made of, for every job it keeps out on either cluster (not one per sample).
    assert [(f.file, f.line, f.resource) for f in found] == [("base/limits.yaml", 9, "LimitRange/ray/guardrail")], found
    assert "max cpu 32" in found[0].message and "write defaultRequest cpu" in found[0].hint and "submitterPodTemplate" in found[0].hint
    assert {"cluster dev-westus3, sample aurora-finetune", "cluster prod-eastus2, sample llm-training"} <= \
        {part.split(" on ")[0] for part in found[0].context.split("; ")}, found[0].context
    assert "pod set submitter takes cpu 32" in found[0].context


def test_a_job_too_large_beside_a_limit_range_is_its_own_finding(repo_copy):
    """A LimitRange whose default is not what keeps the job out (without the LimitRange Kueue still does not admit it): the
    finding stays at the sample's entry with the quota's hint, not at the LimitRange."""
    append(repo_copy, "base/namespace.yaml", "---\napiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: ray}\n"
                                             "spec:\n  limits:\n    - {type: Container, defaultRequest: {cpu: 100m}}\n")
    edit(repo_copy, f"{PROD}/samples.yaml", 'NUM_WORKERS: "4"', 'NUM_WORKERS: "9"')
    found = _fits(repo_copy)
    assert [(f.file, f.line) for f in found] == [(f"{PROD}/samples.yaml", 7)], found
    assert "raise the quota" in found[0].hint


def test_a_topology_only_flavor_beside_plain_ones_gets_the_hint_that_fixes_it(repo_copy):
    """Flavor gpu given a topologyName (its Topology exists): Kueue's assigner refuses the GPU pod sets, which ask for no
    topology ("supports only TopologyAwareScheduling"): one finding, at the flavor's topologyName, for every job of every
    cluster it keeps out; the hint names the two fixes, not the pod-template annotation (flavor default, without a
    topology, would then refuse the pod sets that ask for one)."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import edit, write

    edit(repo_copy, "base/resource-flavors.yaml", "  name: gpu\nspec:\n", "  name: gpu\nspec:\n  topologyName: gpu-topology\n")
    write(repo_copy, "base/topology.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata:\n  name: gpu-topology\n"
                                          "spec:\n  levels:\n    - nodeLabel: kubernetes.io/hostname\n")
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "resources:\n  - topology.yaml\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-fits"]
    line = 1 + (repo_copy / "base/resource-flavors.yaml").read_text().splitlines().index("  topologyName: gpu-topology")
    assert [(f.file, f.line) for f in found] == [("base/resource-flavors.yaml", line)], "\n".join(f.text() for f in found)
    assert "drop topologyName from ResourceFlavor gpu" in found[0].hint and "does not help" in found[0].hint, found[0].hint
    assert "dev-westus3" in found[0].context and "prod-eastus2" in found[0].context, found[0].context


# An admission check on team-a's ClusterQueue: a ProvisioningRequest one (its config beside it) or a MultiKueue one (its
# config and cluster). Kueue reserves quota before the checks run, so they change nothing of whether a job fits.
AC_PROVISIONING = """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: gpu-capacity
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: gpu-capacity}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: gpu-capacity
spec:
  provisioningClassName: check-capacity.autoscaling.x-k8s.io
"""
AC_MULTIKUEUE = """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: gpu-capacity
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: gpu-capacity}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata:
  name: gpu-capacity
spec:
  clusters: [worker]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata:
  name: worker
spec:
  clusterSource:
    kubeConfig: {locationType: Secret, location: worker-kubeconfig}
"""


def _admission_check(repo, objects: str) -> None:
    append(repo, "overlays/team-queues/team-a.yaml", objects)
    edit(repo, "overlays/team-queues/team-a.yaml", "  queueingStrategy: BestEffortFIFO\n",
         "  queueingStrategy: BestEffortFIFO\n  admissionChecksStrategy:\n    admissionChecks:\n      - name: gpu-capacity\n")


@pytest.mark.parametrize("objects", [AC_PROVISIONING, AC_MULTIKUEUE], ids=["provisioning-request", "multikueue"])
@pytest.mark.parametrize("workers", ["4", "12"])
def test_an_admission_check_leaves_the_fit_judged(repo_copy, objects, workers):
    """team-a's queue holds 8 GPUs with what it borrows: 4 workers fit with the check as without it, 12 never do (the
    job never gets the quota the checks run after)."""
    _admission_check(repo_copy, objects)
    edit(repo_copy, f"{PROD}/samples.yaml", 'NUM_WORKERS: "4"', f'NUM_WORKERS: "{workers}"')
    report = validate_repository(repo_copy)
    found = [f for f in report.findings if f.rule == "sample-fits"]
    if workers == "4":
        assert found == [] and not [f for f in report.findings if f.is_error], [f.text() for f in report.findings]
    else:
        assert [(f.file, f.line) for f in found] == [(f"{PROD}/samples.yaml", 7)], found
        assert "couldn't assign flavors to pod set gpu-workers: insufficient quota" in found[0].message


def test_an_admission_check_leaves_the_placement_judged(repo_copy):
    """Flavor gpu carries a taint its pods do not tolerate: on prod-eastus2, whose team-a queue has an admission check,
    the GPU pods that queue's flavor assigner gives that flavor are still reported at the flavor."""
    from tests.static.test_capacity import taint_gpu_pool

    _admission_check(repo_copy, AC_MULTIKUEUE)
    taint_gpu_pool(repo_copy, tolerate=False)
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "capacity-pod-placement" and "prod-eastus2" in f.message]
    assert found and any("aurora-finetune" in f.message for f in found), found


def test_cohort_lenders_are_the_trees_others_but_the_ancestors():
    """In a tree org <- {cohort-a <- team-a, cohort-b <- team-b}, what lends to team-a is team-b and cohort-b (what a
    Cohort's lendingLimit caps is what it lends to its parent): not cohort-a or org, its ancestors."""
    from harness.gate.cluster_index import cohort_lenders

    def obj(kind, name, parent):
        return {"kind": kind, "metadata": {"name": name}, "spec": {("cohortName" if kind == "ClusterQueue" else "parentName"): parent}}
    team_a, team_b = obj("ClusterQueue", "team-a", "cohort-a"), obj("ClusterQueue", "team-b", "cohort-b")
    objects = [team_a, team_b, obj("Cohort", "cohort-a", "org"), obj("Cohort", "cohort-b", "org"),
               {"kind": "Cohort", "metadata": {"name": "org"}, "spec": {}}, obj("ClusterQueue", "elsewhere", "other")]
    assert [o["metadata"]["name"] for o in cohort_lenders(objects, team_a)] == ["team-b", "cohort-b"]
    assert cohort_lenders(objects, obj("ClusterQueue", "alone", None)) == []


def test_a_parent_level_lending_limit_that_binds_is_named(repo_copy):
    edit(repo_copy, "overlays/team-queues/team-a.yaml", "cohortName: shared-cohort", "cohortName: cohort-a")
    edit(repo_copy, "overlays/team-queues/team-b.yaml", "cohortName: shared-cohort", "cohortName: cohort-b")
    write(repo_copy, "overlays/team-queues/cohorts.yaml", "".join(
        f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: cohort-{t}\nspec:\n  parentName: org\n" for t in "ab")
        + "  resourceGroups:\n    - coveredResources: [nvidia.com/gpu]\n      flavors:\n        - name: gpu\n          resources:\n"
          "            - {name: nvidia.com/gpu, nominalQuota: \"0\", lendingLimit: \"0\"}\n")
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml\n", "  - team-b.yaml\n  - cohorts.yaml\n")
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "5"}')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-fits"]
    assert found and all("Cohort cohort-b's lendingLimit 0" in f.hint for f in found), "\n".join(f.text() for f in found)


def test_the_fit_hint_names_where_the_short_quota_is_written(repo_copy):
    """A pods quota written in the overlay itself (no gpu-sku component writes it): the hint names that line."""
    single = "overlays/single-queue/cluster-queue.yaml"
    edit(repo_copy, single, "    - coveredResources: [cpu, memory]\n", "    - coveredResources: [cpu, memory, pods]\n")
    edit(repo_copy, single, '            - name: memory\n              nominalQuota: "0"     # set by components/gpu-sku\n',
         '            - name: memory\n              nominalQuota: "0"     # set by components/gpu-sku\n'
         '            - name: pods\n              nominalQuota: "2"\n')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-fits"]
    line = 1 + (repo_copy / single).read_text().splitlines().index('              nominalQuota: "2"')
    assert found and all(f"written at {single}:{line}" in f.hint for f in found), "\n".join(f.text() for f in found)


def test_a_limit_range_default_of_a_resource_no_queue_covers_is_at_the_limit_range(repo_copy):
    """No job writes hugepages-2Mi: the LimitRange's default gives it to every container, and no ClusterQueue covers it.
    One finding at that default for every job on both clusters, not one per sample at samples.yaml."""
    append(repo_copy, "base/namespace.yaml", "---\napiVersion: v1\nkind: LimitRange\nmetadata: {name: hp, namespace: ray}\n"
                                             "spec:\n  limits:\n    - type: Container\n      defaultRequest: {hugepages-2Mi: 2Mi}\n")
    found = _fits(repo_copy)
    assert [(f.file, f.line, f.resource) for f in found] == [("base/namespace.yaml", 12, "LimitRange/ray/hp")], found
    assert len(found[0].context.split("; ")) == 6 and "unavailable in ClusterQueue" in found[0].context, found[0].context


TEAM_B_CPU = '            - name: cpu\n              nominalQuota: "0"     # set by components/gpu-sku\n              borrowingLimit: "0"\n'


def _line_of(repo, rel: str, text: str) -> int:
    return (repo / rel).read_text().splitlines().index(text) + 1


def test_a_cohorts_own_borrowing_limit_that_binds_is_named_where_written(repo_copy):
    """M#5: 14 CPU of the pool moved to a parent Cohort org; shared-cohort's own borrowingLimit 0 keeps it from its
    subtree (Kueue's potentialAvailable caps a cohort at SubtreeQuota + borrowingLimit): the hint names that limit and its
    line, not team-a's borrowingLimit (40 + 54 does not bind)."""
    edit(repo_copy, SKU_TEAM, 'resources/0/nominalQuota, value: "47"}', 'resources/0/nominalQuota, value: "40"}')
    edit(repo_copy, SKU_TEAM, 'resources/0/borrowingLimit, value: "47"}', 'resources/0/borrowingLimit, value: "54"}')
    write(repo_copy, "overlays/team-queues/cohorts.yaml", "".join(
        f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: {name}\nspec:\n{parent}  resourceGroups:\n"
        "    - coveredResources: [cpu, memory]\n      flavors:\n        - name: default\n          resources:\n"
        f"            - name: cpu\n              nominalQuota: \"{cpu}\"\n{limit}            - name: memory\n              nominalQuota: \"0\"\n"
        for name, parent, cpu, limit in [("org", "", "14", ""), ("shared-cohort", "  parentName: org\n", "0", "              borrowingLimit: \"0\"\n")]))
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml\n", "  - team-b.yaml\n  - cohorts.yaml\n")
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "5"}')
    found = _fits(repo_copy)
    line = _line_of(repo_copy, "overlays/team-queues/cohorts.yaml", '              borrowingLimit: "0"')
    assert [(f.file, f.line) for f in found] == [(f"{PROD}/samples.yaml", 7)], "\n".join(f.text() for f in found)
    assert (f"capped by Cohort shared-cohort's borrowingLimit 0 (cpu in default, written at overlays/team-queues/cohorts.yaml:{line})"
            f": raise or drop it") in found[0].hint and "its borrowingLimit" not in found[0].hint, found[0].hint


def test_a_lenders_lending_limit_is_named_where_written(repo_copy):
    """M#7c: team-b-cq lends at most 30 of its 47 CPU: the hint names that lendingLimit with its line."""
    edit(repo_copy, "overlays/team-queues/team-b.yaml", TEAM_B_CPU, TEAM_B_CPU + '              lendingLimit: "30"\n')
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "5"}')
    found = _fits(repo_copy)
    line = _line_of(repo_copy, "overlays/team-queues/team-b.yaml", '              lendingLimit: "30"')
    assert len(found) == 1 and ("capped by ClusterQueue team-b-cq's lendingLimit 30 (cpu in default, written at "
                                f"overlays/team-queues/team-b.yaml:{line})") in found[0].hint, "\n".join(f.text() for f in found)


def test_a_limit_that_does_not_bind_is_not_named(repo_copy):
    """team-b-cq lends all its 47 CPU (lendingLimit 47) and team-a's borrowingLimit 47 reaches the pool's 94: neither caps
    a 100-CPU job, which is simply too big; the hint names no limit."""
    edit(repo_copy, "overlays/team-queues/team-b.yaml", TEAM_B_CPU, TEAM_B_CPU + '              lendingLimit: "47"\n')
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "6"}')
    found = _fits(repo_copy)
    assert len(found) == 1 and "Limit" not in found[0].hint, "\n".join(f.text() for f in found)


MULTIPLY = ("        resources:\n          transformations:\n            - input: nvidia.com/gpu\n              multiplyBy: cpu\n"
            "              strategy: Replace\n              outputs:\n                nvidia.com/gpu: \"1\"\n        integrations:\n")


def test_a_multiply_by_that_keeps_every_gpu_job_out_is_one_finding_at_it(repo_copy):
    """Each GPU worker asks 1 GPU and 16 CPU: multiplyBy cpu charges 16 GPUs, more than any ClusterQueue holds. Kueue's
    assigner admits the jobs without the transformation: one finding at the multiplyBy, for every job on both clusters."""
    edit(repo_copy, KUEUE, "        integrations:\n", MULTIPLY)
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.file, f.line, f.rule) for f in found] == [(KUEUE, 76, "sample-fits")], "\n".join(f.text() for f in found)
    assert "dev-westus3" in found[0].context and "prod-eastus2" in found[0].context and "multiplyBy" in found[0].hint


def test_a_job_too_big_without_the_transformation_too_stays_at_its_sample(repo_copy):
    """The transformation is not the cause when the job does not fit without it either: its samples entry keeps the finding."""
    edit(repo_copy, KUEUE, "        integrations:\n", MULTIPLY)
    edit(repo_copy, f"{PROD}/samples.yaml", 'vars: {NUM_WORKERS: "4"}', 'vars: {NUM_WORKERS: "9"}')
    found = _fits(repo_copy)
    assert any(f.file == f"{PROD}/samples.yaml" for f in found), "\n".join(f.text() for f in found)
