"""A value a strategic-merge patch writes is reported at the patch's line (harness.gate.writers): targeted or naming its
object, inline or in a file, in a Flux Kustomization's spec.patches, a kustomization's patches or patchesStrategicMerge;
and a patch that replaces metadata.annotations does not wipe the probe's marks."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import validate_repository
from harness.gate.render import Build, RenderError
from harness.gate.writers import Writers
from tests.static.test_capacity import line_of
from tests.static.test_gate_corpus import append, write

pytestmark = pytest.mark.static

FLUX_QUEUES = "clusters/prod-eastus2/queues.yaml"
QUEUES = "clusters/prod-eastus2/queues/kustomization.yaml"
SELECTOR_SMP = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-b-cq
spec:
  namespaceSelector:
    matchLabels:
      team: b
"""
HOLD_SMP = """apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: team-a
  namespace: ray
spec:
  stopPolicy: Hold
"""


def indent(text: str, by: int) -> str:
    return "".join(" " * by + line + "\n" for line in text.splitlines())


def located(root: Path) -> dict[str, set]:
    report = validate_repository(root)
    out: dict[str, set] = {}
    for f in report.findings:
        out.setdefault(f.rule, set()).add((f.file, f.line))
    return out


def test_strategic_merges_in_the_flux_kustomization_are_at_their_lines(repo_copy: Path):
    """A targeted strategic merge and one that names its object, inline in spec.patches (E.md #6, s08 and s08d)."""
    append(repo_copy, FLUX_QUEUES, "  patches:\n    - target:\n        kind: LocalQueue\n        name: team-a\n      patch: |\n"
           + indent(HOLD_SMP, 8) + "    - patch: |\n" + indent(SELECTOR_SMP, 8))
    found = located(repo_copy)
    assert found.get("queue-stopped") == {(FLUX_QUEUES, line_of(repo_copy, FLUX_QUEUES, "stopPolicy: Hold"))}, found
    assert found.get("queue-namespace-selector") == {(FLUX_QUEUES, line_of(repo_copy, FLUX_QUEUES, "namespaceSelector:"))}, found
    assert "patch-unmatched" not in found, found


def test_strategic_merges_in_a_file_and_in_patches_strategic_merge_are_at_their_lines(repo_copy: Path):
    """A kustomization's `patches: - path:` file and an inline patchesStrategicMerge entry (E.md #6, s08b)."""
    write(repo_copy, "clusters/prod-eastus2/queues/hold.yaml", HOLD_SMP)
    append(repo_copy, QUEUES, "patches:\n  - path: hold.yaml\npatchesStrategicMerge:\n  - |-\n" + indent(SELECTOR_SMP, 4))
    found = located(repo_copy)
    assert found.get("queue-stopped") == {("clusters/prod-eastus2/queues/hold.yaml", 7)}, found
    assert found.get("queue-namespace-selector") == {(QUEUES, line_of(repo_copy, QUEUES, "namespaceSelector:"))}, found


def test_a_merged_map_the_base_writes_whole_stays_at_the_base(repo_copy: Path):
    """A strategic merge into a map that leaves it as the base's document writes it: the finding stays at the base."""
    team_a = "overlays/team-queues/team-a.yaml"
    write(repo_copy, team_a, (repo_copy / team_a).read_text().replace("namespaceSelector: {}", "namespaceSelector: {matchLabels: {team: a}}"))
    append(repo_copy, FLUX_QUEUES, "  patches:\n    - patch: |\n" + indent(SELECTOR_SMP.replace("team: b", "team: a").replace("team-b", "team-a"), 8))
    found = located(repo_copy)
    assert found.get("queue-namespace-selector") == {(team_a, line_of(repo_copy, team_a, "namespaceSelector:"))}, found


def test_a_patch_that_replaces_the_annotations_keeps_the_probe_marks(repo_copy: Path):
    """Stop 39: a later patch replacing metadata.annotations wiped the probe's marks: two false patch-unmatched warnings,
    and the value at the base's line."""
    append(repo_copy, FLUX_QUEUES, "  patches:\n    - target:\n        kind: LocalQueue\n        name: team-a\n      patch: |\n"
           "        - {op: add, path: /spec/stopPolicy, value: Hold}\n    - target:\n        kind: LocalQueue\n      patch: |\n"
           "        - {op: add, path: /metadata/annotations, value: {owner: platform}}\n")
    found = located(repo_copy)
    assert found.get("queue-stopped") == {(FLUX_QUEUES, line_of(repo_copy, FLUX_QUEUES, "/spec/stopPolicy"))}, found
    assert "patch-unmatched" not in found, found


def test_only_the_helpers_failure_is_taken_as_no_answer():
    """Writers._result: a RenderError (the helper failed the probe; its join raises it again) is no answer; any other
    exception is a defect of the gate and is not swallowed."""
    build, obj = Build("overlays/x", "overlays/x"), {"kind": "LocalQueue", "metadata": {"name": "a"}}

    def failing(error: Exception):
        def pending():
            raise error
        return pending

    assert Writers({"k": []}, failing(RenderError("fluxbuild failed"))).at(build, obj, ["spec"]) is None
    with pytest.raises(KeyError):
        Writers({"k": []}, failing(KeyError("id"))).at(build, obj, ["spec"])
