"""The gate never crashes (issue 15, item 1): every input problem is a finding with its file and
rule, or exit 2 with one line; a report file that cannot be written is exit 2.

One regression test per crash the issue lists (the CLI, as CI runs it), then a property-based
test that mutates the repository at byte and YAML level (tests/static/gate_mutations.py).
"""
from __future__ import annotations

import json
import subprocess

import pytest

from harness.core.versions import REPO_ROOT
from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static
VALIDATE = REPO_ROOT / "scripts" / "validate"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(VALIDATE), *map(str, args)], capture_output=True, text=True, timeout=300)


def assert_finding(proc, report, rule: str, file: str, line: int | None = None):
    """Exit 1, no traceback, `rule` at `file` (and `line`) in the text and in the JSON report."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out
    where = f"{file}:{line}:" if line else f"{file}:"
    assert any(ln.startswith(where) and f" {rule}: " in ln for ln in proc.stdout.splitlines()), out
    found = json.loads(report.read_text())["findings"]
    assert any(f["rule"] == rule and f["file"] == file and (line is None or f["line"] == line) for f in found), found


def test_unclosed_quote_in_cluster_kustomization(repo_copy, tmp_path):
    # Findings without a line (cluster-overlay) sorted against ones with a line.
    k = repo_copy / "clusters/dev-westus3/kustomization.yaml"
    k.write_text(k.read_text().replace("  - queues.yaml", '  - "queues.yaml'))
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "yaml-syntax", "clusters/dev-westus3/kustomization.yaml", 11)


def test_yaml_error_in_samples(repo_copy, tmp_path):
    samples = repo_copy / "clusters/dev-westus3/samples.yaml"
    samples.write_text(samples.read_text() + "- sample: [oops\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    lines = len(samples.read_text().splitlines())
    assert_finding(proc, tmp_path / "f.json", "yaml-syntax", "clusters/dev-westus3/samples.yaml", lines + 1)


@pytest.mark.parametrize("content, rule", [("sample: aurora-finetune\n", "sample-render"),
                                           ("- aurora-finetune\n- {sample: 3, queue: default}\n", "sample-render"),
                                           ("- {sample: aurora-finetune, queue: default, vars: [1]}\n", "sample-render")])
def test_samples_of_the_wrong_shape(repo_copy, tmp_path, content, rule):
    (repo_copy / "clusters/dev-westus3/samples.yaml").write_text(content)
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", rule, "clusters/dev-westus3/samples.yaml")


def test_yaml_error_in_cluster_vars_example(repo_copy, tmp_path):
    example = repo_copy / "clusters/dev-westus3/cluster-vars.example.yaml"
    example.write_text(example.read_text() + "data: [\n")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "yaml-syntax", "clusters/dev-westus3/cluster-vars.example.yaml")


def test_file_that_is_not_utf8(repo_copy, tmp_path):
    (repo_copy / "base/cafe.yaml").write_bytes(
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cafe\n  namespace: ray\ndata:\n  menu: caf\xe9\n")
    k = repo_copy / "base/kustomization.yaml"
    k.write_text(k.read_text().replace("resources:\n", "resources:\n  - cafe.yaml\n"))
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "yaml-syntax", "base/cafe.yaml", 7)
    assert "not UTF-8" in proc.stdout


def test_terraform_file_that_is_not_utf8(repo_copy, tmp_path):
    with (repo_copy / "terraform/variables.tf").open("ab") as f:
        f.write(b'\n# caf\xe9\n')
    line = (repo_copy / "terraform/variables.tf").read_bytes().count(b"\n")  # the comment's line
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "capacity-terraform", "terraform/variables.tf", line)
    assert "Invalid character encoding: byte 0xe9 is not UTF-8" in proc.stdout


def test_dangling_symlink(repo_copy, tmp_path):
    (repo_copy / "base/dangling.yaml").symlink_to("nowhere.yaml")
    proc = run(repo_copy, "--json", tmp_path / "f.json")
    assert_finding(proc, tmp_path / "f.json", "file-read", "base/dangling.yaml")


def test_a_link_to_a_broken_file_is_reported_once_at_the_file(repo_copy):
    """The harness's repo-snapshot links versions.yaml; a YAML error in it is one finding, at versions.yaml."""
    (repo_copy / "base/linked.yaml").symlink_to("resource-flavors.yaml")
    with (repo_copy / "base/resource-flavors.yaml").open("a") as f:
        f.write("broken: [\n")
    report = validate_repository(repo_copy)
    syntax = [(f.rule, f.file) for f in report.findings if f.rule == "yaml-syntax"]
    assert syntax == [("yaml-syntax", "base/resource-flavors.yaml")], "\n".join(f.text() for f in report.findings)


@pytest.mark.parametrize("where", ["directory", "uncreatable", "junit-directory"])
def test_report_that_cannot_be_written_exits_two(tmp_path, where):
    blocker = tmp_path / "file"
    blocker.write_text("")
    option, path = {"directory": ("--json", tmp_path), "uncreatable": ("--json", blocker / "sub" / "f.json"),
                    "junit-directory": ("--junit", tmp_path)}[where]
    proc = run(REPO_ROOT, "--quiet", option, path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("validate: cannot write "), proc.stderr


def test_an_internal_error_is_exit_2_in_one_line(tmp_path, monkeypatch, capsys):
    """A bug of the gate (here: a rule that raises) is exit 2, "could not run", never 1 ("findings")."""
    from harness.gate import validate

    def broken(_root, _ahead=None, _base=None):
        raise KeyError("spec")

    monkeypatch.setattr(validate, "validate_repository", broken)
    monkeypatch.delenv("RAY_KUEUE_TRACEBACK", raising=False)
    assert validate.main([str(REPO_ROOT), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "internal error" in err and "KeyError" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# -- One cause, one finding ---------------------------------------------------------------------
# A broken input breaks every build that reads it; the finding is where it is written, and the
# builds, layers and samples it takes down are not reported again.
ND96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
ONE_CAUSE = [
    ("duplicate key in an overlay", "overlays/team-queues/team-a.yaml", "  queueingStrategy: BestEffortFIFO\n",
     "  queueingStrategy: BestEffortFIFO\n  queueingStrategy: StrictFIFO\n", "yaml-syntax", 12),
    ("duplicate key in a sample", "workloads/aurora-finetune.yaml", "    enableInTreeAutoscaling: false\n",
     "    enableInTreeAutoscaling: false\n    enableInTreeAutoscaling: true\n", "yaml-syntax", 39),
    ("missing resource file", "overlays/team-queues/kustomization.yaml", "  - team-a.yaml", "  - team-z.yaml", "kustomize-build", 7),
    ("missing component", "overlays/single-queue/kustomization.yaml", "components/gpu-sku/", "components/gpu-skus/", "kustomize-build", None),
    # The webhook rejects both team queues at the patch line; the samples measured against them are not reported.
    ("negative quota in the component", ND96, 'resources/0/nominalQuota, value: "4"', 'resources/0/nominalQuota, value: "-4"', "kueue-webhook", 24),
    ("quota above the nodes in the component", ND96, 'resources/0/nominalQuota, value: "4"', 'resources/0/nominalQuota, value: "6"',
     "capacity-quota", 24),
]


@pytest.mark.parametrize("case,rel,old,new,rule,line", ONE_CAUSE, ids=[c[0] for c in ONE_CAUSE])
def test_one_cause_is_one_finding_at_its_line(repo_copy, case, rel, old, new, rule, line):
    path = repo_copy / rel
    assert old in path.read_text(), f"stale case: {old!r} not in {rel}"
    path.write_text(path.read_text().replace(old, new, 1))
    errors = [f for f in validate_repository(repo_copy).findings if f.is_error]
    assert {(f.rule, f.file) for f in errors} == {(rule, rel)}, "\n".join(f.text() for f in errors)
    assert line is None or {f.line for f in errors} == {line}, "\n".join(f.text() for f in errors)
    assert "fluxbuild-" not in errors[0].message and str(repo_copy) not in errors[0].message, errors[0].message


def test_sample_fit_survives_a_queue_the_schema_refuses(repo_copy):
    """A ClusterQueue resource without its name, or with a borrowingLimit that is no quantity: the
    schema check reports it, and the samples' fit is computed without it, never ending in a KeyError
    or TypeError (hypothesis found both)."""
    team_a = repo_copy / "overlays/team-queues/team-a.yaml"
    text = team_a.read_text()
    assert '            - name: memory\n' in text and 'borrowingLimit: "0"\n' in text
    team_a.write_text(text.replace('            - name: memory\n', '            - nameless: memory\n', 1)
                      .replace('borrowingLimit: "0"\n', 'borrowingLimit: "lots"\n', 1))
    report = validate_repository(repo_copy)
    assert "schema" in {f.rule for f in report.findings}, "\n".join(f.text() for f in report.findings)


@pytest.mark.parametrize("namespace", ["{}", "-1"])
def test_a_flux_kustomization_namespace_of_another_type_is_a_finding(repo_copy, namespace):
    """Found by the end-to-end mutation property run unseeded: `namespace: {}` on a cluster's Flux Kustomization
    raised TypeError (unhashable) in the dependsOn graph, `namespace: -1` where findings name the resource; the
    schema check names it."""
    infra = repo_copy / "clusters/prod-eastus2/infrastructure.yaml"
    text = infra.read_text()
    assert "  name: infra-controllers\n  namespace: flux-system\n" in text
    infra.write_text(text.replace("  name: infra-controllers\n  namespace: flux-system\n", f"  name: infra-controllers\n  namespace: {namespace}\n", 1))
    report = validate_repository(repo_copy)
    assert {f.rule for f in report.findings} & {"schema", "api-validation"}, "\n".join(f.text() for f in report.findings)


def test_a_local_queue_name_that_is_a_number_is_a_finding(repo_copy):
    """Found by the end-to-end mutation property run unseeded: a LocalQueue named 1.5 made the sample rules
    sort a float among the names (TypeError); the schema check names it and the sample's queue is missing."""
    team_a = repo_copy / "overlays/team-queues/team-a.yaml"
    text = team_a.read_text()
    assert "kind: LocalQueue\nmetadata:\n  name: team-a\n" in text
    team_a.write_text(text.replace("kind: LocalQueue\nmetadata:\n  name: team-a\n", "kind: LocalQueue\nmetadata:\n  name: 1.5\n", 1))
    rules = {f.rule for f in validate_repository(repo_copy).findings}
    assert {"schema", "sample-queue"} <= rules or {"api-validation", "sample-queue"} <= rules, rules


def test_yaml_nothing_reads_is_none_of_the_gates(repo_copy):
    """A fork's Helm chart templates (text Helm renders) and docs YAML with Python tags (mkdocs) are not Kubernetes
    configuration, and nothing the gate checks reads them; a YAML error in an overlay, a workload or versions.yaml is."""
    (repo_copy / "charts/x/templates").mkdir(parents=True)
    (repo_copy / "charts/x/Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.1.0\n")
    (repo_copy / "charts/x/templates/deployment.yaml").write_text('metadata:\n  labels:\n    {{- include "x.labels" . | nindent 4 }}\n')
    (repo_copy / "docs/site").mkdir(parents=True)
    (repo_copy / "docs/site/mkdocs.yml").write_text("markdown_extensions:\n  - pymdownx.superfences:\n"
                                                   "      format: !!python/name:pymdownx.superfences.fence_code_format\n")
    assert not validate_repository(repo_copy).findings
    for rel in ("overlays/team-queues/notes.yaml", "workloads/extra.yaml", "components/gpu-sku/standard-nc24ads-a100-v4/notes.yaml"):
        (repo_copy / rel).write_text("a: [\n")
    found = validate_repository(repo_copy).findings
    assert sorted(f.file for f in found if f.rule == "yaml-syntax") == ["components/gpu-sku/standard-nc24ads-a100-v4/notes.yaml", "overlays/team-queues/notes.yaml",
                                                                        "workloads/extra.yaml"], "\n".join(f.text() for f in found)


def test_yaml_a_flux_path_without_kustomization_file_or_a_crd_entry_holds_is_read(repo_copy):
    """Flux's generator decodes every YAML file of a spec.path without a kustomization file (it fails the Kustomization on
    one it cannot); a file under the gate configuration's `crds:` is loaded as a CRD."""
    (repo_copy / "apps/notebooks").mkdir(parents=True)
    (repo_copy / "apps/notebooks/queue.yaml").write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n"
                                                         "  name: notebooks\n  namespace: ray\nspec:\n  clusterQueue: team-a-cq\n  stopPolicy: [Hold\n")
    (repo_copy / "clusters/prod-eastus2/apps.yaml").write_text(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n"
        "  dependsOn:\n    - name: queues\n  interval: 10m\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        "  path: ./apps/notebooks\n")
    kustomization = repo_copy / "clusters/prod-eastus2/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - queues.yaml\n", "  - queues.yaml\n  - apps.yaml\n"))
    (repo_copy / ".sourceignore").write_text((repo_copy / ".sourceignore").read_text() + "!/apps/\n")
    (repo_copy / "crds").mkdir()
    (repo_copy / "crds/x.yaml").write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x\n")
    (repo_copy / ".ray-kueue-gate.yaml").write_text("crds:\n  - crds\n")
    found = validate_repository(repo_copy).findings
    assert sorted((f.file, f.line) for f in found if f.rule == "yaml-syntax") == [("apps/notebooks/queue.yaml", 9), ("crds/x.yaml", 4)], \
        "\n".join(f.text() for f in found)
