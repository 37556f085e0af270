"""`make report` end to end: a branch of a clone of this repository rebalances the team GPU
quotas of cluster prod-eastus2 in its own queue layer (team A 6, team B 2 instead of 4 each: a
patch in clusters/prod-eastus2/queues, which the bare overlay does not have) and shrinks the
sample llm-training to 2 workers (workloads/defaults.yaml); the report, run against the session's
cluster, shows the changed cells and the scenarios whose outcome the real Kueue changes: each ref
runs its own samples on its own cluster's queue layer."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from harness.core import REPO_ROOT, timeouts
from harness.k8s import CLUSTER_QUEUE, RAYJOB

pytestmark = pytest.mark.integration

PROD_QUEUES = "clusters/prod-eastus2/queues/kustomization.yaml"
REBALANCE = """\
patches:
  # Team A runs the larger training jobs: 6 of the node's 8 GPUs are its own, 2 are team B's.
  - target:
      kind: ClusterQueue
      name: team-a-cq
    patch: |-
      - {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "6"}
  - target:
      kind: ClusterQueue
      name: team-b-cq
    patch: |-
      - {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "2"}
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=report@test", "-c", "user.name=report-test", *args],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def rebalanced_clone(tmp_path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    git(clone, "checkout", "-q", "-B", "main")  # the clone's main is this repository's HEAD
    git(clone, "checkout", "-q", "-b", "rebalance-gpus")
    queues = clone / PROD_QUEUES
    queues.write_text(queues.read_text() + REBALANCE)
    defaults = clone / "workloads/defaults.yaml"
    text = defaults.read_text()
    assert 'NUM_WORKERS: "4"' in text, "the sample defaults changed shape; update this test"
    defaults.write_text(text.replace('NUM_WORKERS: "4"', 'NUM_WORKERS: "2"'))
    git(clone, "commit", "-qam", "Rebalance prod's GPUs: team A 6, team B 2; llm-training on 2 workers")
    return clone


def test_report_shows_changed_quota_and_changed_outcome(rebalanced_clone, backend, kube, names, tmp_path):
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "harness.report", "--repo", str(rebalanced_clone), "--base", "main", "--out", str(out),
         "--kubeconfig", str(backend.kubeconfig), "--namespace", names.namespace, "--prefix", names.prefix,
         "--scenario", "single-queue", "--scenario", "team-queues", "--no-gate", "--timeout", str(timeouts.LONG_DECISION)],
        capture_output=True, text=True, timeout=timeouts.REPORT_RUN)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    md = (out / "report.md").read_text()
    assert "| team-a-cq | shared-cohort | gpu | nvidia.com/gpu | **`6`** (was `4`) | `4` | — |" in md, md
    assert "| team-b-cq | shared-cohort | gpu | nvidia.com/gpu | **`2`** (was `4`) | `4` | — |" in md, md
    assert "| team-a-cq | shared-cohort | default | cpu | `47` | `47` | — |" in md
    assert ("quota components and the cluster's own patches (in the order they apply, the last wins): "
            "**`components/gpu-sku/standard-nd96amsr-a100-v4`, `clusters/prod-eastus2/queues/kustomization.yaml patches`**") in md, md
    assert f"Scenarios ran for real on the cluster of --kubeconfig {backend.kubeconfig}" in md

    # Kueue's own decisions: on main B reclaims its 4 GPUs by preempting one of A's jobs; with a
    # guarantee of 2, B's 4-GPU job needs to borrow, reclaim does not apply, and it waits.
    data = json.loads((out / "report.json").read_text())
    runs = {r["ref"]: r for r in data["scenarios"] if r["scenario"] == "team-queues"}
    assert runs["base"]["verdict"] == "holds", runs["base"]
    assert runs["head"]["verdict"] == "does not hold", runs["head"]
    assert data["changed_scenarios"] == ["single-queue", "team-queues"]
    for side in ("base", "head"):  # the cluster's own layer, not the bare overlay
        assert runs[side]["ran_on"].startswith("prod-eastus2's queue layer (`clusters/prod-eastus2/queues`"), runs[side]["ran_on"]
    assert "`clusters/prod-eastus2/queues/kustomization.yaml patches`" in runs["head"]["ran_on"]
    base_kinds = [(e["kind"], e["job"], e["reason"]) for e in runs["base"]["events"]]
    assert any(k == "preempted" and r == "InCohortReclamation" for k, _, r in base_kinds), base_kinds
    assert not any(e["kind"] == "preempted" for e in runs["head"]["events"]), runs["head"]["events"]
    assert runs["head"]["steps"][1]["jobs"]["b-1"][0] == "pending"
    # b-1 never ran, so "b-1 finishes" finishes nothing: it stays pending and is not drawn as finished.
    assert runs["head"]["steps"][2]["jobs"]["b-1"][0] == "pending", runs["head"]["steps"][2]
    assert "b-1 not finished: Kueue never admitted it, so it never ran" in runs["head"]["steps"][2]["outcome"]
    assert not any(e["kind"] == "finished" and e["job"] == "b-1" for e in runs["head"]["events"]), runs["head"]["events"]
    assert any(e["kind"] == "finished" and e["job"] == "b-1" for e in runs["base"]["events"]), runs["base"]["events"]

    # Each ref submits its own sample: on base llm-training has 4 workers and train-2 waits for quota;
    # on head 2 workers, and both fit.
    single = {r["ref"]: r for r in data["scenarios"] if r["scenario"] == "single-queue"}
    assert single["base"]["asks"]["train-1"] == "68 CPU, 528Gi memory, 4 GPU", single["base"]["asks"]
    assert single["head"]["asks"]["train-1"] == "36 CPU, 272Gi memory, 2 GPU", single["head"]["asks"]
    assert (single["base"]["verdict"], single["head"]["verdict"]) == ("holds", "does not hold"), single
    assert single["head"]["steps"][1]["jobs"]["train-2"][0] == "admitted"
    assert single["base"]["ran_on"].startswith("the bare `overlays/single-queue` (prod-eastus2 runs `overlays/team-queues`")
    assert md.index("## Scenario outcomes that changed") < md.index("**team-queues borrow and reclaim**") < md.index("## Quotas per cluster")

    for side in ("base", "head"):
        png = out / f"team-queues-{side}.png"
        assert f"]({png.name})" in md
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(png) as img:
            img.verify()
            assert img.format == "PNG" and img.size[0] >= 600 and img.size[1] >= 300
    assert "![" not in (out / "comment.md").read_text(), "the PR comment cannot show local images"

    # Everything the report applied is gone again, so the session's other tests start clean.
    assert not kube.list(*RAYJOB, namespace=names.namespace)
    assert not {names.cq("team-a-cq"), names.cq("team-b-cq")} & {c["metadata"]["name"] for c in kube.list(*CLUSTER_QUEUE)}


def _team_layer(edit) -> "Layer":
    """The team-queues scenario's layer of this repository's prod-eastus2, its objects passed through `edit` (a PR's change)."""
    from harness.report.scenarios import SCENARIOS, Layer, queue_layer

    team = next(s for s in SCENARIOS if s.name == "team-queues")
    layer = queue_layer(REPO_ROOT, "head", team)
    return team, Layer(edit(copy.deepcopy(layer.objects)), layer.ran_on, on_cluster=True)


def test_a_held_cluster_queue_is_reported_as_kueue_says_not_a_timeout(backend, names):
    """stopPolicy Hold on team-b-cq (a valid change, the gate's queue-stopped): Kueue keeps it Active=False (Stopped) by
    design, so the run waits for that, not Active=True, and b-1's step says what Kueue says of it."""
    from harness.report.scenarios import ScenarioRunner, bind_roles

    def hold(objs):
        next(o for o in objs if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-b-cq")["spec"]["stopPolicy"] = "Hold"
        return objs

    team, layer = _team_layer(hold)
    result = ScenarioRunner(backend.api_client(), names, timeout=timeouts.LONG_DECISION).run(team, REPO_ROOT, "head", bind_roles(REPO_ROOT, team, layer))
    assert not result.error, result.error
    assert result.verdict() == "does not hold", result
    assert result.steps[1].jobs["b-1"] == ("pending", "ClusterQueue team-b-cq is inactive"), result.steps[1].jobs
    assert "team-b: 1 pending (ClusterQueue team-b-cq is inactive)" in result.steps[1].outcome(), result.steps[1].outcome()


def test_renamed_queues_run_the_same_roles(backend, names):
    """LocalQueue team-a renamed research and ClusterQueue team-b-cq renamed gpu-b-cq (each reference following): the same
    roles, so the scenario holds and its outcome names the roles, as on a layer with the repository's names."""
    from harness.report.scenarios import ScenarioRunner, bind_roles

    def rename(objs):
        for o in objs:
            if o["kind"] == "LocalQueue" and o["metadata"]["name"] == "team-a":
                o["metadata"]["name"] = "research"
            if o["metadata"]["name"] == "team-b-cq":
                o["metadata"]["name"] = "gpu-b-cq"
            if o["kind"] == "LocalQueue" and o["spec"]["clusterQueue"] == "team-b-cq":
                o["spec"]["clusterQueue"] = "gpu-b-cq"
        return objs

    team, layer = _team_layer(rename)
    layer = bind_roles(REPO_ROOT, team, layer)
    assert layer.bind == {"team-a": "research", "team-a-cq": "team-a-cq", "team-b": "team-b", "team-b-cq": "gpu-b-cq"}, layer.bind
    result = ScenarioRunner(backend.api_client(), names, timeout=timeouts.LONG_DECISION).run(team, REPO_ROOT, "head", layer)
    assert result.passed, (result.error, result.failures)
    outcome = result.steps[0].outcome()
    assert "team-a: 2 admitted" in outcome and "team-a-cq holds 8 GPU (4 borrowed)" in outcome, outcome
    assert "gpu-b-cq" in result.cluster_queues
