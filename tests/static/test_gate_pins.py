"""versions-drift judges a pin as Flux and the container runtime read it (tools/fluxbuild's op pins: Masterminds semver,
distribution/reference), not by comparing strings; and the image a chart installs when the values write no tag."""
from __future__ import annotations

import pytest

from harness.core import memo
from harness.gate import version_rules
from harness.gate.validate import validate_repository
from tests.static.test_gate_corpus import KUBERAY, KUEUE, edit

pytestmark = pytest.mark.static

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize("old,new", [
    ("    tag: 0.17.1\n", '    semver: "0.17.1"\n'),
    ("    tag: 0.17.1\n", '    semver: "=0.17.1"\n'),
    ("    tag: 0.17.1\n", f"    tag: 0.17.1\n    digest: {DIGEST}\n"),
    ("          tag: v0.17.1\n", f"          tag: v0.17.1@{DIGEST}\n"),
], ids=["semver-exact", "semver-equal", "tag-and-digest", "image-tag-with-digest"])
def test_exact_pins_are_clean(repo_copy, old, new):
    """source-controller installs the highest tag a semver constraint admits (0.17.1 admits only 0.17.1), a digest
    beside the pinned tag pins it immutably, and an image `tag@digest` pulls that tag's image by digest."""
    edit(repo_copy, KUEUE, old, new)
    assert [f.text() for f in validate_repository(repo_copy).findings] == []


@pytest.mark.parametrize("old,new,line", [
    ("    tag: 0.17.1\n", '    semver: "~0.17.1"\n', 15),
    ("    tag: 0.17.1\n", '    semver: "<=0.17.1 || >=0.18.0"\n', 15),
    ("    tag: 0.17.1\n", '    semver: "0.17.1 || 0.18.3"\n', 15),
    ("    tag: 0.17.1\n", '    semver: "0.17.1 || 0.18.0-rc.1"\n', 15),
    ("    tag: 0.17.1\n", f"    digest: {DIGEST}\n", 15),
    ("          tag: v0.17.1\n", f"          tag: v0.17.2@{DIGEST}\n", 49),
], ids=["semver-range", "semver-union", "semver-union-of-exact-versions", "semver-union-with-a-pre-release", "digest-alone", "image-other-tag-with-digest"])
def test_pins_that_admit_another_version_are_drift(repo_copy, old, new, line):
    edit(repo_copy, KUEUE, old, new)
    found = [(f.rule, f.file, f.line) for f in validate_repository(repo_copy).findings]
    assert found == [("versions-drift", KUEUE, line)], found


@pytest.mark.parametrize("constraint,pins", [
    ("0.17.1", True), ("=0.17.1", True), ("v0.17.1", True), (">=0.17.1 <0.17.2", True), ("0.17.1 || 0.16.0", True),
    ("<=0.17.1", True), ("0.17.1 || 0.18.3", False), ("0.17.1 || 0.17.3", False), ("0.17.1 || 0.19.2", False),
    (">=0.17.1 <0.20", False), ("0.17.x", False), ("~0.17.1", False), ("^0.17.1", False), ("0.17", False),
    (">=0.17.1 <0.17.2 || >0.17.5 <0.17.7", False), ("0.17.1 || *", False), ("!=0.17.0 >=0.17.1", False),
    ("0.17.0 || 0.16.9", False), ("0.17.1 || 0.18.0-rc.1", False), (">=0.17.1 <0.17.2-rc.1", False),
    ("0.17.1 || >0.18.0-rc.1 <0.18.0-rc.2", False), ("0.17.1 || 0.16.0-rc.1", True), (">=0.17.1 <0.17.2-0", True),
    ("0.17.1 || >=0.18.0-next <0.18.0-rc", False),
])
def test_a_constraint_pins_only_when_it_admits_production_and_nothing_higher(constraint, pins):
    """Flux installs the highest tag a constraint admits: a union or range that admits any higher release is no pin,
    however far from production that release is (the decision uses the constraint's own groups, not a few neighbours);
    a group that names a pre-release admits pre-releases (Masterminds semver), so one above production is no pin either."""
    answer = version_rules.parsed(constraints=[(constraint, "0.17.1")])["constraints"][0]
    assert answer == {"pins": pins}, answer


@pytest.mark.parametrize("version,answer", [
    ("v0.17.1", {"pins": False, "tag": True}), ("0.17.1", {"pins": True, "tag": True}), ("0.17.1 || 0.18.0-rc.1", {"pins": False}),
    ("=0.17.1", {"pins": True}),
])
def test_an_oci_helm_repositorys_version_is_the_tag_written(version, answer):
    """source-controller pulls an OCI HelmRepository's chart version that fluxcd/pkg/version parses as the tag written
    (`v0.17.1` is the tag v0.17.1, not 0.17.1); anything else is a constraint, as from an https repository."""
    assert version_rules.parsed(constraints=[(version, "0.17.1")], oci=True)["constraints"][0] == answer


OCI_HELM_REPOSITORY = ("kind: OCIRepository\nmetadata:\n  name: kueue\n  namespace: flux-system\nspec:\n  interval: 24h\n"
                       "  url: oci://mcr.microsoft.com/aks/ai-runtime/helm/kueue\n  ref:\n    tag: 0.17.1\n  layerSelector:\n"
                       "    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n",
                       "kind: HelmRepository\nmetadata:\n  name: aks-ai-runtime\n  namespace: flux-system\nspec:\n  type: oci\n"
                       "  interval: 24h\n  url: oci://mcr.microsoft.com/aks/ai-runtime/helm\n")


@pytest.mark.parametrize("version,said", [
    ("v0.17.1", "'v0.17.1' is the tag the OCI HelmRepository pulls, as written"),
    ("0.17.1 || 0.18.0-rc.1", "'0.17.1 || 0.18.0-rc.1', but"),
    ("0.17.1", None),
])
def test_a_chart_version_from_an_oci_helm_repository(repo_copy, version, said):
    edit(repo_copy, KUEUE, *OCI_HELM_REPOSITORY)
    edit(repo_copy, KUEUE, "  chartRef:\n    kind: OCIRepository\n    name: kueue\n",
         f'  chart:\n    spec:\n      chart: kueue\n      version: "{version}"\n      sourceRef:\n        kind: HelmRepository\n'
         "        name: aks-ai-runtime\n")
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == ([("versions-drift", KUEUE, 32)] if said else []), [f.text() for f in found]
    assert not said or said in found[0].message and found[0].hint.startswith("set spec.chart.spec.version: 0.17.1 ")


@pytest.mark.parametrize("old,new,line,said", [
    ("      tag: v1.6.1\n", "      tag: null\n", 47, "values.image.tag is null, which removes the chart's default"),
    ("    image:\n      repository: mcr.microsoft.com/oss/v2/kuberay/operator\n      tag: v1.6.1\n", "    image: null\n", 45,
     "values.image is null, which removes the chart's default (Helm's coalesce drops a null value), so Helm fails to render"),
    ("      tag: v1.6.1\n", '      tag: ""\n', 47, "values.image.tag '', but"),
], ids=["tag-null", "image-null", "tag-empty"])
def test_a_null_kuberay_image_tag_removes_the_charts_default(repo_copy, old, new, line, said):
    """KubeRay's chart writes `{{ .Values.image.repository }}:{{ .Values.image.tag }}` with no default, and Helm's
    coalesce deletes a key whose value is null: `tag: null` renders the image without a tag, as `tag: ""` does."""
    edit(repo_copy, KUBERAY, old, new)
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("versions-drift", KUBERAY, line)], [f.text() for f in found]
    assert said in found[0].message and found[0].hint.startswith("set values.image.tag: v1.6.1"), found[0].text()


def test_values_without_an_image_tag_install_the_charts_default_tag(repo_copy):
    """The Kueue chart's values.yaml tag is release-0.17 (a moving tag): without a tag in the values that is installed."""
    edit(repo_copy, KUEUE, "          tag: v0.17.1\n", "")
    found = [f for f in validate_repository(repo_copy).findings]
    assert [(f.rule, f.file, f.line) for f in found] == [("versions-drift", KUEUE, 47)], [f.text() for f in found]
    assert ":release-0.17, not v0.17.1" in found[0].message and found[0].hint == "set values.controllerManager.manager.image.tag: v0.17.1"


def test_an_empty_image_tag_installs_the_charts_app_version(repo_copy):
    """`tag: ""`: the Kueue chart renders `image.tag | default .Chart.AppVersion`, v0.17.1: the pinned image, no drift."""
    edit(repo_copy, KUEUE, "          tag: v0.17.1\n", '          tag: ""\n')
    assert [f.text() for f in validate_repository(repo_copy).findings] == []


# Items appended to the Kueue HelmRelease's postRenderers (the file ends with them: its CRDs' resource-policy patch).
POST_RENDER_IMAGES = "    - kustomize:\n        images:\n          - name: mcr.microsoft.com/oss/v2/kueue/kueue\n"
POST_RENDER_PATCH = ("    - kustomize:\n        patches:\n          - target: {kind: Deployment}\n            patch: |\n"
                     "              - {op: replace, path: /spec/template/spec/containers/0/image, value: %s}\n")


@pytest.mark.parametrize("renderers,image", [
    (POST_RENDER_IMAGES + "            newTag: v0.18.3\n", "mcr.microsoft.com/oss/v2/kueue/kueue:v0.18.3"),
    (POST_RENDER_IMAGES + "            newName: registry.example.com/kueue\n            newTag: v0.18.3\n", "registry.example.com/kueue:v0.18.3"),
    (POST_RENDER_PATCH % "registry.example.com/kueue:v0.18.3", "registry.example.com/kueue:v0.18.3"),
], ids=["images-new-tag", "images-new-name-and-tag", "json6902-image"])
def test_an_image_the_post_renderers_change_is_drift_at_the_post_renderers(repo_copy, renderers, image):
    """helm-controller applies spec.postRenderers' images and patches to what the chart renders: the Deployment runs
    that image, judged after them and reported where the post-renderers are written."""
    (repo_copy / KUEUE).write_text((repo_copy / KUEUE).read_text() + renderers)
    found = [f for f in validate_repository(repo_copy).findings]
    line = (repo_copy / KUEUE).read_text().splitlines().index("  postRenderers:") + 1
    assert [(f.rule, f.file, f.line) for f in found] == [("versions-drift", KUEUE, line)], [f.text() for f in found]
    assert image in found[0].message and "spec.postRenderers" in found[0].hint, found[0].text()


def test_post_renderers_that_keep_the_pinned_image_are_clean(repo_copy):
    (repo_copy / KUEUE).write_text((repo_copy / KUEUE).read_text() + POST_RENDER_IMAGES + "            newTag: v0.17.1\n")
    assert [f.text() for f in validate_repository(repo_copy).findings] == []


def test_a_production_pin_the_gate_has_as_candidate_names_the_option_that_checks_it(repo_copy):
    """versions-pins' fix names `--kueue <candidate>` when this gate builds that version as a candidate."""
    edit(repo_copy, "versions.yaml", "  production: 0.17.1\n", "  production: 0.18.3\n")
    edit(repo_copy, "versions.yaml", "  version: v0.17.1 ", "  version: v0.18.3 ")
    edit(repo_copy, KUEUE, "    tag: 0.17.1\n", "    tag: 0.18.3\n")
    edit(repo_copy, KUEUE, "          tag: v0.17.1\n", "          tag: v0.18.3\n")
    found = [f for f in validate_repository(repo_copy).findings if f.rule == "versions-pins"]
    assert len(found) == 1 and "`scripts/validate --kueue v0.18.3`" in found[0].hint, [f.text() for f in found]


def test_the_versions_schema_verdict_is_the_same_from_the_cache(repo_copy, tmp_path, monkeypatch):
    """versions.yaml's pins are judged by jsonschema once per content; a later run reads the kept verdict and reports
    the same finding (and a run with the cache dropped computes it again)."""
    monkeypatch.setattr(memo, "cache_root", lambda: tmp_path / "cache")  # the tools stay where they are built
    edit(repo_copy, "versions.yaml", "  production: 0.17.1", "  production: v0.17.1")

    def drift():
        return [(f.file, f.line, f.message, f.hint) for f in validate_repository(repo_copy).findings
                if f.rule == "versions-drift" and f.file == "versions.yaml"]

    first = drift()
    assert len(first) == 1 and "v0.17.1" in first[0][2], first
    assert [p for p in (tmp_path / "cache" / "memo").glob("versions-file-*/*/*") if p.is_file()]
    assert drift() == first
