"""The cluster-level reference, size and admittability rules beyond their corpus cases: label
selector semantics, sample lines, size arithmetic, what exists without the repository, and
inputs that must stay clean."""
from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness.gate.cluster_index import ClusterIndex
from harness.gate.cluster_refs import MAX_DATA_BYTES, size_problems
from harness.gate.render import Build, ClusterRender, substitution_sources
from harness.gate import config, rules, sample_rules
from harness.gate.sample_admission import selector_verdict
from harness.gate.sources import Sources
from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static

NS = {"kubernetes.io/metadata.name": "ray", "team": "a"}


@pytest.mark.parametrize("selector,selects", [
    ({}, True),
    ({"matchLabels": {"team": "a"}}, True),
    ({"matchLabels": {"team": "b"}}, False),
    ({"matchLabels": {"team": "a", "tier": "gpu"}}, False),
    ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu"]}]}, False),
    ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}, True),  # absent key: NotIn holds
    ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, True),
    ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, False),
    ({"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["x"]}]}, False),
])
def test_selector_semantics_are_apimachinerys(selector, selects):
    assert selector_verdict(selector, NS)[0] is selects


@pytest.mark.parametrize("expr", [
    {"key": "team", "operator": "In", "values": []},
    {"key": "team", "operator": "NotIn"},
    {"key": "team", "operator": "Exists", "values": ["a"]},
    {"key": "team", "operator": "Gt", "values": ["1"]},
])
def test_selectors_kueue_refuses_are_invalid(expr):
    with pytest.raises(ValueError):
        selector_verdict({"matchExpressions": [expr]}, NS)


def test_rendered_samples_carry_the_line_of_their_entry(tmp_path):
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "job.yaml").write_text("apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: ${JOB_NAME}\n"
                                                    "  labels:\n    kueue.x-k8s.io/queue-name: ${QUEUE_NAME}\n")
    (tmp_path / "clusters" / "c").mkdir(parents=True)
    (tmp_path / "clusters" / "c" / "samples.yaml").write_text("# samples\n- sample: job\n  queue: q\n- sample: job\n  vars: oops\n  queue: q\n"
                                           "- sample: job\n  queue: q\n  vars: {JOB_NAME: job-b}\n- {sample: nope, queue: q}\n"
                                           "- {sample: job, queue: r, vars: {JOB_NAME: job-c}}\n- {sample: job, queue: r}\n")
    ctx = rules.Context(Sources.load(tmp_path), config.DEFAULTS)
    cluster = ClusterRender("c", Build("clusters/c", "clusters/c"))
    found, rendered, _ = sample_rules.sample_rules(ctx, tmp_path, cluster)
    # the second and fourth entries do not render (vars not a mapping, no such sample): reported at their lines;
    # the last renders RayJob job as the first does: the apiserver would refuse it
    assert [(sample, line) for sample, _, line in rendered] == [("job", 2), ("job", 7), ("job", 11)]
    assert sorted((f.rule, f.file, f.line) for f in found if f.rule in ("sample-render", "sample-duplicate")) == [
        ("sample-duplicate", "clusters/c/samples.yaml", 12),
        ("sample-render", "clusters/c/samples.yaml", 4), ("sample-render", "clusters/c/samples.yaml", 10)]


def _rules(obj: dict) -> list[str]:
    return [rule for rule, *_ in size_problems(obj)]


def test_secret_data_is_counted_decoded_and_stringdata_wins():
    raw = b"x" * (MAX_DATA_BYTES - 10)
    secret = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"k": base64.b64encode(raw).decode()}}
    assert _rules(secret) == []  # 1.33 MiB of base64 is under 1 MiB of data
    assert _rules({**secret, "stringData": {"k": "y"}}) == []  # stringData replaces data's k
    assert _rules({**secret, "stringData": {"other": "y" * 11}}) == ["data-size"]
    assert _rules({**secret, "data": {}, "stringData": {"k": "y" * (MAX_DATA_BYTES + 1)}}) == ["data-size"]


def test_configmap_at_the_limit_is_accepted():
    cm = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "x" * MAX_DATA_BYTES}}
    assert _rules(cm) == []
    assert _rules({**cm, "binaryData": {"b": base64.b64encode(b"1").decode()}}) == ["data-size"]


def test_names_labels_and_annotations_are_the_apiservers_own_checks():
    """Metadata of built-in kinds: apimachinery's ValidateObjectMeta and IsConfigMapKey in
    tools/fluxbuild (the name check per kind the apiserver uses), never a size rule of the gate's own."""
    from harness.gate import schema_check

    def refused(obj):
        problem = schema_check.validate([{"apiVersion": "v1", **obj}])[0]  # obj may name another apiVersion
        return [(problem.rule, e["field"]) for e in problem.errors] if problem else []

    ok = {"kind": "ConfigMap", "metadata": {"name": "n" * 253, "labels": {"example.com/" + "k" * 63: "v" * 63}}}
    assert _rules(ok) == [] and refused(ok) == []
    assert refused({"kind": "Namespace", "metadata": {"name": "n" * 64}}) == [("api-validation", "metadata.name")]
    assert refused({"kind": "Namespace", "metadata": {"name": "Ray"}}) == [("api-validation", "metadata.name")]
    assert refused({"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"k" * 64: "v"}}}) == [("api-validation", f"metadata.labels[{'k' * 64}]")]
    assert refused({"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"team": "ML Platform"}}}) == [("api-validation", "metadata.labels[team]")]
    assert refused({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a key": "v"}}) == [("api-validation", "data[a key]")]
    assert refused({"kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"a": "x" * 300_000}}}) == [("api-validation", "metadata.annotations")]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "system:a", "namespace": "ray"}, "rules": []}
    assert refused(role) == []  # a path segment, as rbac's ValidateRBACName checks, not a DNS name


def test_what_exists_without_the_repository(tmp_path):
    (tmp_path / "clusters" / "c1").mkdir(parents=True)
    (tmp_path / "clusters" / "c1" / "cluster-vars.example.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata: {A: b}\n")
    objects = [
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "x", "namespace": "flux-system"},
         "spec": {"targetNamespace": "x-system", "install": {"createNamespace": True}}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.example.com"},
         "spec": {"scope": "Cluster", "names": {"kind": "Thing"}}},
    ]
    variables = substitution_sources(tmp_path / "clusters" / "c1")  # what render_repository gives each cluster
    index = ClusterIndex.build(tmp_path, ClusterRender("c1", Build("clusters/c1", "clusters/c1", objects=objects), variables=variables))
    assert {"default", "kube-system", "flux-system", "x-system"} <= set(index.namespaces)
    assert index.namespaces["x-system"] == {"kubernetes.io/metadata.name": "x-system"}
    assert "Thing" in index.cluster_scoped
    assert index.has("ConfigMap", "flux-system", "cluster-vars")
    assert index.has("ServiceAccount", "x-system", "default") and not index.has("ServiceAccount", "nowhere", "default")
    assert index.has("PriorityClass", None, "system-node-critical") and not index.has("PriorityClass", None, "batch-high")


def test_kueue_chart_default_configuration_enables_rayjob(repo_copy):
    kueue = repo_copy / "flux/infrastructure/controllers/kueue.yaml"
    text = kueue.read_text()
    kueue.write_text(text[:text.index("    managerConfig:\n")])  # the chart's own manager configuration
    report = validate_repository(repo_copy)
    assert not [f for f in report.findings if f.rule == "kueue-rayjob-integration"], "\n".join(f.text() for f in report.findings)


def test_a_patch_of_a_failing_build_is_not_judged(repo_copy):
    """The team patch of the ND96 component matches only in team-queues; when that build fails,
    the single-queue builds alone must not make it `patch-unmatched`."""
    kust = repo_copy / "overlays/team-queues/kustomization.yaml"
    kust.write_text(kust.read_text() + "patches:\n  - path: hold.yaml\n")
    (repo_copy / "overlays/team-queues/hold.yaml").write_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: team-c-cq\nspec:\n  stopPolicy: Hold\n")
    report = validate_repository(repo_copy)
    assert any(f.rule == "kustomize-build" for f in report.findings)
    assert not [f for f in report.findings if f.rule == "patch-unmatched"], "\n".join(f.text() for f in report.findings)


def test_a_dangling_localqueue_is_reported_once(repo_copy):
    team_b = repo_copy / "overlays/team-queues/team-b.yaml"
    team_b.write_text(team_b.read_text().replace("clusterQueue: team-b-cq", "clusterQueue: nope"))
    rules = {f.rule for f in validate_repository(repo_copy).findings}
    assert "localqueue-clusterqueue" in rules and "clusterqueue-unreachable" not in rules


def test_kueue_chart_with_crds_skip_still_serves_its_api(repo_copy):
    """The Kueue chart renders its CRDs as templates (charts/kueue/templates/crd), so
    install.crds: Skip does not leave them out, unlike KubeRay's crds/ directory (corpus case
    kuberay-crds-skipped)."""
    kueue = repo_copy / "flux/infrastructure/controllers/kueue.yaml"
    kueue.write_text(kueue.read_text().replace("crds: CreateReplace", "crds: Skip"))
    report = validate_repository(repo_copy)
    assert not [f for f in report.findings if f.rule == "api-not-served"], [f.text() for f in report.findings]


def test_health_check_on_a_chart_object_is_not_judged(repo_copy):
    """A health check on a Deployment the Kueue chart creates: the repository renders no Deployments, so
    the gate cannot know it and says nothing; one on the HelmRelease itself resolves."""
    infra = "clusters/prod-eastus2/infrastructure.yaml"
    text = (repo_copy / infra).read_text()
    assert "  wait: true\n" in text
    (repo_copy / infra).write_text(text.replace("  wait: true\n", "  healthChecks:\n"
        "    - {apiVersion: apps/v1, kind: Deployment, name: kueue-controller-manager, namespace: kueue-system}\n"
        "    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: kueue, namespace: flux-system}\n"))
    report = validate_repository(repo_copy)
    assert report.findings == [], "\n".join(f.text() for f in report.findings)


def test_a_renamed_namespace_is_one_finding_naming_the_rename(repo_copy):
    """base/namespace.yaml renamed ray -> ml: every object of the queue layer is in a namespace no layer creates. One
    finding for both clusters (F.md #11), at the first of them, naming the others per cluster, and the empty Namespace
    as the likely rename."""
    from tests.static.test_gate_corpus import edit
    edit(repo_copy, "base/namespace.yaml", "  name: ray\n", "  name: ml\n")
    found = validate_repository(repo_copy).findings
    assert [f.rule for f in found] == ["namespace-missing"], [f.text() for f in found]
    assert all("more object(s) are in it" in f.message and "also in it: " in f.context
               and "Namespace ml is created but nothing is in it" in f.hint for f in found), found


def test_kueue_crds_are_kept_when_its_release_is_uninstalled():
    """The pinned Kueue chart renders its CRDs from templates/crd (no crds/ directory), so they are release objects Helm
    deletes on uninstall, and every queue and Workload with them. The shipped HelmRelease's post-renderer marks every
    CustomResourceDefinition helm.sh/resource-policy: keep. Should a chart move its CRDs into crds/ (which Helm never
    deletes), this fails and the post-renderer can go."""
    import yaml
    from harness.toolchain.builds import module_dir
    chart = module_dir("kueue") / "charts/kueue"
    assert sorted(p.name for p in (chart / "templates/crd").glob("*.yaml")) and not (chart / "crds").exists()
    docs = list(yaml.safe_load_all((Path(__file__).parents[2] / "flux/infrastructure/controllers/kueue.yaml").read_text()))
    hr = next(d for d in docs if d and d.get("kind") == "HelmRelease")
    patches = [p for r in hr["spec"].get("postRenderers", []) for p in r.get("kustomize", {}).get("patches", [])
               if p.get("target", {}).get("kind") == "CustomResourceDefinition" and set(p["target"]) == {"kind"}]
    ops = [op for p in patches for op in yaml.safe_load(p["patch"])]
    assert {"op": "add", "path": "/metadata/annotations/helm.sh~1resource-policy", "value": "keep"} in ops, hr["spec"]
