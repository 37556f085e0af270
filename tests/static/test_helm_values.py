"""harness/gate/helm_values.py: the Kueue chart rendered by Helm's own engine with the HelmRelease's values, as
helm-controller renders it, and what the copy of the chart leaves out."""
from __future__ import annotations

import fnmatch
import re

import pytest

from harness import toolchain
from harness.gate import helm_values, schemas, version_rules

pytestmark = pytest.mark.static


def test_the_templates_left_out_take_nothing_from_the_values_but_the_release_name_and_labels():
    """The copy of the chart leaves out the aggregated editor/viewer ClusterRoles: the gate may, only while they
    read no value and no condition, and no helper but the name and labels the checked objects carry too."""
    subdir, left_out = schemas.CHART_SOURCES["kueue"]
    chart = toolchain.module_dir("kueue") / subdir
    roles = [p for p in sorted((chart / "templates").rglob("*.yaml"))
             if any(fnmatch.fnmatch(p.relative_to(chart).as_posix(), pat) for pat in left_out)
             and not p.relative_to(chart).as_posix().startswith("templates/crd/")]
    assert len(roles) >= 40, roles  # a chart that renamed them: the patterns no longer leave them out
    for path in roles:
        text = path.read_text()
        actions = re.findall(r"{{-?\s*(.*?)\s*-?}}", text, re.S)
        used = {a for a in actions if not a.startswith("/*")}
        assert used <= {'include "kueue.fullname" .', 'include "kueue.labels" . | nindent 4'}, (path, used)


def test_the_objects_rendered_beside_them_carry_the_same_name_and_labels():
    """What the left-out roles take (kueue.fullname, kueue.labels) is checked on the objects rendered beside them:
    the manager's ConfigMap and the batch admin ClusterRole (kept) include both as the roles do."""
    chart = toolchain.module_dir("kueue") / "charts" / "kueue" / "templates"
    for rel in ("manager/manager-config.yaml", "rbac/batch_admin_role.yaml"):
        text = (chart / rel).read_text()
        assert 'include "kueue.fullname" .' in text and 'include "kueue.labels" .' in text, rel


def test_the_repositorys_values_render_and_are_accepted():
    """The HelmRelease of the repository, as every production cluster installs it: no finding, and the render
    is the chart's (the Deployment, its webhook Service and the configuration the gate's other rules read)."""
    from harness.core import versions
    from harness.gate import render_repository
    from harness.gate.cluster_index import ClusterIndex
    from harness.gate.helper import helper
    from harness.gate.rules import Context
    from harness.gate.sources import Sources

    root = versions.REPO_ROOT
    _, clusters = render_repository(root)
    assert helm_values.helm_rules(Context(Sources.load(root)), root, clusters) == []
    index = ClusterIndex.build(root, next(c for c in clusters if c.name == "prod-eastus2"))
    hr = next(hr for _, hr in index.of_kind("HelmRelease") if index.chart_of(hr) == "kueue")
    name, namespace = helm_values.release_of(hr)
    assert (name, namespace) == ("kueue", "kueue-system")
    answer = helper().call("helm", helm_values.HelmError, kubernetes_version="1.35.4",
                           helm={"chart": str(schemas.chart_dir("kueue")), "values": hr["spec"]["values"], "release": name, "namespace": namespace})
    kinds = {(o["object"]["kind"], o["object"]["metadata"]["name"]) for o in answer["objects"]}
    assert {("Deployment", "kueue-controller-manager"), ("Service", "kueue-webhook-service"), ("ConfigMap", "kueue-manager-config")} <= kinds


@pytest.mark.parametrize("spec, release", [
    ({"metadata": {"name": "kueue", "namespace": "flux-system"}, "spec": {"targetNamespace": "kueue-system"}}, ("kueue-system-kueue", "kueue-system")),
    ({"metadata": {"name": "kueue", "namespace": "flux-system"}, "spec": {"releaseName": "k", "targetNamespace": "q"}}, ("k", "q")),
    ({"metadata": {"name": "kueue", "namespace": "kueue-system"}, "spec": {}}, ("kueue", "kueue-system")),
])
def test_the_release_is_named_as_helm_controller_names_it(spec, release):
    assert helm_values.release_of(spec) == release


def test_values_are_judged_with_the_chart_version_the_release_installs(repo_copy):
    """A chart tag other than the pinned one is versions-drift; the values are rendered with the chart that tag installs
    when a module of versions.yaml (the pin or a candidate) carries it, and not at all (versions-drift alone) otherwise."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import KUEUE, edit

    edit(repo_copy, KUEUE, "          effect: NoSchedule\n", "          effect: NoSchedul\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.message.split(" with ")[0]) for f in found] == [("helm-values", "the kueue chart 0.17.1")], found
    edit(repo_copy, KUEUE, "    tag: 0.17.1\n", "    tag: 0.18.3\n")
    found = validate_repository(repo_copy).findings
    assert sorted((f.rule, f.message.split(" with ")[0]) for f in found if f.rule == "helm-values") == [("helm-values", "the kueue chart 0.18.3")], found
    assert {f.rule for f in found} == {"helm-values", "versions-drift"}, found
    edit(repo_copy, KUEUE, "    tag: 0.18.3\n", "    tag: 0.18.0\n")
    assert {f.rule for f in validate_repository(repo_copy).findings} == {"versions-drift"}


def _promote(root, version: str) -> None:
    """Kueue promoted as the README's "Promoting a candidate" says: versions.yaml, the OCIRepository tag, the image tag."""
    from tests.static.test_gate_corpus import KUEUE, edit

    edit(root, KUEUE, "    tag: 0.17.1\n", f"    tag: {version}\n")
    edit(root, KUEUE, "          tag: v0.17.1\n", f"          tag: v{version}\n")
    edit(root, "versions.yaml", "  production: 0.17.1\n", f"  production: {version}\n")


def test_a_promotion_to_a_candidate_is_judged_with_the_candidates_chart(repo_copy):
    """Keys only the 0.19 chart reads are no helm-values-unused (whose hint would remove them), and a bad value is judged
    against the 0.19.2 chart, the one the promoted HelmRelease installs."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import KUEUE, edit

    _promote(repo_copy, "0.19.2")
    edit(repo_copy, KUEUE, "  values:\n    controllerManager:\n", "  values:\n    enableVisibilityAuthReaderRoleBinding: false\n"
         "    controllerManager:\n      strategy:\n        rollingUpdate:\n          maxSurge: 0\n")
    found = validate_repository(repo_copy).findings
    assert [f.rule for f in found] == ["versions-pins"], "\n".join(f.text() for f in found)
    assert "(wait-for-pods-ready-default" in found[0].message and "Set waitForPodsReady explicitly" in found[0].hint, found[0].text()
    edit(repo_copy, KUEUE, "          effect: NoSchedule\n", "          effect: NoSchedul\n")
    found = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert [(f.rule, f.message.split(" with ")[0]) for f in found] == [("helm-values", "the kueue chart 0.19.2")], found


def test_a_chart_version_no_module_carries_is_said_not_judged(repo_copy):
    """A version versions.yaml lists neither as the pin nor as a candidate: the values are not rendered, and a warning at
    the HelmRelease's chartRef says so (never a silent pass, never the pinned chart's verdict)."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import KUEUE, edit

    _promote(repo_copy, "0.20.0")
    edit(repo_copy, KUEUE, "          effect: NoSchedule\n", "          effect: NoSchedul\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("helm-values")]
    assert [(f.rule, f.severity, f.file, f.line) for f in found] == [("helm-values", "warning", KUEUE, 33)], found
    assert "the values are not rendered" in found[0].message and "0.20.0" in found[0].hint


def test_a_candidate_chart_that_cannot_be_fetched_is_said_not_judged(repo_copy, monkeypatch):
    """Offline, without the candidate's module in the cache: a warning names the failure, never a traceback or silence."""
    from harness.core import HarnessError
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import KUEUE, edit

    pinned = schemas.chart_dir

    def offline(pin, extra=(), version=None):
        if pin == "kueue" and version not in (None, "v0.17.1"):  # (layer 1's device plugin chart stays the pinned one)
            raise HarnessError(f"sigs.k8s.io/kueue@{version}: proxy unreachable")
        return pinned(pin, extra, version)

    monkeypatch.setattr(schemas, "chart_dir", offline)
    edit(repo_copy, KUEUE, "    tag: 0.17.1\n", "    tag: 0.18.3\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule.startswith("helm-values")]
    assert [(f.rule, f.severity, f.line) for f in found] == [("helm-values", "warning", 33)], found
    assert "cannot be fetched (sigs.k8s.io/kueue@v0.18.3: proxy unreachable)" in found[0].message, found


def test_a_selected_kueue_renders_its_own_chart(monkeypatch):
    """--kueue V (the rehearsal's candidate side): every Kueue HelmRelease is rendered with V's chart, the one that upgrade
    installs; without it, the chart of the version the HelmRelease names."""
    assert [version_rules.chart_module("kueue", v) for v in ("0.17.1", "0.19.2", "v0.18.3", "0.20.0", None)] == \
        ["v0.17.1", "v0.19.2", "v0.18.3", None, "v0.17.1"]
    monkeypatch.setenv("RAY_KUEUE_VERSIONS", "kueue=v0.19.2")
    assert [version_rules.chart_module("kueue", v) for v in ("0.17.1", "0.20.0", None)] == ["v0.19.2"] * 3


def test_a_chart_ref_to_a_helm_chart_is_read_for_its_version(repo_copy):
    """chartRef kind HelmChart: the chart and version are the HelmChart's spec (helm-controller reconciles it): a version
    other than the pin is versions-drift at its spec.version, and the values are judged with that chart."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import KUEUE, edit

    edit(repo_copy, KUEUE, "---\napiVersion: helm.toolkit.fluxcd.io/v2", "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\n"
         "metadata:\n  name: mcr\n  namespace: flux-system\nspec:\n  type: oci\n  interval: 24h\n  url: oci://mcr.microsoft.com/aks/ai-runtime/helm\n"
         "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmChart\nmetadata:\n  name: kueue\n  namespace: flux-system\nspec:\n"
         "  interval: 24h\n  chart: kueue\n  version: 0.18.3\n  sourceRef:\n    kind: HelmRepository\n    name: mcr\n"
         "---\napiVersion: helm.toolkit.fluxcd.io/v2")
    edit(repo_copy, KUEUE, "  chartRef:\n    kind: OCIRepository\n", "  chartRef:\n    kind: HelmChart\n")
    edit(repo_copy, KUEUE, "          effect: NoSchedule\n", "          effect: NoSchedul\n")
    found = validate_repository(repo_copy).findings
    assert sorted((f.rule, f.resource, f.line) for f in found if f.rule == "versions-drift") == \
        [("versions-drift", "HelmChart/flux-system/kueue", 38)], "\n".join(f.text() for f in found)
    assert [f.message.split(" with ")[0] for f in found if f.rule == "helm-values"] == ["the kueue chart 0.18.3"], found


@pytest.mark.parametrize("at,values,unused", [
    ("  values:\n", "    managerConfg:\n      controllerManagerConfigYaml: x\n", ["managerConfg"]),
    ("    controllerManager:\n", "      podAnnotations: {team: ml}\n", ["controllerManager.podAnnotations"]),
    ("    controllerManager:\n", "      nodeSelector: {kubernetes.azure.com/mode: system, team: ml}\n", []),
], ids=["a-key-no-template-reads", "a-key-at-the-wrong-level", "keys-of-a-map-the-chart-leaves-empty"])
def test_values_keys_the_chart_never_reads_are_a_warning_at_them(repo_copy, at, values, unused):
    """A key the chart's values.yaml lacks is unused only when Helm renders the same without it: a typo is dropped without
    a word (managerConfg would drop the repository's FinishOrphanedWorkloads setting; the chart reads podAnnotations
    under controllerManager.manager); keys under a map the chart leaves empty (nodeSelector) are the user's to choose."""
    from harness.gate.validate import validate_repository
    from tests.static.test_gate_corpus import KUEUE, edit

    edit(repo_copy, KUEUE, at, at + values)
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "helm-values-unused"]
    assert [f.message.split(" ")[0].removeprefix("values.") for f in found] == unused, found
    assert all(f.severity == "warning" and f.file == KUEUE for f in found), found


def test_a_value_a_patch_writes_is_reported_at_the_patch(repo_copy):
    """A HelmRelease value set by a kustomize patch of the layer: the finding is where the value is written."""
    from harness.gate.validate import validate_repository
    path = repo_copy / "flux/infrastructure/controllers/kustomization.yaml"
    path.write_text(path.read_text() + "patches:\n  - target: {kind: HelmRelease, name: kueue}\n    patch: |-\n"
                    "      - {op: add, path: /spec/values/controllerManager/replica, value: 2}\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("helm-values-unused", "flux/infrastructure/controllers/kustomization.yaml", 13)], \
        "\n".join(f.text() for f in found)
