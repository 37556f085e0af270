"""The gate on a repository that is not this one (issue 18, item 4): a fleet laid out the way
Flux's examples lay it out, built in a temporary directory. fleet/apps/queues/<name> are its queue
overlays, fleet/infrastructure its monitoring, fleet/clusters/staging/ is what `flux bootstrap`
writes (flux-system/, no kustomization.yaml), fleet/clusters/lab/ a cluster that selects no queue
overlay on purpose, and there is no terraform/. Its .ray-kueue-gate.yaml names all of that; the
gate must report exactly the fleet's one real mistake, and none of the findings that only make
sense for this repository's layout (cluster-overlay "overlays/single-queue", capacity-terraform
"restore terraform/")."""
from __future__ import annotations

import json
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.core.versions import REPO_ROOT
from harness.gate import validate_repository

pytestmark = pytest.mark.static
VALIDATE = REPO_ROOT / "scripts" / "validate"

CONFIG = """\
clusters: fleet/clusters
queue_overlays:
  fleet/apps/queues/shared: one ClusterQueue for every team
samples: samples.yaml
cluster_variables: cluster-vars.example.yaml
terraform: null
crds: [fleet/crds]
disable:
  - rules: [cluster-overlay]
    path: fleet/clusters/lab
    reason: the lab cluster runs no queues yet
"""

SERVICE_MONITOR_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              required: [endpoints, selector]
              properties:
                endpoints:
                  type: array
                  items:
                    type: object
                    properties:
                      port: {type: string}
                      interval: {type: string}
                selector:
                  type: object
                  properties:
                    matchLabels: {type: object, additionalProperties: {type: string}}
"""


def _flux_ks(name: str, path: str, depends: str | None = None) -> str:
    dep = f"  dependsOn:\n    - name: {depends}\n" if depends else ""
    return (f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\n"
            f"spec:\n{dep}  interval: 10m\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  path: ./{path}\n")


def _gotk_sync(cluster: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: source.toolkit.fluxcd.io/v1
        kind: GitRepository
        metadata:
          name: flux-system
          namespace: flux-system
        spec:
          interval: 1m
          ref:
            branch: main
          url: ssh://git@github.com/example/fleet
        ---
        """) + _flux_ks("flux-system", f"fleet/clusters/{cluster}")


QUEUES = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: shared
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, memory]
      flavors:
        - name: default-flavor
          resources:
            - name: cpu
              nominalQuota: "8"
            - name: memory
              nominalQuota: 32Gi
"""

LOCAL_QUEUES = """\
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: main
  namespace: team
spec:
  clusterQueue: shared
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: batch
  namespace: team
spec:
  clusterQueue: batch
"""

MONITORING = """\
apiVersion: v1
kind: Namespace
metadata:
  name: monitoring
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: kueue
  namespace: monitoring
spec:
  endpoints:
    - port: metrics
      interval: 30s
  selector:
    matchLabels:
      app.kubernetes.io/name: kueue
"""


def _kustomization(*resources: str) -> str:
    return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + "".join(f"  - {r}\n" for r in resources)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fleet-repo")
    files = {
        ".ray-kueue-gate.yaml": CONFIG,
        "fleet/crds/servicemonitor.yaml": SERVICE_MONITOR_CRD,
        "fleet/apps/queues/shared/kustomization.yaml": _kustomization("queues.yaml", "local-queues.yaml"),
        "fleet/apps/queues/shared/queues.yaml": QUEUES,
        "fleet/apps/queues/shared/local-queues.yaml": LOCAL_QUEUES,
        "fleet/infrastructure/kustomization.yaml": _kustomization("monitoring.yaml"),
        "fleet/infrastructure/monitoring.yaml": MONITORING,
        # What `flux bootstrap --path=fleet/clusters/staging` writes, plus the cluster's layers.
        "fleet/clusters/staging/flux-system/kustomization.yaml": _kustomization("gotk-components.yaml", "gotk-sync.yaml"),
        "fleet/clusters/staging/flux-system/gotk-components.yaml": "# Flux's controllers (left out of this test)\n",
        "fleet/clusters/staging/flux-system/gotk-sync.yaml": _gotk_sync("staging"),
        "fleet/clusters/staging/infrastructure.yaml": _flux_ks("infrastructure", "fleet/infrastructure"),
        "fleet/clusters/staging/apps.yaml": _flux_ks("apps", "fleet/apps/queues/shared", depends="infrastructure"),
        # A cluster with a kustomization.yaml that selects no queue overlay (disabled, with a reason).
        "fleet/clusters/lab/kustomization.yaml": _kustomization("infrastructure.yaml"),
        "fleet/clusters/lab/infrastructure.yaml": _flux_ks("infrastructure", "fleet/infrastructure"),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _run(root: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    proc = subprocess.run([str(VALIDATE), str(root), "--format", f"json={tmp_path / 'f.json'}", "--format", "text"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc, json.loads((tmp_path / "f.json").read_text())["findings"]


def test_fleet_layout_gets_exactly_its_real_findings(fleet, tmp_path):
    proc, found = _run(fleet, tmp_path)
    got = sorted((f["file"], f["line"], f["rule"]) for f in found)
    assert got == [("fleet/apps/queues/shared/local-queues.yaml", 20, "localqueue-clusterqueue")], proc.stdout
    assert proc.returncode == 1
    # The lab cluster's cluster-overlay finding was turned off, and the summary says so and why.
    assert "1 rule disabled for fleet/clusters/lab: the lab cluster runs no queues yet (cluster-overlay)" in proc.stdout


def test_bootstrap_cluster_gets_its_flux_checks(fleet, tmp_path):
    """staging has no kustomization.yaml: its Flux Kustomizations are still rendered and checked."""
    broken = tmp_path / "repo"
    subprocess.run(["cp", "-a", str(fleet), str(broken)], check=True)
    apps = broken / "fleet/clusters/staging/apps.yaml"
    apps.write_text(apps.read_text().replace("name: infrastructure", "name: infra"))
    _, found = _run(broken, tmp_path)
    assert {(f["file"], f["rule"]) for f in found} >= {("fleet/clusters/staging/apps.yaml", "flux-depends-on")}


def test_bad_configuration_is_a_finding_at_its_line(fleet, tmp_path):
    broken = tmp_path / "repo"
    subprocess.run(["cp", "-a", str(fleet), str(broken)], check=True)
    config = broken / ".ray-kueue-gate.yaml"
    config.write_text(config.read_text().replace("    reason: the lab cluster runs no queues yet\n", ""))
    proc, found = _run(broken, tmp_path)
    bad = [f for f in found if f["rule"] == "gate-config"]
    assert [(f["file"], f["line"]) for f in bad] == [(".ray-kueue-gate.yaml", 9)], proc.stdout
    assert "reason" in bad[0]["message"] and proc.returncode == 1


def _copy(fleet: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["cp", "-a", str(fleet), str(repo)], check=True)
    return repo


def test_a_bootstrap_cluster_whose_directory_does_not_build_is_found(fleet, tmp_path):
    """Flux's generator builds every manifest of a bootstrap cluster's directory: the same object twice fails it, and
    nothing of the cluster applies."""
    repo = _copy(fleet, tmp_path)
    staging = repo / "fleet/clusters/staging"
    (staging / "apps-copy.yaml").write_text((staging / "apps.yaml").read_text())
    proc, found = _run(repo, tmp_path)
    assert ("fleet/clusters/staging/flux-system/gotk-sync.yaml", "kustomize-build") in {(f["file"], f["rule"]) for f in found}, proc.stdout


@pytest.mark.parametrize("quota,refused", [("8", False), ("-8", True)])
def test_a_layer_substitutes_from_a_config_map_the_cluster_applies(fleet, tmp_path, quota, refused):
    """postBuild.substituteFrom a ConfigMap one of the cluster's own layers applies (kustomize-controller reads it
    from the cluster): the layer is rendered with its values and judged, not dropped."""
    repo = _copy(fleet, tmp_path)
    staging = repo / "fleet/clusters/staging"
    (staging / "cluster-settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n"
                                                   f"  namespace: flux-system\ndata:\n  CPU_QUOTA: \"{quota}\"\n")
    apps = staging / "apps.yaml"
    apps.write_text(apps.read_text() + "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n")
    queues = repo / "fleet/apps/queues/shared/queues.yaml"
    queues.write_text(queues.read_text().replace('nominalQuota: "8"', 'nominalQuota: "${CPU_QUOTA}"'))
    proc, found = _run(repo, tmp_path)
    webhook = [(f["file"], f["rule"]) for f in found if f["rule"] in ("kueue-webhook", "api-validation", "kustomize-build", "flux-path")]
    assert webhook == ([("fleet/apps/queues/shared/queues.yaml", "kueue-webhook")] if refused else []), proc.stdout


def test_secrets_made_outside_git_are_warnings(fleet, tmp_path):
    """The deploy key `flux bootstrap` writes (flux-system/flux-system) and a SOPS decryption key are made outside Git
    by design: the gate says it cannot see them, as a warning, not an error."""
    repo = _copy(fleet, tmp_path)
    sync = repo / "fleet/clusters/staging/flux-system/gotk-sync.yaml"
    sync.write_text(sync.read_text().replace("  url: ssh://", "  secretRef:\n    name: flux-system\n  url: ssh://"))
    apps = repo / "fleet/clusters/staging/apps.yaml"
    apps.write_text(apps.read_text() + "  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n")
    proc, found = _run(repo, tmp_path)
    refs = {(f["file"], f["severity"]) for f in found if f["rule"] == "object-ref"}
    assert refs == {("fleet/clusters/staging/flux-system/gotk-sync.yaml", "warning"), ("fleet/clusters/staging/apps.yaml", "warning")}, proc.stdout


def test_a_cluster_of_flux_kustomizations_alone_is_a_cluster(fleet, tmp_path):
    """The AKS Flux extension's configuration may point at a directory of Flux Kustomizations with no kustomization
    file (Flux's generator builds it): it is a cluster, checked like the others."""
    repo = _copy(fleet, tmp_path)
    ext = repo / "fleet/clusters/ext"
    ext.mkdir()
    (ext / "infrastructure.yaml").write_text(_flux_ks("infrastructure", "fleet/infrastructure"))
    (ext / "apps.yaml").write_text(_flux_ks("apps", "fleet/apps/queues/shared", depends="infra"))
    proc, found = _run(repo, tmp_path)
    assert ("fleet/clusters/ext/apps.yaml", "flux-depends-on") in {(f["file"], f["rule"]) for f in found}, proc.stdout
    assert "fleet/clusters/ext" in proc.stdout


def test_a_nested_bootstrap_cluster_is_named_as_unchecked(fleet, tmp_path):
    """fleet/clusters/prod/westeurope/ as `flux bootstrap --path` writes it: not a cluster of fleet/clusters, so the gate
    checks nothing of it, and says so (a warning naming the setting that would check it)."""
    repo = _copy(fleet, tmp_path)
    nested = repo / "fleet/clusters/prod/westeurope"
    (nested / "flux-system").mkdir(parents=True)
    (nested / "flux-system/kustomization.yaml").write_text(_kustomization("gotk-components.yaml", "gotk-sync.yaml"))
    (nested / "flux-system/gotk-components.yaml").write_text("# Flux's controllers\n")
    (nested / "flux-system/gotk-sync.yaml").write_text(_gotk_sync("prod/westeurope"))
    proc, found = _run(repo, tmp_path)
    unchecked = [f for f in found if f["rule"] == "cluster-unchecked"]
    assert [(f["file"], f["severity"]) for f in unchecked] == [("fleet/clusters/prod/westeurope/flux-system/gotk-sync.yaml", "warning")], proc.stdout
    assert "clusters: fleet/clusters/prod" in unchecked[0]["hint"], unchecked[0]


def test_the_disabled_rule_is_in_every_machine_report(fleet, tmp_path):
    """A `disable` entry shows in JSON (what it turned off, how many findings it kept out), as a skipped JUnit case and
    as a SARIF tool configuration notification, not in the text summary alone."""
    reports = {fmt: tmp_path / f"r.{fmt}" for fmt in ("json", "junit", "sarif")}
    proc = subprocess.run([str(VALIDATE), str(fleet), *[a for fmt, path in reports.items() for a in ("--format", f"{fmt}={path}")]],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    said = "1 rule disabled for fleet/clusters/lab: the lab cluster runs no queues yet (cluster-overlay)"
    doc = json.loads(reports["json"].read_text())
    assert doc["disabled"] == [said] and doc["suppressed"] == 1, doc
    skipped = [c for c in ET.parse(reports["junit"]).iter("testcase") if c.find("skipped") is not None]
    assert [c.find("skipped").get("message") for c in skipped] == [said]
    (invocation,) = json.loads(reports["sarif"].read_text())["runs"][0]["invocations"]
    assert [n["message"]["text"] for n in invocation["toolConfigurationNotifications"]] == [said]


def test_a_disabled_finding_of_several_clusters_counts_once(repo_copy):
    """A finding found in several builds is one finding naming each place; a `disable` entry that keeps it out keeps out
    one, not one per build (here a warning of a sample both clusters run)."""
    sample = repo_copy / "workloads/aurora-finetune.yaml"
    sample.write_text(sample.read_text().replace("        replicas: 1\n        minReplicas: 1\n        maxReplicas: 1\n",
                                                 "        replicas: 2\n        minReplicas: 1\n        maxReplicas: 1\n", 1))
    warned = [f for f in validate_repository(repo_copy).findings if f.rule == "kueue-idle-quota"]
    assert len(warned) == 1 and "dev-westus3" in warned[0].context and "prod-eastus2" in warned[0].context, warned
    (repo_copy / ".ray-kueue-gate.yaml").write_text(
        "disable:\n  - rules: [kueue-idle-quota]\n    path: workloads/aurora-finetune.yaml\n    reason: sized by hand\n")
    report = validate_repository(repo_copy)
    assert [f for f in report.findings if f.rule == "kueue-idle-quota"] == [] and report.suppressed == 1, report.suppressed


def test_a_sku_component_copied_for_one_cluster_keeps_its_other_layouts_patch(repo_copy):
    """A fork copies the gpu-sku component for its own VM size (both layouts' patches) and includes it from the one cluster
    that has that size: the other layout's patch matches nothing there, but a switch of that cluster's layout needs it."""
    sku = "components/gpu-sku/standard-nd96isr-h100-v5"
    (repo_copy / sku).mkdir()
    (repo_copy / sku / "kustomization.yaml").write_text(
        (repo_copy / "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml").read_text().replace("ND96amsr_A100_v4", "ND96isr_H100_v5"))
    tfvars = repo_copy / "terraform/clusters/prod-eastus2.tfvars"
    tfvars.write_text(tfvars.read_text().replace("Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5"))
    queues = repo_copy / "clusters/prod-eastus2/queues/kustomization.yaml"
    queues.write_text(queues.read_text() + f"components:\n  - ../../../{sku}\n")
    found = validate_repository(repo_copy).findings
    assert not [f for f in found if f.is_error], "\n".join(f.text() for f in found)
    unmatched = [f for f in found if f.rule == "patch-unmatched"]
    assert [(f.file, f.line) for f in unmatched] == [(f"{sku}/kustomization.yaml", 9)], "\n".join(f.text() for f in found)
    assert "keep it" in unmatched[0].hint and "remove the patch" in unmatched[0].hint, unmatched[0].hint


# -- This repository moved under fleet/ with its Terraform kept (review H 1-5, 10) ---------------------------------------
# clusters/ renamed fleet/envs, base, overlays, components and flux moved to fleet/, the samples files renamed, and every
# path of .ray-kueue-gate.yaml written with ./ or a trailing / (the gate reads them in their normal form).
MOVED_CONFIG = """\
clusters: ./fleet/envs/
queue_overlays:
  ./fleet/overlays/single-queue: one ClusterQueue for every team
  fleet/overlays/team-queues/: one ClusterQueue per team, borrowing in a cohort
samples: ray-samples.yaml
terraform: {tfvars: terraform/clusters/}
"""
ENVS = "fleet/envs"
PROD_ENV = f"{ENVS}/prod-eastus2"


def _moved(repo: Path) -> Path:
    import re

    fleet = repo / "fleet"
    fleet.mkdir()
    (repo / "clusters").rename(fleet / "envs")
    for d in ("base", "overlays", "components", "flux"):
        (repo / d).rename(fleet / d)
    for f in [*fleet.rglob("*.yaml"), *(repo / "terraform").glob("*.tf")]:
        text = f.read_text()
        moved = re.sub(r"(?<![\w.])\./(clusters|base|overlays|components|flux)\b",
                       lambda m: "./fleet/" + ("envs" if m[1] == "clusters" else m[1]), text)
        if moved != text:
            f.write_text(moved)
    for samples in (fleet / "envs").glob("*/samples.yaml"):
        samples.rename(samples.with_name("ray-samples.yaml"))
    (repo / ".sourceignore").write_text("/*\n!/fleet/\n")
    (repo / ".ray-kueue-gate.yaml").write_text(MOVED_CONFIG)
    return repo


def _line(repo: Path, rel: str, marker: str) -> int:
    return next(i for i, line in enumerate((repo / rel).read_text().splitlines(), 1) if marker in line)


def _text(report) -> str:
    return "\n".join(f.text() for f in report.findings)


def test_a_moved_layout_with_terraform_is_clean(repo_copy):
    """Terraform kept: the workload ServiceAccount is found in fleet/base (no terraform-federated-subject), the Flux
    configuration's path is judged against fleet/envs, and the ./-written paths select the overlays."""
    report = validate_repository(_moved(repo_copy))
    assert not report.findings, _text(report)


def test_a_moved_layouts_findings_name_the_file_and_line(repo_copy):
    repo = _moved(repo_copy)
    # A Flux Kustomization's setting in prod's file (every cluster names its Kustomization alike): prod's line.
    queues = repo / f"{PROD_ENV}/queues.yaml"
    queues.write_text(queues.read_text().replace("  prune: true\n", "  prune: true\n  targetNamespace: ml\n", 1))
    # The GPU VM size changed without its gpu-sku component (now under fleet/components): one root cause.
    tfvars = repo / "terraform/clusters/prod-eastus2.tfvars"
    tfvars.write_text(tfvars.read_text().replace('"Standard_ND96amsr_A100_v4"', '"Standard_NC24ads_A100_v4"'))
    # A sample submitted to no LocalQueue: the hint names the renamed samples file.
    samples = repo / f"{ENVS}/dev-westus3/ray-samples.yaml"
    samples.write_text(samples.read_text().replace("queue: ", "queue: team-x #", 1))
    found = {f.rule: f for f in validate_repository(repo).findings}
    target = found["flux-target-namespace"]
    assert (target.file, target.line) == (f"{PROD_ENV}/queues.yaml", _line(repo, f"{PROD_ENV}/queues.yaml", "targetNamespace")), target.text()
    sku = found["capacity-sku-component"]
    assert (sku.file, sku.line) == ("fleet/overlays/team-queues/kustomization.yaml",
                                    _line(repo, "fleet/overlays/team-queues/kustomization.yaml", "standard-nd96amsr-a100-v4")), sku.text()
    assert "fleet/components/gpu-sku/standard-nc24ads-a100-v4" in sku.message and "capacity-quota" not in found, sku.text()
    queue = found["sample-queue"]
    assert queue.file == f"{ENVS}/dev-westus3/ray-samples.yaml" and "ray-samples.yaml `queue`" in queue.hint, queue.text()


def test_a_moved_workload_service_account_is_named_where_it_is(repo_copy):
    repo = _moved(repo_copy)
    variables = repo / "terraform/variables.tf"
    variables.write_text(variables.read_text().replace('default     = "ray-workload"\n', 'default     = "ray-worker"\n'))
    found = [f for f in validate_repository(repo).findings if f.rule == "terraform-federated-subject"]
    assert [(f.file, f.line) for f in found] == [("terraform/variables.tf", _line(repo, "terraform/variables.tf", '"ray-worker"'))], found
    assert "fleet/base/service-account.yaml:" in found[0].message, found[0].text()


def _without_flux_extension(repo: Path) -> None:
    """terraform/flux.tf without the microsoft.flux extension and its Flux configuration (Flux from `flux bootstrap`)."""
    import re

    flux = repo / "terraform/flux.tf"
    text = re.sub(r'resource "azurerm_kubernetes_(cluster_extension" "flux|flux_configuration" "this)" \{.*?\n\}\n', "", flux.read_text(), flags=re.S)
    flux.write_text(text.replace("azurerm_kubernetes_cluster_extension.flux, ", ""))
    outputs = repo / "terraform/outputs.tf"
    outputs.write_text(re.sub(r'output "flux_configuration_id" \{.*?\n\}\n', "", outputs.read_text(), flags=re.S))


def test_terraform_with_flux_bootstrap_instead_of_the_extension(repo_copy):
    """Terraform for AKS and `flux bootstrap` for Flux is a valid layout: each cluster folder's gotk-sync.yaml reconciles
    it. A cluster Terraform provisions with neither is one finding, at its tfvars' cluster_name."""
    repo = _moved(repo_copy)
    _without_flux_extension(repo)
    for cluster in ("prod-eastus2", "dev-westus3"):
        (repo / f"{ENVS}/{cluster}/flux-system/gotk-sync.yaml").write_text(
            _gotk_sync(cluster).replace("fleet/clusters/", f"{ENVS}/").replace("example/fleet", "example/ray-on-aks"))
    found = [f for f in validate_repository(repo).findings if f.is_error]
    assert not found, "\n".join(f.text() for f in found)
    (repo / f"{ENVS}/dev-westus3/flux-system/gotk-sync.yaml").write_text("# Replaced by `flux bootstrap`.\n")
    found = [f for f in validate_repository(repo).findings if f.rule == "terraform-flux-configuration"]
    tfvars = "terraform/clusters/dev-westus3.tfvars"
    assert [(f.file, f.line) for f in found] == [(tfvars, _line(repo, tfvars, "cluster_name"))], found
    assert f"flux bootstrap --path={ENVS}/dev-westus3" in found[0].hint, found[0].hint


def test_configured_paths_are_read_in_their_normal_form(repo_copy):
    """./, a trailing / and a/../b name one path: a `disable` entry written so covers the findings, one over nothing the
    gate checks is a warning, one leaving the repository is refused."""
    repo = _moved(repo_copy)
    queues = repo / f"{PROD_ENV}/queues.yaml"
    queues.write_text(queues.read_text().replace("  prune: true\n", "  prune: true\n  targetNamespace: ml\n", 1))
    (repo / "docs").mkdir()
    (repo / "docs/notes.md").write_text("notes\n")
    config = repo / ".ray-kueue-gate.yaml"
    config.write_text(MOVED_CONFIG + "disable:\n"
                      "  - {rules: [flux-target-namespace], path: ./fleet/base/../envs/prod-eastus2/, reason: moved on purpose here}\n"
                      "  - {rules: [sample-fits], path: ./docs, reason: a path nothing is checked at}\n")
    report = validate_repository(repo)
    assert [(f.rule, f.file, f.line, f.severity) for f in report.findings] == [("gate-config", ".ray-kueue-gate.yaml", 9, "warning")], _text(report)
    assert report.suppressed == 1 and report.disabled[0].startswith("1 rule disabled for fleet/envs/prod-eastus2:"), report.disabled
    config.write_text(MOVED_CONFIG.replace("clusters: ./fleet/envs/", "clusters: fleet/../../envs"))
    found = [(f.rule, f.line) for f in validate_repository(repo).findings if f.rule == "gate-config"]
    assert found == [("gate-config", 1)], found
