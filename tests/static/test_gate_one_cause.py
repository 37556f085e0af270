"""One cause, one finding, at the line where it is written (review J #4-#7, #10, #12a-b): a file of workloads/ that no
sample renders past, a versions.yaml pin the schema refuses, a document after the first of a kustomization file, an
inline patch that is not YAML, an absurd `skus:` value, a number kustomize's JSON round trip rounds, and a ConfigMap
over the apiserver's data limit."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static

COMPONENT = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    text = (root / rel).read_text()
    assert old in text, f"stale case: {old!r} not in {rel}"
    (root / rel).write_text(text.replace(old, new, 1))


def _found(root: Path) -> list[tuple[str, str, int | None, str]]:
    return sorted((f.rule, f.file, f.line, f.severity) for f in validate_repository(root).findings)


def _text(root: Path) -> str:
    return "\n".join(f.text() for f in validate_repository(root).findings)


@pytest.mark.parametrize("content", ["- a\n", "hello\n"], ids=["list", "scalar"])
def test_defaults_that_are_not_a_mapping_are_one_finding_at_the_file(repo_copy, content):
    (repo_copy / "workloads/defaults.yaml").write_text(content)
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("sample-render", "workloads/defaults.yaml", 1)], \
        "\n".join(f.text() for f in report.findings)
    assert "workloads/defaults.yaml" in report.findings[0].hint and "samples.yaml" not in report.findings[0].hint


def test_defaults_that_do_not_parse_are_only_the_yaml_finding(repo_copy):
    (repo_copy / "workloads/defaults.yaml").write_text((repo_copy / "workloads/defaults.yaml").read_text() + "X: [\n")
    found = _found(repo_copy)
    assert [(rule, file) for rule, file, _, _ in found] == [("yaml-syntax", "workloads/defaults.yaml")], found


def test_a_sample_file_that_is_a_list_is_one_finding_at_the_file(repo_copy):
    (repo_copy / "workloads/batch-inference.yaml").write_text("- a\n")
    assert _found(repo_copy) == [("sample-render", "workloads/batch-inference.yaml", 1, "error")], _text(repo_copy)


def test_a_sample_file_that_does_not_parse_is_only_the_yaml_finding(repo_copy):
    (repo_copy / "workloads/batch-inference.yaml").write_text((repo_copy / "workloads/batch-inference.yaml").read_text() + "X: [\n")
    found = _found(repo_copy)
    assert [(rule, file) for rule, file, _, _ in found] == [("yaml-syntax", "workloads/batch-inference.yaml")], found


def test_a_float_production_pin_is_only_the_schema_finding(repo_copy):
    _edit(repo_copy, "versions.yaml", "  production: 0.17.1\n", "  production: 0.17\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("versions-drift", "versions.yaml", 35)], \
        "\n".join(f.text() for f in report.findings)
    assert "quoted" in report.findings[0].hint, report.findings[0].hint


def test_a_second_document_in_a_kustomization_is_one_warning_there(repo_copy):
    """kustomize reads the first document only: what it lists is applied (no kustomize-unlisted for those files), and the
    pasted ConfigMap after it is never applied (one warning at its line)."""
    kust = repo_copy / "base/kustomization.yaml"
    before = kust.read_text()
    kust.write_text(before + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad\n  namespace: ray\n")
    line = before.count("\n") + 2
    assert _found(repo_copy) == [("kustomize-unlisted", "base/kustomization.yaml", line, "warning")], _text(repo_copy)


def test_an_inline_patch_that_is_not_yaml_is_one_finding_at_its_line(repo_copy):
    _edit(repo_copy, COMPONENT, 'nominalQuota, value: "47"}', 'nominalQuota, value: "47"')
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("kustomize-build", COMPONENT, 20)], \
        "\n".join(f.text() for f in report.findings)
    assert "JSON patch path" not in report.findings[0].hint and "syntax" in report.findings[0].hint


def test_an_absurd_sku_is_a_gate_config_finding(repo_copy):
    (repo_copy / ".ray-kueue-gate.yaml").write_text("skus: {Standard_NX96: {vcpu: 99999999999999999999999, memory_gib: 1900, gpus: 8}}\n")
    _edit(repo_copy, "terraform/clusters/prod-eastus2.tfvars", '"Standard_ND96amsr_A100_v4"', '"Standard_NX96"')
    assert _found(repo_copy) == [("gate-config", ".ray-kueue-gate.yaml", 1, "error")], _text(repo_copy)


def test_a_patch_number_kustomize_rounds_is_one_finding_per_object_at_the_patch(repo_copy):
    _edit(repo_copy, COMPONENT, 'nominalQuota, value: "47"}', "nominalQuota, value: 9007199254740993}")
    found = [f for f in validate_repository(repo_copy).findings]
    assert sorted((f.rule, f.file, f.line, f.resource) for f in found) == [
        ("api-validation", COMPONENT, 20, "ClusterQueue/team-a-cq"), ("api-validation", COMPONENT, 20, "ClusterQueue/team-b-cq")], \
        "\n".join(f.text() for f in found)


def test_a_configmap_over_the_data_limit_is_one_data_size_finding(repo_copy):
    (repo_copy / "base/big.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: ray\ndata:\n"
                                             f"  blob: {'x' * 1_600_000}\n")
    _edit(repo_copy, "base/kustomization.yaml", "resources:\n", "resources:\n  - big.yaml\n")
    assert _found(repo_copy) == [("data-size", "base/big.yaml", 6, "error")], _text(repo_copy)
