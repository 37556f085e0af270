"""Hostile inputs a pull request can carry (found by a hostile review): the gate answers each with a finding at the file,
or exit 2 in one line, within seconds; never a hang, a traceback, a silent pass or an escape from its report lines.
The CLI, as CI runs it."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness.gate.findings import Finding
from harness.gate.formats import to_sarif
from tests.static.test_gate_robustness import assert_finding, run
from tests.static.test_gate_corpus import edit, write

pytestmark = pytest.mark.static

BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
LIST_IN_BASE = ("  - priority-classes.yaml\n", "  - priority-classes.yaml\n  - extra.yaml\n")


@pytest.mark.parametrize("case", ["alias-bomb-unlisted", "alias-bomb-listed", "alias-cycle-listed", "deep-nesting-listed"])
def test_yaml_that_would_never_finish_loading_is_a_finding(repo_copy, tmp_path, case):
    text = {"alias-bomb-unlisted": BOMB, "alias-bomb-listed": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ray}\n"
            + BOMB.replace("a: &a", "data: {}\nz: &a"),
            "alias-cycle-listed": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ray}\ndata: &a {y: *a}\n",
            "deep-nesting-listed": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ray}\nx: " + "[" * 3000 + "]" * 3000 + "\n"}[case]
    write(repo_copy, "base/extra.yaml", text)
    if case.endswith("-listed"):
        edit(repo_copy, "base/kustomization.yaml", *LIST_IN_BASE)
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "yaml-syntax", "base/extra.yaml")


@pytest.mark.parametrize("kind", ["fifo", "symlink-loop"])
def test_a_file_that_cannot_be_read_as_one_is_a_finding(repo_copy, tmp_path, kind):
    path = repo_copy / "overlays/team-queues/odd.yaml"
    os.mkfifo(path) if kind == "fifo" else path.symlink_to("odd.yaml")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "file-read", "overlays/team-queues/odd.yaml")


def test_extra_crds_that_are_missing_or_no_crds_are_findings(repo_copy, tmp_path):
    write(repo_copy, "crds/bad.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: 5\n")
    write(repo_copy, ".ray-kueue-gate.yaml", "crds: [crds, does/not/exist.yaml]\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "gate-config", "crds/bad.yaml")
    assert_finding(proc, tmp_path / "f.json", "gate-config", ".ray-kueue-gate.yaml", 1)


def test_a_versions_file_that_is_no_pin_file_is_a_finding(repo_copy, tmp_path):
    write(repo_copy, "versions.yaml", "- x\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "versions-drift", "versions.yaml")


def test_a_repository_without_clusters_is_not_silently_clean(repo_copy, tmp_path):
    for child in (repo_copy / "clusters").iterdir():
        subprocess.run(["rm", "-rf", str(child)], check=True)
    write(repo_copy, ".ray-kueue-gate.yaml", "terraform: null\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    found = json.loads((tmp_path / "f.json").read_text())["findings"]
    assert [(f["rule"], f["severity"]) for f in found] == [("cluster-unchecked", "warning")], found


def test_stdout_that_cannot_be_written_is_exit_2(repo_copy):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([str(run.__globals__["VALIDATE"]), str(repo_copy), "--format", "json"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "cannot write the json report to stdout" in proc.stderr, proc.stderr


def test_dev_stdout_is_stdout_for_the_one_destination_rule(repo_copy):
    proc = run(repo_copy, "--format", "json", "--format", "sarif=/dev/stdout")
    assert proc.returncode == 2 and "would be written to" in proc.stderr, proc.stderr


def test_repository_content_cannot_start_a_report_line():
    text = Finding("bad\n::warning::x.yaml", 1, "", "r", "m\n::error file=a,line=1::injected", "h\nmore").text()
    assert [ln for ln in text.splitlines() if ln.startswith("::")] == [] and len(text.splitlines()) == 2, text


def test_sarif_locations_are_uri_references():
    sarif = json.loads(to_sarif([Finding("overlays/team #1 a.yaml", 3, "", "r", "m", "h")], {"r": "x"}, "0"))
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "overlays/team%20%231%20a.yaml", uri


def test_a_resource_outside_the_repository_is_refused_not_read_from_the_host(repo_copy, tmp_path):
    """kustomize-controller builds in the source artifact: a path that leaves it is refused (fs-security-constraint)."""
    edit(repo_copy, "base/kustomization.yaml", LIST_IN_BASE[0], LIST_IN_BASE[0] + "  - ../../../../../../../../etc/hostname\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "kustomize-build", "base/kustomization.yaml", 11)
    assert "not in or below" in proc.stdout, proc.stdout


def test_helm_values_that_are_no_mapping_are_a_finding(repo_copy, tmp_path):
    """The HelmRelease CRD takes any JSON in spec.values; helm-controller drops what is not a mapping, unsaid."""
    rel = "flux/infrastructure/controllers/kueue.yaml"
    lines = (repo_copy / rel).read_text().split("\n")
    start = lines.index("  values:")
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith("    ")), len(lines))
    write(repo_copy, rel, "\n".join([*lines[:start], '  values: "x"', *lines[end:]]))
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "helm-values", rel, start + 1)


def test_a_flavor_taint_no_sample_tolerates_is_one_finding_at_the_flavor(repo_copy):
    """Kueue's flavor assigner refuses flavor gpu to every GPU pod (its nodeTaints untolerated): one capacity-pod-placement
    at the flavor naming both clusters (the same message but for the cluster's name: findings.keep_once), the samples'
    sample-fits (whose reasons are that flavor's) folded under it."""
    from harness.gate.validate import validate_repository
    from tests.static.test_capacity import taint_gpu_pool
    taint_gpu_pool(repo_copy, tolerate=False)
    found = validate_repository(repo_copy).findings
    assert sorted((f.rule, f.file, f.context) for f in found) == [
        ("capacity-pod-placement", "base/resource-flavors.yaml", "cluster dev-westus3; cluster prod-eastus2")], "\n".join(f.text() for f in found)
    assert "cluster dev-westus3, prod-eastus2:" in found[0].message, found[0].message


@pytest.mark.parametrize("text, line", [("- a\n", 1), ("apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: ray}\n", 1)])
def test_a_resource_file_kustomize_refuses_is_named_not_its_listing(repo_copy, tmp_path, text, line):
    """kustomize refuses the file, then tries it as a directory and says so last: the finding is at the file."""
    write(repo_copy, "base/extra.yaml", text)
    edit(repo_copy, "base/kustomization.yaml", *LIST_IN_BASE)
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "kustomize-build", "base/extra.yaml", line)
    assert "must build at directory" not in proc.stdout, proc.stdout


def test_only_a_queued_rayjob_has_a_workload_to_refuse():
    """Kueue builds a Workload only of a RayJob with a queue-name label: a worker group name no pod set may have is its
    Workload's refusal when queued, the pods' refusal when not."""
    import copy
    from harness.core.versions import REPO_ROOT
    from harness.gate import schema_check, workloads
    job = workloads.render_entry({"sample": "aurora-finetune", "queue": "default"}, REPO_ROOT)[1]
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"] = "gpu_workers"
    unqueued = copy.deepcopy(job)
    unqueued["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")
    queued_problem, unqueued_problem = schema_check.Checker().start().check([job, unqueued])
    assert (queued_problem.rule, unqueued_problem.rule) == ("kueue-inadmissible", "pod-validation"), (queued_problem, unqueued_problem)


def test_only_a_queued_objects_refused_pods_hold_quota():
    """A pod-validation finding says the job holds its quota only of a queued object: an unqueued RayCluster's pods are
    refused without any quota to hold."""
    from harness.gate.schema_texts import what_for
    queued = {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "default"}}}
    assert "holds its quota" in what_for("pod-validation", queued)
    assert "quota" not in what_for("pod-validation", {"metadata": {"name": "x"}})
    assert "quota" not in what_for("pod-validation", None)


def test_a_kustomize_error_carries_no_go_pointer(repo_copy, tmp_path):
    """A merge generator with nothing to merge into: kustomize's error prints the generator's pointer (another each run)
    and the resource id's Go struct; the finding names the ConfigMap, the same in every run."""
    edit(repo_copy, "base/kustomization.yaml", "resources:\n", "configMapGenerator:\n  - name: nothing-here\n    namespace: ray\n"
         "    behavior: merge\n    literals: [a=b]\nresources:\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "kustomize-build", "base/kustomization.yaml")
    assert "0x" not in proc.stdout and "ConfigMap/ray/nothing-here does not exist" in proc.stdout, proc.stdout


def test_a_config_map_over_the_data_limit_is_one_finding(repo_copy):
    """The apiserver's refusal and the data-size rule have one cause: data-size, with its fix, is the one reported."""
    from harness.gate.validate import validate_repository
    edit(repo_copy, "base/service-account.yaml", '"${AZURE_STORAGE_ACCOUNT_NAME}"\n', '"${AZURE_STORAGE_ACCOUNT_NAME}"\n  big: ' + "y" * 1_200_000 + "\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("data-size", "base/service-account.yaml", 17)], "\n".join(f.text() for f in found)


def test_a_lender_only_cluster_queue_is_reachable_through_its_cohort(repo_copy):
    """A ClusterQueue no LocalQueue names, in the cohort of queues that have one, lends its quota: no warning."""
    from harness.gate.validate import validate_repository
    (repo_copy / "overlays/team-queues/reserve.yaml").write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: reserve-cq\nspec:\n  cohortName: shared-cohort\n"
        "  namespaceSelector: {}\n  resourceGroups:\n    - coveredResources: [cpu, memory]\n      flavors:\n        - name: default\n"
        "          resources:\n            - {name: cpu, nominalQuota: \"0\"}\n            - {name: memory, nominalQuota: 0Gi}\n")
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "resources:\n", "resources:\n  - reserve.yaml\n")
    found = validate_repository(repo_copy).findings
    assert "clusterqueue-unreachable" not in {f.rule for f in found}, "\n".join(f.text() for f in found)


@pytest.mark.parametrize("case", ["nested-sourceignore", "symlink", "root-pattern"])
def test_what_the_artifact_leaves_out_is_named_at_its_cause(repo_copy, case):
    """The checkout has the file, the artifact source-controller packs does not: a nested .sourceignore's pattern, a
    symlink (the artifact holds none), or a root pattern after the one that keeps the directory."""
    from harness.gate.validate import validate_repository
    prod = "clusters/prod-eastus2"
    if case == "nested-sourceignore":
        (repo_copy / prod / ".sourceignore").write_text("# not for Flux\nqueues.yaml\n")
        where, words = (f"{prod}/.sourceignore", 2), "leaves it out of the artifact"
    elif case == "symlink":
        (repo_copy / prod / "infrastructure.yaml").rename(repo_copy / "infra-real.yaml")
        (repo_copy / prod / "infrastructure.yaml").symlink_to("../../infra-real.yaml")
        where, words = (f"{prod}/kustomization.yaml", 9), "is a symlink"
    else:
        (repo_copy / ".sourceignore").write_text((repo_copy / ".sourceignore").read_text() + "/overlays/single-queue/\n")
        where, words = (".sourceignore", 8), "leaves overlays/single-queue out of the artifact"
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "kustomize-build"]
    assert [(f.file, f.line) for f in found][:1] == [where] and words in found[0].message, "\n".join(f.text() for f in found)


def test_a_sample_short_of_quota_names_the_lending_limit_that_caps_it(repo_copy):
    """team-b lends none of its GPUs: team-a's five-worker job can borrow none, and the fix names that limit."""
    from harness.gate.validate import validate_repository
    edit(repo_copy, "overlays/team-queues/team-b.yaml", '            - name: nvidia.com/gpu\n              nominalQuota: "0"\n              borrowingLimit: "0"\n',
         '            - name: nvidia.com/gpu\n              nominalQuota: "0"\n              borrowingLimit: "0"\n              lendingLimit: "0"\n')
    edit(repo_copy, "clusters/prod-eastus2/samples.yaml", 'NUM_WORKERS: "4"', 'NUM_WORKERS: "5"')
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "sample-fits"]
    assert len(found) == 1 and "team-b-cq's lendingLimit 0" in found[0].hint, "\n".join(f.text() for f in found)


def test_an_encrypted_object_flux_does_not_decrypt_is_at_its_sops_key(repo_copy):
    """A SOPS-encrypted ConfigMap in a layer without spec.decryption reaches the apiserver with its `sops` key: the
    finding is at that key, and the fix is the decryption."""
    from harness.gate.validate import validate_repository
    (repo_copy / "clusters/prod-eastus2/queues/cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: enc\n  namespace: ray\ndata:\n  token: ENC[AES256_GCM,data:abcd,iv:xx,tag:yy,type:str]\n"
        "sops:\n  mac: ENC[AES256_GCM,data:zz,iv:xx,tag:yy,type:str]\n  version: 3.9.0\n")
    edit(repo_copy, "clusters/prod-eastus2/queues/kustomization.yaml", "  - ../../../overlays/team-queues\n", "  - ../../../overlays/team-queues\n  - cm.yaml\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("schema", "clusters/prod-eastus2/queues/cm.yaml", 8)], "\n".join(f.text() for f in found)
    assert "spec.decryption" in found[0].hint, found[0].hint


def test_a_health_check_expression_the_apiserver_refuses_is_its_refusal_alone(repo_copy):
    from harness.gate.validate import validate_repository
    edit(repo_copy, "clusters/prod-eastus2/queues.yaml", "  prune: true\n", "  prune: true\n  healthCheckExprs:\n"
         "    - apiVersion: kueue.x-k8s.io/v1beta2\n      kind: ClusterQueue\n      failed: status.conditions.exists(c, c.type == 'Active')\n")
    found = validate_repository(repo_copy).findings
    assert [f.rule for f in found] == ["api-validation"], "\n".join(f.text() for f in found)


def test_a_flux_path_through_a_symlink_says_so(repo_copy):
    from harness.gate.validate import validate_repository
    prod = repo_copy / "clusters/prod-eastus2"
    (prod / "queues").rename(repo_copy / "flux/queues-prod")
    (prod / "queues").symlink_to("../../flux/queues-prod")
    edit(repo_copy, "flux/queues-prod/kustomization.yaml", "  - ../../../overlays/team-queues", "  - ../../overlays/team-queues")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "flux-path"]
    assert found and "is a symlink" in found[0].message and "replace the symlink" in found[0].hint, "\n".join(f.text() for f in found)


@pytest.mark.parametrize("case", ["clusters", "overlay"])
def test_a_configured_directory_through_a_symlink_is_gate_config_and_the_real_one_is_checked(repo_copy, case):
    """The artifact holds no symlinks: a configured clusters directory or queue overlay named through one is a gate-config
    error at its line, its hint names the real directory, and the rest of the run checks that one (never a silent pass
    with every cluster unrendered)."""
    from harness.gate.validate import validate_repository
    if case == "clusters":
        (repo_copy / "envs").symlink_to("clusters")
        write(repo_copy, ".ray-kueue-gate.yaml", "clusters: envs\n")
        edit(repo_copy, "clusters/prod-eastus2/samples.yaml", "  queue: team-b\n", "  queue: team-x\n")
    else:
        (repo_copy / "overlays/tq").symlink_to("team-queues")
        write(repo_copy, ".ray-kueue-gate.yaml", "queue_overlays:\n  overlays/single-queue: one\n  overlays/tq: per team\n")
    found = validate_repository(repo_copy).findings
    config = [f for f in found if f.rule == "gate-config"]
    assert [(f.file, f.line) for f in config] == [(".ray-kueue-gate.yaml", 1 if case == "clusters" else 3)], "\n".join(f.text() for f in found)
    assert "symlink" in config[0].message and ("(clusters)" if case == "clusters" else "(overlays/team-queues)") in config[0].hint
    others = sorted(f.rule for f in found if f.rule != "gate-config")
    assert others == (["sample-queue"] if case == "clusters" else []), "\n".join(f.text() for f in found)  # no hint through the link


@pytest.mark.parametrize("case", ["cluster-folder", "clusters-directory"])
def test_a_cluster_folder_through_a_symlink_is_one_finding_at_the_symlink(repo_copy, case):
    """Flux finds no entry point through a symlink: one kustomize-build at it, whether it is one cluster's folder or the
    clusters directory above them all (not one per cluster, and not a silent pass)."""
    from harness.gate.validate import validate_repository
    if case == "cluster-folder":
        (repo_copy / "clusters/prod-eastus2").rename(repo_copy / "flux/prod-eastus2")
        (repo_copy / "clusters/prod-eastus2").symlink_to("../flux/prod-eastus2")
        link, names = "clusters/prod-eastus2", "prod-eastus2"
    else:
        (repo_copy / "clusters").rename(repo_copy / "envs")
        (repo_copy / "clusters").symlink_to("envs")
        (repo_copy / ".sourceignore").write_text((repo_copy / ".sourceignore").read_text().replace("!/clusters/", "!/envs/"))
        link, names = "clusters", "dev-westus3, prod-eastus2"
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file) for f in found] == [("kustomize-build", link)], "\n".join(f.text() for f in found)
    assert f"{link} is a symlink" in found[0].message and f"cluster {names} " in found[0].message, found[0].message
    assert found[0].hint.startswith(f"replace the symlink {link} "), found[0].hint


@pytest.mark.parametrize("text", ['clusters: "clusters\\u0000"\n', 'samples: "samples\\u0000.yaml"\n', 'crds: ["crds\\t"]\n',
                                  'terraform: {tfvars: "terraform/clusters\\u0000"}\n',
                                  'queue_overlays: {"overlays/x\\u001b": x}\n'])
def test_a_control_character_in_a_configured_path_is_a_gate_config_finding(repo_copy, tmp_path, text):
    """A NUL is in no path (os.stat refuses it: once an internal error): a gate-config finding at its line, the run goes on."""
    write(repo_copy, ".ray-kueue-gate.yaml", text)
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "gate-config", ".ray-kueue-gate.yaml", 1)
    assert "18 builds" in proc.stdout, proc.stdout  # the defaults were used for the rest of the run


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_a_listed_symlink_out_of_the_repository_is_explained_as_one_inside_it(repo_copy, tmp_path, kind):
    """The artifact source-controller packs holds no symlink wherever it leads: the same explanation and fix as for a
    symlink inside the repository (not kustomize's lstat error alone), and a directory outside is not followed."""
    outside = tmp_path / "outside"
    write(outside, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: out, namespace: ray}\n")
    write(outside, "kustomization.yaml", "resources:\n- cm.yaml\n")
    (repo_copy / "base/out.yaml").symlink_to(outside / "cm.yaml" if kind == "file" else outside)
    edit(repo_copy, "base/kustomization.yaml", LIST_IN_BASE[0], LIST_IN_BASE[0] + "  - out.yaml\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "kustomize-build", "base/kustomization.yaml", 11)
    assert "base/out.yaml is a symlink, and the artifact source-controller packs holds no symlinks" in proc.stdout, proc.stdout
    assert "fix: replace the symlink base/out.yaml by the file (or directory) itself" in proc.stdout, proc.stdout


@pytest.mark.parametrize("case", ["patch", "component"])
def test_a_symlinked_patch_or_component_is_one_finding_where_it_is_listed(repo_copy, case):
    """A patch file or a component directory that is a symlink: the artifact holds none, so Flux's kustomize finds no such
    file while a local build follows the link; the artifact's explanation at the line that lists it (not kustomize's "no
    such file" with a hint to run the build that succeeds), and a component two overlays include is one finding naming both."""
    from harness.gate.validate import validate_repository
    if case == "patch":
        write(repo_copy, "base/patches/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ray\n  labels: {team: ml}\n")
        (repo_copy / "base/ns-patch.yaml").symlink_to("patches/ns.yaml")
        (repo_copy / "base/kustomization.yaml").write_text((repo_copy / "base/kustomization.yaml").read_text() + "patches:\n  - path: ns-patch.yaml\n")
        link = "base/ns-patch.yaml"
        where = ("base/kustomization.yaml", len((repo_copy / "base/kustomization.yaml").read_text().splitlines()))
        named = []
    else:
        link = "components/gpu-sku/standard-nd96amsr-a100-v4"
        (repo_copy / link).rename(repo_copy / "components/gpu-sku/nd96-real")
        (repo_copy / link).symlink_to("nd96-real")
        where, named = ("overlays/single-queue/kustomization.yaml", 9), ["overlays/team-queues/kustomization.yaml:10"]
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("kustomize-build", *where)], "\n".join(f.text() for f in found)
    assert f"{link} is a symlink, and the artifact source-controller packs holds no symlinks" in found[0].message, found[0].message
    assert all(n in found[0].message for n in named) and "no such file" not in found[0].message, found[0].message
    assert found[0].hint == f"replace the symlink {link} by the file (or directory) itself", found[0].hint
