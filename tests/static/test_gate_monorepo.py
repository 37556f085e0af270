"""The gate on a platform in a subdirectory of a bigger Git repository (a monorepo's platform/): a Flux Kustomization's
spec.path, the path of Terraform's Flux configuration and `flux bootstrap`'s are relative to the Git root, the root of
the GitRepository's artifact (harness/gate/flux_paths.py). The monorepo is built in tmp_path with `git init`."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.gate import validate_repository
from harness.testing import copy_config

pytestmark = pytest.mark.static
P = "platform"
TF_ENTRY = '"./clusters/${var.cluster_name}"'


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    """This repository's configuration under mono/platform/, its Flux paths written from the Git root mono/ (in the three
    spellings kustomize-controller reads alike: ./platform/..., platform/..., /platform/...)."""
    top = tmp_path / "mono"
    root = copy_config(top / P)
    subprocess.run(["git", "init", "-q", str(top)], check=True)
    spellings = {"dev-westus3": f"{P}/", "prod-eastus2": f"/{P}/"}
    for f in [*root.glob("clusters/*/*.yaml"), *root.glob("clusters/local/entry/*.yaml")]:
        f.write_text(f.read_text().replace("  path: ./", f"  path: {spellings.get(f.parent.name, f'./{P}/')}"))
    tf = root / "terraform/flux.tf"
    assert TF_ENTRY in tf.read_text()
    tf.write_text(tf.read_text().replace(TF_ENTRY, f'"./{P}/clusters/${{var.cluster_name}}"'))
    return root


def set_path(root: Path, rel: str, path: str) -> int:
    """Sets the spec.path of the Flux Kustomization in `rel`; answers its line."""
    lines = (root / rel).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("  path: "))
    lines[at] = f"  path: {path}\n"
    (root / rel).write_text("".join(lines))
    return at + 1


def show(found) -> str:
    return "\n".join(f.text() for f in found)


def test_flux_paths_from_the_git_root_are_clean(platform):
    """./platform/..., platform/... and /platform/... are the checked tree's directories, Terraform's
    ./platform/clusters/${var.cluster_name} its cluster folders: no finding."""
    found = validate_repository(platform).findings
    assert found == [], show(found)


def test_a_path_written_from_the_checked_tree_is_flux_path_with_the_path_flux_needs(platform):
    """./clusters/dev-westus3/queues is resolved at the Git root, where it does not exist: flux-path, once, whose hint
    writes it from the Git root."""
    line = set_path(platform, "clusters/dev-westus3/queues.yaml", "./clusters/dev-westus3/queues")
    found = validate_repository(platform).findings
    assert [(f.rule, f.file, f.line, f.severity) for f in found] == [
        ("flux-path", "clusters/dev-westus3/queues.yaml", line, "error")], show(found)
    assert "point spec.path at ./platform/clusters/dev-westus3/queues" in found[0].hint


def test_terraform_flux_path_written_from_the_checked_tree_gets_the_git_root_path(platform):
    tf = platform / "terraform/flux.tf"
    tf.write_text(tf.read_text().replace(f'"./{P}/clusters/${{var.cluster_name}}"', TF_ENTRY))
    line = next(i for i, text in enumerate(tf.read_text().splitlines(), 1) if TF_ENTRY in text)
    found = validate_repository(platform).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("terraform-flux-configuration", "terraform/flux.tf", line)], show(found)
    assert 'set path = "./platform/clusters/${var.cluster_name}"' in found[0].hint


def test_a_path_outside_the_checked_tree_that_exists_is_one_warning(platform):
    """A layer in another directory of the monorepo: Flux applies it, the gate does not check it. One warning at its
    spec.path, and nothing that only follows from its objects being unknown (the Kueue and KubeRay APIs it installs)."""
    shutil.copytree(platform / "flux/infrastructure/controllers", platform.parent / "shared/infra")
    line = set_path(platform, "clusters/prod-eastus2/infrastructure.yaml", "./shared/infra")
    found = validate_repository(platform).findings
    assert [(f.rule, f.file, f.line, f.severity) for f in found] == [
        ("flux-path-outside", "clusters/prod-eastus2/infrastructure.yaml", line, "warning")], show(found)
    assert "./shared/infra" in found[0].message and "not checked" in found[0].message


def test_the_other_cluster_path_hint_is_written_from_the_git_root(platform):
    set_path(platform, "clusters/prod-eastus2/queues.yaml", f"./{P}/clusters/dev-westus3/queues")
    found = [f for f in validate_repository(platform).findings if f.rule == "flux-other-cluster-path"]
    assert len(found) == 1 and "point spec.path at ./platform/clusters/prod-eastus2/queues " in found[0].hint, show(found)


def test_flux_bootstrap_with_a_path_from_the_git_root(platform):
    """Terraform without the Flux extension, Flux from `flux bootstrap --path=platform/clusters/<c>`: the gotk-sync.yaml
    beside each cluster's kustomization.yaml reconciles the folder (clean); without it, the hint's --path is from the Git root."""
    from tests.static.test_gate_fork_layout import _gotk_sync, _without_flux_extension

    _without_flux_extension(platform)
    for cluster in ("prod-eastus2", "dev-westus3"):
        (platform / f"clusters/{cluster}/flux-system/gotk-sync.yaml").write_text(_gotk_sync(cluster).replace("fleet/clusters/", f"./{P}/clusters/"))
    found = [f for f in validate_repository(platform).findings if f.is_error]
    assert not found, show(found)
    (platform / "clusters/dev-westus3/flux-system/gotk-sync.yaml").write_text("# Replaced by `flux bootstrap`.\n")
    found = [f for f in validate_repository(platform).findings if f.rule == "terraform-flux-configuration"]
    assert len(found) == 1 and f"flux bootstrap --path={P}/clusters/dev-westus3`" in found[0].hint, show(found)


def test_what_only_a_layer_outside_the_checked_tree_defines_is_no_finding(platform):
    """The unchecked layer defines a Flux Kustomization and a GitRepository the checked layers name (dependsOn,
    sourceRef): that they are not in the gate's render is no missing reference."""
    shared = platform.parent / "shared/infra"
    shutil.copytree(platform / "flux/infrastructure/controllers", shared)
    (shared / "extras.yaml").write_text(f"""\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: extras, namespace: flux-system}}
spec:
  interval: 10m
  path: ./{P}/nothing-here
  prune: true
  sourceRef: {{kind: GitRepository, name: flux-system}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {{name: shared-repo, namespace: flux-system}}
spec: {{interval: 1h, url: https://example.com/shared.git, ref: {{branch: main}}}}
""")
    set_path(platform, "clusters/prod-eastus2/infrastructure.yaml", "./shared/infra")
    queues = platform / "clusters/prod-eastus2/queues.yaml"
    queues.write_text(queues.read_text().replace("    - name: infra-controllers\n", "    - name: infra-controllers\n    - name: extras\n", 1))
    layer = platform / "clusters/prod-eastus2/queues"
    (layer / "extra.yaml").write_text(f"""\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: extra, namespace: flux-system}}
spec: {{interval: 10m, path: ./{P}/flux/extra, prune: true, sourceRef: {{kind: GitRepository, name: shared-repo}}}}
""")
    (layer / "kustomization.yaml").write_text((layer / "kustomization.yaml").read_text() + "  - extra.yaml\n")
    (platform / "flux/extra").mkdir()
    (platform / "flux/extra/kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                                      "configMapGenerator: [{name: extra, namespace: flux-system, literals: [a=b]}]\n")
    found = validate_repository(platform).findings
    assert [f.rule for f in found] == ["flux-path-outside"], show(found)


def test_base_ref_of_a_monorepo_renders_the_checked_tree_with_its_git_root_paths(platform):
    """--base REF renders the checked tree as it was at REF (its tree written by git), its Flux paths from the Git root: the
    queues layer it held is there, so a LocalQueue pointed at another ClusterQueue is refused as an update."""
    from tests.static.test_gate_updates import committed, line_of

    committed(platform.parent)
    team_a = platform / "overlays/team-queues/team-a.yaml"
    team_a.write_text(team_a.read_text().replace("team-a-cq", "research-cq"))
    found = [f for f in validate_repository(platform, base="base").findings if f.rule == "update-refused"]
    assert [(f.file, f.line) for f in found] == [("overlays/team-queues/team-a.yaml",
                                                  line_of(platform, "overlays/team-queues/team-a.yaml", "clusterQueue: research-cq"))], show(found)
