"""Forms of a valid repository the gate must pass as Flux does: a kustomization file under any of the names kustomize
reads, and a ${VAR} Flux substitutes in a field the apiserver validates strictly (the directory's own build shows the
variable; the cluster's render, which the gate checks, shows its value)."""
from __future__ import annotations

import pytest

from harness.gate import render_repository
from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import KUEUE, PROD, edit

pytestmark = pytest.mark.static


@pytest.mark.parametrize("directory", ["overlays/team-queues", "clusters/prod-eastus2/queues", "clusters/prod-eastus2", "base",
                                       "components/gpu-sku/standard-nd96amsr-a100-v4"])
@pytest.mark.parametrize("name", ["kustomization.yml", "Kustomization"])
def test_a_kustomization_file_under_another_name_kustomize_reads_is_clean(repo_copy, directory, name):
    (repo_copy / directory / "kustomization.yaml").rename(repo_copy / directory / name)
    report = validate_repository(repo_copy)
    assert report.findings == [] and report.builds == 18, "\n".join(f.text() for f in report.findings)


def test_a_name_prefix_in_a_kustomization_yml_is_one_finding_at_it(repo_copy):
    (repo_copy / "overlays/team-queues/kustomization.yaml").rename(repo_copy / "overlays/team-queues/kustomization.yml")
    edit(repo_copy, "overlays/team-queues/kustomization.yml", "resources:\n", "namePrefix: x-\nresources:\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file) for f in found] == [("kustomize-rename", "overlays/team-queues/kustomization.yml")], \
        "\n".join(f.text() for f in found)


def _quota_variable(repo, value: str) -> None:
    (repo / PROD / "queues/kustomization.yaml").write_text(
        (repo / PROD / "queues/kustomization.yaml").read_text() + "patches:\n  - target: {kind: ClusterQueue, name: team-a-cq}\n    patch: |-\n"
        '      - {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "${TEAM_GPU_QUOTA}"}\n')
    edit(repo, f"{PROD}/queues.yaml", "      CLUSTER_NAME: prod-eastus2\n", f'      CLUSTER_NAME: prod-eastus2\n      TEAM_GPU_QUOTA: "{value}"\n')


def test_a_variable_flux_substitutes_in_a_strict_field_is_clean(repo_copy):
    _quota_variable(repo_copy, "4")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_substituted_value_the_apiserver_refuses_is_found(repo_copy):
    _quota_variable(repo_copy, "4 GPUs")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "api-validation"]
    assert len(found) == 1 and '"4 GPUs"' in found[0].message and found[0].resource == "ClusterQueue/team-a-cq", found
    assert (found[0].file, found[0].line) == (f"{PROD}/queues/kustomization.yaml", 10), found  # the patch writing ${TEAM_GPU_QUOTA}


@pytest.mark.parametrize("default,refused", [("1000", False), ("high", True)])
def test_a_variable_with_a_default_in_a_shared_base_is_judged_as_every_flux_layer_substitutes_it(repo_copy, default, refused):
    """base/ is built by the clusters' queue layers and by clusters/local/entry's (the harness's cluster, no cluster of the
    gate's): every one substitutes ${VAR:=default}, so the plain builds do not judge the text, the clusters' renders judge
    the value."""
    edit(repo_copy, "base/priority-classes.yaml", "value: 1000", "value: ${HIGH_PRIORITY:=%s}" % default)
    found = validate_repository(repo_copy).findings
    if refused:
        assert [(f.rule, f.file) for f in found] == [("api-validation", "base/priority-classes.yaml")], found
        assert "dev-westus3" in found[0].context and "prod-eastus2" in found[0].context, found[0].context
    else:
        assert found == [], "\n".join(f.text() for f in found)


def test_the_pinned_chart_from_an_oci_helm_repository_is_clean(repo_copy):
    edit(repo_copy, KUEUE, "kind: OCIRepository\nmetadata:\n  name: kueue\n  namespace: flux-system\nspec:\n  interval: 24h\n"
         "  url: oci://mcr.microsoft.com/aks/ai-runtime/helm/kueue\n  ref:\n    tag: 0.17.1\n  layerSelector:\n"
         "    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n",
         "kind: HelmRepository\nmetadata:\n  name: mcr\n  namespace: flux-system\nspec:\n  type: oci\n  interval: 24h\n"
         "  url: oci://mcr.microsoft.com/aks/ai-runtime/helm\n")
    edit(repo_copy, KUEUE, "  chartRef:\n    kind: OCIRepository\n    name: kueue\n",
         "  chart:\n    spec:\n      chart: kueue\n      version: 0.17.1\n      sourceRef:\n        kind: HelmRepository\n        name: mcr\n")
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


@pytest.mark.parametrize("applied", [True, False])
def test_manifests_of_a_flux_path_without_kustomization_file_are_applied(repo_copy, applied):
    """kustomize-controller generates the kustomization of a path that has none, listing every manifest under it."""
    (repo_copy / PROD / "extras").mkdir()
    (repo_copy / PROD / "extras/limits.yaml").write_text("apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: extra\n  namespace: ray\n"
                                                          "spec:\n  limits:\n    - type: Container\n      max: {cpu: \"64\"}\n"
                                                          "      default: {cpu: \"1\"}\n")  # (without, the submitter gets 64)
    if applied:
        queues = repo_copy / PROD / "queues.yaml"
        queues.write_text(queues.read_text() + "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n"
                          "  name: extras\n  namespace: flux-system\nspec:\n  interval: 10m\n  prune: true\n  sourceRef:\n"
                          "    kind: GitRepository\n    name: flux-system\n  path: ./clusters/prod-eastus2/extras\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file) for f in found] == ([] if applied else [("kustomize-unlisted", f"{PROD}/extras/limits.yaml")]), \
        "\n".join(f.text() for f in found)


def test_a_layer_the_source_artifact_leaves_out_names_sourceignore(repo_copy):
    """Moved out of the directories .sourceignore keeps, the layer exists in the checkout but not for Flux."""
    (repo_copy / "infrastructure").mkdir()
    (repo_copy / "flux/infrastructure/controllers").rename(repo_copy / "infrastructure/controllers")
    for cluster in ("dev-westus3", "prod-eastus2"):
        edit(repo_copy, f"clusters/{cluster}/infrastructure.yaml", "./flux/infrastructure/controllers", "./infrastructure/controllers")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file) for f in found] == [("kustomize-build", "infrastructure/controllers/kustomization.yaml")], found
    assert "!/infrastructure/" in found[0].hint and ".sourceignore" in found[0].message, found[0].text()


def test_a_finding_points_at_the_overlay_the_cluster_applies(repo_copy):
    """Both overlays define a LocalQueue ray/default once team-b's is renamed so: the one prod-eastus2 applies is team-b's,
    and its wrong clusterQueue is reported there, once, not in the single-queue overlay."""
    edit(repo_copy, "overlays/team-queues/team-b.yaml", "  name: team-b\n  namespace: ray\nspec:\n  clusterQueue: team-b-cq",
         "  name: default\n  namespace: ray\nspec:\n  clusterQueue: nope")
    edit(repo_copy, f"{PROD}/samples.yaml", "queue: team-b", "queue: team-a")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("localqueue-clusterqueue", "overlays/team-queues/team-b.yaml", 40)], \
        "\n".join(f.text() for f in found)


TEAM_C = {"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-c\nresources:\n"
                               "  - ns.yaml\n  - lq.yaml\n",
          "ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-c\n",
          "lq.yaml": "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: default\nspec:\n  clusterQueue: %s\n"}


@pytest.mark.parametrize("queue,found", [("team-b-cq", []), ("nope", [("localqueue-clusterqueue", "overlays/team-queues/team-c/lq.yaml", 6)])],
                         ids=["its-clusterqueue-in-the-overlay", "a-missing-clusterqueue"])
def test_a_folder_the_overlay_includes_is_judged_in_the_overlay(repo_copy, queue, found):
    """A team folder with its own kustomization.yaml (namespace: team-c), listed by overlays/team-queues: no cluster applies
    it alone, so its LocalQueue's ClusterQueue is the overlay's (team-b-cq there: clean), and a missing one is reported once."""
    (repo_copy / "overlays/team-queues/team-c").mkdir()
    for name, text in TEAM_C.items():
        (repo_copy / "overlays/team-queues/team-c" / name).write_text(text % queue if name == "lq.yaml" else text)
    edit(repo_copy, "overlays/team-queues/kustomization.yaml", "  - team-b.yaml\n", "  - team-b.yaml\n  - team-c\n")
    assert [(f.rule, f.file, f.line) for f in validate_repository(repo_copy).findings] == found


def test_one_clusters_flux_patches_stay_on_that_cluster(repo_copy):
    """kustomize-controller builds each Kustomization in its own copy of the artifact: dev-westus3's patch of the Kueue
    HelmRelease (flux/infrastructure/controllers, a path prod-eastus2's Kustomization builds too) is not prod's."""
    ks = repo_copy / "clusters/dev-westus3/infrastructure.yaml"
    ks.write_text(ks.read_text().rstrip("\n") + "\n  patches:\n    - target: {kind: HelmRelease, name: kueue}\n      patch: |\n"
                  "        - {op: replace, path: /spec/values/controllerManager/manager/image/tag, value: v0.17.0}\n")
    _, clusters = render_repository(repo_copy)
    tags = {c.name: o["spec"]["values"]["controllerManager"]["manager"]["image"]["tag"] for c in clusters for b in c.flux
            for o in b.objects if o.get("kind") == "HelmRelease" and o["metadata"]["name"] == "kueue"}
    assert tags == {"dev-westus3": "v0.17.0", "prod-eastus2": "v0.17.1"}, tags
    found = [(f.rule, f.context) for f in validate_repository(repo_copy).findings]
    assert found == [("versions-drift", "cluster dev-westus3: Kustomization/flux-system/infra-controllers")], found


def test_a_layer_sourceignore_keeps_and_then_leaves_out_points_past_the_line_that_keeps_it(repo_copy):
    """`!/base/` is there already; a pattern appended after it leaves base/ out again: the finding is at that pattern, and
    the hint says the earlier line keeps it only until then, not "add it"."""
    (repo_copy / ".sourceignore").write_text((repo_copy / ".sourceignore").read_text() + "/base/\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "kustomize-build"]
    assert found and all((f.file, f.line) == (".sourceignore", 8) and "`!/base/` at .sourceignore:3 keeps it until that line" in f.hint
                         for f in found), found


GOTK_SYNC = """# This manifest was generated by flux. DO NOT EDIT.
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  secretRef:
    name: flux-system
  url: ssh://git@github.com/example/aks-ray-kueue
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./clusters/prod-eastus2
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def test_the_sync_file_flux_bootstrap_writes_beside_the_kustomization_is_one_collision_on_an_extension_cluster(repo_copy):
    """`flux bootstrap --path=clusters/prod-eastus2` writes a flux-system Kustomization whose path is the cluster's own
    directory, which lists it: Flux applies each layer once. But terraform/flux.tf bootstraps prod-eastus2 (it has a tfvars
    file) with the AKS Flux extension, whose GitRepository flux-system the file's replaces: one object-collision at the file
    (flux_tenancy.bootstrap_collisions), its deploy key warning folded under it."""
    (repo_copy / PROD / "flux-system/gotk-sync.yaml").write_text(GOTK_SYNC)
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.severity, f.file, f.line) for f in found] == [
        ("object-collision", "error", f"{PROD}/flux-system/gotk-sync.yaml", 3)], "\n".join(f.text() for f in found)
    assert "terraform/flux.tf:" in found[0].message and found[0].hint.startswith(f"leave the files of {PROD}/flux-system/ empty")


def test_other_objects_of_the_flux_system_folder_on_an_extension_cluster_are_clean(repo_copy):
    """Only what `flux bootstrap` writes there collides with the extension's Flux: a ConfigMap beside it is applied like any
    other object of the cluster folder."""
    (repo_copy / PROD / "flux-system/settings.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform-settings\n  namespace: flux-system\ndata:\n  owner: platform\n")
    edit(repo_copy, f"{PROD}/flux-system/kustomization.yaml", "  - gotk-sync.yaml\n", "  - gotk-sync.yaml\n  - settings.yaml\n")
    assert [f.text() for f in validate_repository(repo_copy).findings] == []


def test_flux_installs_controllers_in_the_flux_system_folder_collide_on_an_extension_cluster(repo_copy):
    """gotk-components.yaml's objects (labelled app.kubernetes.io/part-of: flux by `flux install`) are the extension's own."""
    (repo_copy / PROD / "flux-system/gotk-components.yaml").write_text(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: source-controller\n  namespace: flux-system\n  labels:\n"
        "    app.kubernetes.io/instance: flux-system\n    app.kubernetes.io/part-of: flux\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("object-collision", f"{PROD}/flux-system/gotk-components.yaml", 1)], \
        "\n".join(f.text() for f in found)


def test_the_sync_kustomizations_patches_are_applied_to_the_entry(repo_copy):
    """Flux builds the entry with flux-system's spec: a patch of it that matches nothing breaks the whole cluster."""
    (repo_copy / PROD / "flux-system/gotk-sync.yaml").write_text(
        GOTK_SYNC + "  patches:\n    - target: {kind: Kustomization, name: queues}\n      patch: |-\n"
                    "        - {op: replace, path: /spec/nope/deeper, value: x}\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error and f.rule != "object-collision"]  # (the extension's: above)
    assert [(f.rule, f.file, f.line) for f in found] == [("kustomize-build", f"{PROD}/flux-system/gotk-sync.yaml", 28)], \
        "\n".join(f.text() for f in found)
    assert "spec.patches" in found[0].hint, found[0].hint


def test_an_entry_listing_a_layers_directory_is_one_collision_at_that_line(repo_copy):
    """The entry point applies the directory its queues layer applies too: the two fight and prune each other (and the
    entry, without postBuild, would apply the layer's ${VARS} as written: a follow-on of the same line)."""
    edit(repo_copy, f"{PROD}/kustomization.yaml", "  - queues.yaml\n", "  - queues.yaml\n  - queues\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("object-collision", f"{PROD}/kustomization.yaml", 11)], \
        "\n".join(f.text() for f in found)


def test_an_entry_variable_flux_applies_as_written_is_found(repo_copy):
    """A ${VAR} the layers substitute, in an object the entry point applies itself (flux-system has no postBuild)."""
    (repo_copy / PROD / "storage.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: storage\n  namespace: flux-system\n"
                                                  "data:\n  tenant: ${AZURE_TENANT_ID}\n")
    edit(repo_copy, f"{PROD}/kustomization.yaml", "  - queues.yaml\n", "  - queues.yaml\n  - storage.yaml\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("flux-variable-undefined", f"{PROD}/storage.yaml", 1)], \
        "\n".join(f.text() for f in found)


def test_a_cluster_folder_without_kustomization_file_applies_its_layer_directories(repo_copy):
    """The AKS Flux extension's style: Flux's generator builds the folder with every directory below it that has a
    kustomization file, so queues/ is applied by the entry and by its layer; samples.yaml is .sourceignored."""
    (repo_copy / PROD / "kustomization.yaml").unlink()
    for name in ("gotk-components.yaml", "gotk-sync.yaml", "kustomization.yaml"):
        (repo_copy / PROD / "flux-system" / name).unlink()
    (repo_copy / PROD / "flux-system").rmdir()
    (repo_copy / PROD / ".sourceignore").write_text("samples.yaml\ncluster-vars.example.yaml\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("object-collision", f"{PROD}/queues.yaml", 20)], "\n".join(f.text() for f in found)
    assert "kustomization.yaml" in found[0].hint and "move the layer's directory" in found[0].hint, found[0].hint


def test_a_cluster_folder_without_kustomization_file_applies_its_variables_stand_in(repo_copy):
    """Flux's generator applies cluster-vars.example.yaml too when no .sourceignore leaves it out: its example values
    overwrite the ConfigMap Terraform writes."""
    (repo_copy / PROD / "kustomization.yaml").unlink()
    for name in ("gotk-components.yaml", "gotk-sync.yaml", "kustomization.yaml"):
        (repo_copy / PROD / "flux-system" / name).unlink()
    (repo_copy / PROD / "flux-system").rmdir()
    (repo_copy / PROD / ".sourceignore").write_text("samples.yaml\n")
    found = [f for f in validate_repository(repo_copy).findings if f.file == f"{PROD}/cluster-vars.example.yaml"]
    assert [(f.rule, f.severity) for f in found] == [("flux-variables-applied", "error")], "\n".join(f.text() for f in found)


CONTROLLERS = "flux/infrastructure/controllers"


def _values_from(repo, generator_options: str, values_from: str) -> None:
    (repo / CONTROLLERS / "kueue-values.yaml").write_text("controllerManager:\n  replicas: 1\n")
    edit(repo, f"{CONTROLLERS}/kustomization.yaml", "  - nvidia-device-plugin.yaml\n",
         "  - nvidia-device-plugin.yaml\nconfigMapGenerator:\n  - name: kueue-values\n    namespace: flux-system\n"
         "    files: [kueue-values.yaml]\n" + generator_options)
    edit(repo, KUEUE, "  releaseName: kueue\n", "  releaseName: kueue\n  valuesFrom:\n" + values_from)


@pytest.mark.parametrize("values_from, line", [("    - kind: ConfigMap\n      name: kueue-values\n      valuesKey: kueue-values.yaml\n", None),
                                                ("    - kind: ConfigMap\n      name: kueue-values\n      valuesKey: value.yaml\n", 33),
                                                ("    - kind: ConfigMap\n      name: kueue-values\n      optional: true\n", None)])
def test_a_values_from_key_the_config_map_lacks_fails_the_release(repo_copy, values_from, line):
    """helm-controller reads valuesKey (values.yaml by default) of the object; `optional` excuses a missing key as it excuses
    a missing object (fluxcd/pkg/chartutil v1.27.1's ChartValuesFromReferences, what helm-controller v1.6.3 calls)."""
    _values_from(repo_copy, "    options: {disableNameSuffixHash: true}\n", values_from)
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == ([("object-ref", KUEUE, line)] if line else []), "\n".join(f.text() for f in found)


def test_values_from_does_not_switch_off_the_check_of_the_inline_values(repo_copy):
    """helm-controller merges valuesFrom first and spec.values over them: an optional reference to nothing leaves the inline
    values what the chart renders with, and an effect the apiserver refuses is still found, at its line."""
    edit(repo_copy, KUEUE, "  values:\n", "  valuesFrom:\n    - kind: ConfigMap\n      name: kueue-overrides\n      optional: true\n  values:\n")
    edit(repo_copy, KUEUE, "          effect: NoSchedule\n", "          effect: NoSchedul\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    line = 1 + (repo_copy / KUEUE).read_text().splitlines().index("          effect: NoSchedul")
    assert [(f.rule, f.file, f.line) for f in found] == [("helm-values", KUEUE, line)], "\n".join(f.text() for f in found)


def test_a_refused_value_a_values_from_file_writes_is_found_at_its_line_in_that_file(repo_copy):
    _values_from(repo_copy, "    options: {disableNameSuffixHash: true}\n",
                 "    - kind: ConfigMap\n      name: kueue-values\n      valuesKey: kueue-values.yaml\n")
    (repo_copy / CONTROLLERS / "kueue-values.yaml").write_text("controllerManager:\n  replicas: -1\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("helm-values", f"{CONTROLLERS}/kueue-values.yaml", 2)], \
        "\n".join(f.text() for f in found)
    assert "values.controllerManager.replicas" in found[0].message, found[0].text()


def test_a_refused_value_in_a_values_from_config_map_block_is_found_at_its_line(repo_copy):
    (repo_copy / CONTROLLERS / "kueue-overrides.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kueue-overrides\n  namespace: flux-system\ndata:\n  values.yaml: |\n"
        "    controllerManager:\n      replicas: 1\n      tolerations:\n        - {key: CriticalAddonsOnly, operator: Exists, effect: NoSchedul}\n")
    edit(repo_copy, f"{CONTROLLERS}/kustomization.yaml", "  - kuberay-operator.yaml\n", "  - kuberay-operator.yaml\n  - kueue-overrides.yaml\n")
    edit(repo_copy, KUEUE, "  values:\n", "  valuesFrom:\n    - kind: ConfigMap\n      name: kueue-overrides\n  values:\n")
    edit(repo_copy, KUEUE, "      tolerations:\n        - key: CriticalAddonsOnly\n          operator: Exists\n          effect: NoSchedule\n", "")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("helm-values", f"{CONTROLLERS}/kueue-overrides.yaml", 11)], \
        "\n".join(f.text() for f in found)


def test_a_values_from_a_generated_config_map_with_its_hash_suffix_says_so(repo_copy):
    _values_from(repo_copy, "", "    - kind: ConfigMap\n      name: kueue-values\n      valuesKey: kueue-values.yaml\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("object-ref", KUEUE, 32)], "\n".join(f.text() for f in found)
    assert "disableNameSuffixHash" in found[0].hint and "kueue-values-" in found[0].message, found[0].text()


def test_a_decryption_service_account_the_cluster_lacks_is_found(repo_copy):
    """kustomize-controller impersonates spec.decryption.serviceAccountName to reach the KMS key."""
    edit(repo_copy, f"{PROD}/queues.yaml", "  prune: true\n", "  prune: true\n  decryption:\n    provider: sops\n    serviceAccountName: sops-keyvault\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("object-ref", f"{PROD}/queues.yaml", 18)], "\n".join(f.text() for f in found)
    assert "ServiceAccount" in found[0].hint, found[0].hint


def test_a_release_with_chart_and_chart_ref_is_the_crds_refusal_alone(repo_copy):
    edit(repo_copy, KUEUE, "  releaseName: kueue\n", "  releaseName: kueue\n  chart:\n    spec:\n      chart: kueue\n      version: 0.17.1\n"
         "      sourceRef:\n        kind: OCIRepository\n        name: kueue\n")
    found = validate_repository(repo_copy).findings
    assert {f.rule for f in found} == {"api-validation"}, "\n".join(f.text() for f in found)


def test_a_secret_written_with_string_data_is_a_substitution_source(repo_copy):
    """kustomize-controller reads a substituteFrom Secret as the apiserver stores it: stringData folded into data."""
    (repo_copy / PROD / "cluster-secrets.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n"
                                                         "  namespace: flux-system\nstringData:\n  RAY_TOKEN: abc\n")
    edit(repo_copy, f"{PROD}/kustomization.yaml", "  - queues.yaml\n", "  - queues.yaml\n  - cluster-secrets.yaml\n")
    edit(repo_copy, f"{PROD}/queues.yaml", "      - kind: ConfigMap\n        name: cluster-vars\n",
         "      - kind: ConfigMap\n        name: cluster-vars\n      - kind: Secret\n        name: cluster-secrets\n")
    (repo_copy / PROD / "queues/kustomization.yaml").write_text((repo_copy / PROD / "queues/kustomization.yaml").read_text()
                                                               + 'configMapGenerator:\n  - name: tokens\n    namespace: ray\n'
                                                               '    literals: ["TOKEN=${RAY_TOKEN}"]\n')
    found = validate_repository(repo_copy).findings
    assert found == [], "\n".join(f.text() for f in found)


def test_a_misspelt_variable_is_one_finding_where_it_is_written_naming_the_defined_one(repo_copy):
    edit(repo_copy, "base/service-account.yaml", '"${AZURE_TENANT_ID}"', '"${AZURE_TENANTID}"')
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("flux-variable-undefined", "base/service-account.yaml", 9)], \
        "\n".join(f.text() for f in found)
    assert "${AZURE_TENANT_ID}" in found[0].hint and "dev-westus3" in found[0].context and "prod-eastus2" in found[0].context, found[0].text()


def test_values_from_data_that_is_no_yaml_fails_the_release_at_its_key(repo_copy):
    """fluxcd/pkg/chartutil's ChartValuesFromReferences refuses values that do not parse (ErrValuesDataRead): helm-controller
    fails the release with ValuesError."""
    (repo_copy / CONTROLLERS / "kueue-overrides.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kueue-overrides\n  namespace: flux-system\ndata:\n  values.yaml: |\n"
        "    controllerManager:\n      manager: [unclosed\n")
    edit(repo_copy, f"{CONTROLLERS}/kustomization.yaml", "  - kuberay-operator.yaml\n", "  - kuberay-operator.yaml\n  - kueue-overrides.yaml\n")
    edit(repo_copy, KUEUE, "  values:\n", "  valuesFrom:\n    - kind: ConfigMap\n      name: kueue-overrides\n  values:\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.file, f.line) for f in found] == [("helm-values", f"{CONTROLLERS}/kueue-overrides.yaml", 7)], \
        "\n".join(f.text() for f in found)
    assert "ValuesError" in found[0].message, found[0].text()


def test_a_depends_on_typo_is_one_finding(repo_copy):
    """The queue layer's dependsOn naming no Kustomization: flux-depends-on alone, not also flux-layer-order's warning that
    the layer does not wait for the one installing Kueue (the typo is why)."""
    edit(repo_copy, f"{PROD}/queues.yaml", "- name: infra-controllers", "- name: infra-controller")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file) for f in found] == [("flux-depends-on", f"{PROD}/queues.yaml")], "\n".join(f.text() for f in found)


def test_a_variable_set_nowhere_in_a_quota_is_one_finding(repo_copy):
    """Strict substitution fails the layer's build: the apiserver never sees the ClusterQueue, so its quota the gate
    substituted empty is no api-validation finding of its own, and the samples it would have judged fold under it."""
    nc24 = "components/gpu-sku/standard-nc24ads-a100-v4/kustomization.yaml"
    edit(repo_copy, nc24, '/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "1"}',
         '/spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "${GPU_COUNT}"}')
    edit(repo_copy, "clusters/dev-westus3/queues.yaml", "    substitute:\n", '    substitute:\n      GPU_CUONT: "1"\n')
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file) for f in found] == [("flux-variable-undefined", nc24)], "\n".join(f.text() for f in found)
    assert "${GPU_CUONT}" in found[0].hint, found[0].hint
