"""The report's offline half: quota tables of two rendered trees, change marking, headroom, the
Markdown, and bad input (unknown ref, configuration that does not render) exiting 2 cleanly."""
from __future__ import annotations

import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from harness.report import markdown, quotas
from harness.report.scenarios import SCENARIOS, ScenarioResult, StepResult, short_reason
from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

SKU = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
TEAM_GPU = '- {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "4"}'


def set_team_gpus(root: Path, gpus: str) -> None:
    path = root / SKU
    text = path.read_text()
    assert text.count(TEAM_GPU) == 1, "the SKU component changed shape; update this test"
    path.write_text(text.replace(TEAM_GPU, TEAM_GPU.replace('"4"', f'"{gpus}"')))


def rows(diff: quotas.ClusterDiff) -> dict[tuple, quotas.RowDiff]:
    return {r.key: r for r in diff.rows}


@pytest.fixture(scope="module")
def base_tree() -> quotas.TreeQuotas:
    return quotas.load_tree(REPO_ROOT, "base")


def test_unchanged_trees_have_no_changes(base_tree):
    diffs = quotas.diff(base_tree, quotas.load_tree(REPO_ROOT, "head"))
    assert {d.name for d in diffs} == {"dev-westus3", "prod-eastus2"}
    assert not any(d.changed for d in diffs)
    prod = next(d for d in diffs if d.name == "prod-eastus2")
    assert prod.overlays == (["overlays/team-queues"], ["overlays/team-queues"])
    gpu = rows(prod)[("team-a-cq", "gpu", "nvidia.com/gpu")]
    assert (gpu.cells["nominalQuota"].after, gpu.cells["borrowingLimit"].after, gpu.cells["lendingLimit"].after) == ("4", "4", None)


def test_changed_gpu_quota_is_marked_with_the_old_value(base_tree, repo_copy):
    set_team_gpus(repo_copy, "3")
    diffs = {d.name: d for d in quotas.diff(base_tree, quotas.load_tree(repo_copy, "head"))}
    prod, dev = diffs["prod-eastus2"], diffs["dev-westus3"]
    assert prod.changed and not dev.changed  # dev-westus3 runs single-queue on another SKU
    for cq in ("team-a-cq", "team-b-cq"):
        row = rows(prod)[(cq, "gpu", "nvidia.com/gpu")]
        assert row.status == "changed"
        assert (row.cells["nominalQuota"].before, row.cells["nominalQuota"].after) == ("4", "3")
        assert not row.cells["borrowingLimit"].changed
    assert [r.key for r in prod.rows if r.status == "changed"] == [("team-a-cq", "gpu", "nvidia.com/gpu"), ("team-b-cq", "gpu", "nvidia.com/gpu")]
    gpu_room = {k: (b.headroom, a.headroom) for k, b, a in prod.headroom}[("gpu", "nvidia.com/gpu")]
    assert gpu_room == (0, 2)  # 8 GPUs in the pool, 6 now promised

    md = markdown.render(markdown.ReportData(str(repo_copy), "main", "a" * 40, "working tree", "b" * 40, list(diffs.values()), [], {}))
    assert "| team-a-cq | shared-cohort | gpu | nvidia.com/gpu | **`3`** (was `4`) | `4` | — |" in md
    assert "| team-b-cq | shared-cohort | gpu | nvidia.com/gpu | **`3`** (was `4`) | `4` | — |" in md
    assert "| team-a-cq | shared-cohort | default | cpu | `47` | `47` | — |" in md  # unchanged cells stay plain
    assert "| gpu | nvidia.com/gpu | gpupool 1 x Standard_ND96amsr_A100_v4 | `8` | **`6`** (was `8`) | **`2`** (was `0`) |" in md
    assert md.index("### Cluster `prod-eastus2`") < md.index("### Cluster `dev-westus3`"), "changed clusters come first"
    assert "1 of 2 cluster(s) change: `prod-eastus2`." in md


def test_quota_above_the_node_pool_shows_negative_headroom(base_tree, repo_copy):
    set_team_gpus(repo_copy, "5")
    prod = next(d for d in quotas.diff(base_tree, quotas.load_tree(repo_copy, "head")) if d.name == "prod-eastus2")
    md = "\n".join(markdown.quota_section(prod))
    assert "**`-2`** (was `0`) ⚠ over capacity" in md


def test_added_queue_and_switched_overlay(base_tree, repo_copy):
    team_b = (repo_copy / "overlays/team-queues/team-b.yaml").read_text()
    (repo_copy / "overlays/team-queues/team-c.yaml").write_text(team_b.replace("team-b", "team-c"))
    k = repo_copy / "overlays/team-queues/kustomization.yaml"
    k.write_text(k.read_text().replace("  - team-b.yaml\n", "  - team-b.yaml\n  - team-c.yaml\n"))
    dev = repo_copy / "clusters/dev-westus3/queues/kustomization.yaml"
    dev.write_text(dev.read_text().replace("  - ../../../overlays/single-queue\n", "  - ../../../overlays/team-queues\n"))
    diffs = {d.name: d for d in quotas.diff(base_tree, quotas.load_tree(repo_copy, "head"))}
    prod = diffs["prod-eastus2"]
    assert prod.queues_added == ["team-c-cq"] and prod.queues_removed == []
    assert {r.status for r in prod.rows if r.key[0] == "team-c-cq"} == {"added"}
    dev_diff = diffs["dev-westus3"]
    assert dev_diff.overlays == (["overlays/single-queue"], ["overlays/team-queues"])
    assert set(dev_diff.queues_removed) == {"cluster-queue"} and "team-a-cq" in dev_diff.queues_added
    md = "\n".join(markdown.quota_section(dev_diff))
    assert "Runs **`overlays/team-queues`** (was `overlays/single-queue`)" in md
    assert "~~`23`~~ (removed)" in md and "ClusterQueues added: `team-a-cq`, `team-b-cq`, `team-c-cq`; removed: `cluster-queue`." in md


def _step(title, jobs, queue_of, preempted=(), usage=None):
    return StepResult(title, 0.0, 1.0, jobs, queue_of, [], list(preempted), usage or {})


def test_changed_scenario_is_called_out_first(base_tree):
    """Rendering only: the outcomes here are hand-made inputs to the Markdown writer; the real
    ones come from Kueue in tests/integration/test_report.py."""
    sc = next(s for s in SCENARIOS if s.name == "team-queues")
    q = {"a-1": "team-a", "a-2": "team-a", "b-1": "team-b"}
    admitted = {j: ("admitted", "") for j in q}
    base = ScenarioResult("team-queues", "base", sc.layout, steps=[
        _step("1", {"a-1": admitted["a-1"], "a-2": admitted["a-2"]}, {"a-1": "team-a", "a-2": "team-a"},
              usage={"team-a-cq": (Decimal(8), Decimal(4))}),
        _step("2", {**admitted, "a-2": ("pending", "insufficient unused quota for nvidia.com/gpu in flavor gpu, 4 more needed")}, q,
              [("a-2", "InCohortReclamation")]),
        _step("3", {**admitted, "b-1": ("finished", "")}, q)])
    head = ScenarioResult("team-queues", "head", sc.layout, steps=[
        base.steps[0],
        _step("2", {**admitted, "b-1": ("pending", "couldn't assign flavors: insufficient unused quota for nvidia.com/gpu in flavor gpu, 4 more needed")}, q),
        base.steps[2]])
    head.failures = sc.check(head.steps)
    assert base.passed and sc.check(base.steps) == []
    assert not head.passed and any("b-1 should be admitted" in f for f in head.failures)
    data = markdown.ReportData("repo", "main", "a" * 40, "working tree", "b" * 40, quotas.diff(base_tree, base_tree), [sc],
                               {("team-queues", "base"): base, ("team-queues", "head"): head})
    assert data.changed_scenarios() == [sc]
    md = markdown.render(data)
    changed = md.index("## Scenario outcomes that changed")
    assert changed < md.index("## Quotas per cluster") < md.index("## Scenarios")
    assert "**team-queues borrow and reclaim**: expectation ✅ holds on base → ❌ does not hold on head; outcome differs at step 2." in md
    assert "**team-b: 1 pending (insufficient unused quota for nvidia.com/gpu in flavor gpu)**" in md
    assert md.startswith(markdown.MARKER)
    assert "No scenario outcome changed." in markdown.render(markdown.ReportData(
        "repo", "main", "a" * 40, "working tree", "b" * 40, [], [sc], {("team-queues", "base"): base, ("team-queues", "head"): base}))


def test_short_reason_drops_the_numbers():
    msg = ("couldn't assign flavors to pod set gpu-workers: insufficient unused quota for cpu in flavor default, 40 more needed, "
           "insufficient unused quota for memory in flavor default, 288Gi more needed")
    assert short_reason(msg) == "insufficient unused quota for cpu in flavor default"


# -- the CLI on bad input ---------------------------------------------------------------------------
def report(*args, cwd=REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.report", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)


def git_repo(root: Path) -> Path:
    env = ["-c", "user.email=report@test", "-c", "user.name=report-test"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-qm", "base"], check=True)
    return root


def test_unknown_base_ref_exits_two_without_writing(tmp_path):
    out = tmp_path / "out"
    proc = report("--base", "no-such-ref-6", "--repo", REPO_ROOT, "--out", out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "base ref 'no-such-ref-6' not found" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_configuration_that_does_not_render_exits_two_naming_the_file(repo_copy, tmp_path):
    git_repo(repo_copy)
    k = repo_copy / "overlays/team-queues/kustomization.yaml"
    k.write_text(k.read_text().replace("  - team-b.yaml\n", "  - team-b.yaml\n  - team-z.yaml\n"))
    out = tmp_path / "out"
    proc = report("--base", "main", "--repo", repo_copy, "--out", out)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "overlays/team-queues/kustomization.yaml does not render" in proc.stderr and "kustomize-build" in proc.stderr, proc.stderr
    assert "team-z.yaml" in proc.stderr, proc.stderr
    assert not out.exists()


def test_out_dir_with_other_files_is_left_alone(repo_copy, tmp_path):
    git_repo(repo_copy)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = report("--base", "main", "--repo", repo_copy, "--out", out)
    assert proc.returncode == 2 and "holds files the report did not write (notes.txt)" in proc.stderr, proc.stderr
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_not_a_git_checkout_exits_two(repo_copy, tmp_path):
    proc = report("--base", "main", "--repo", repo_copy, "--out", tmp_path / "out")
    assert proc.returncode == 2 and "is not a git checkout" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_gpus_per_node_follow_the_recorded_pod_events(tmp_path):
    """The nodes' panel: each node's GPUs step with the recorded occupancy, 0 before and after."""
    from harness.report import plots
    from harness.report.recorder import Recording

    rec = Recording(occupancy=[(1.0, {"aks-gpupool-0": Decimal(4)}), (2.0, {"aks-gpupool-0": Decimal(8)}),
                               (3.0, {"aks-gpupool-0": Decimal(4), "aks-gpupool-1": Decimal(2)}), (4.0, {})], end=5.0)
    times, series = plots.node_series(rec)
    assert times == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert series == {"aks-gpupool-0": [0, 4, 8, 4, 0, 0], "aks-gpupool-1": [0, 0, 0, 2, 0, 0]}
    with_nodes = plots.timeline(rec, [], "with nodes", tmp_path / "nodes.png")
    without = plots.timeline(Recording(end=5.0), [], "without", tmp_path / "plain.png")
    from PIL import Image  # matplotlib's own dependency

    assert Image.open(with_nodes).height > Image.open(without).height  # the second panel is there


PROD_PATCH = """\
patches:
  - target: {kind: ClusterQueue, name: team-a-cq}
    patch: |-
      - {op: replace, path: /spec/resourceGroups/1/flavors/0/resources/0/nominalQuota, value: "6"}
"""


def _gpus(objs: list[dict], cq: str) -> str:
    spec = next(o for o in objs if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == cq)["spec"]
    return next(r["nominalQuota"] for g in spec["resourceGroups"] for f in g["flavors"] for r in f["resources"] if r["name"] == "nvidia.com/gpu")


def test_scenarios_run_on_the_cluster_queue_layer_with_its_own_patches(base_tree, repo_copy):
    """A quota the cluster sets in its own queues/ is what the scenario runs on, and what the layout line names."""
    from harness.report.scenarios import queue_layer

    k = repo_copy / "clusters/prod-eastus2/queues/kustomization.yaml"
    k.write_text(k.read_text() + PROD_PATCH)
    head = quotas.load_tree(repo_copy, "head")
    team = next(s for s in SCENARIOS if s.name == "team-queues")
    layer = queue_layer(repo_copy, "head", team, head.renders)
    assert _gpus(layer.objects, "team-a-cq") == "6" and _gpus(layer.objects, "team-b-cq") == "4"
    assert layer.ran_on == ("prod-eastus2's queue layer (`clusters/prod-eastus2/queues`: `overlays/team-queues`, "
                            "`components/gpu-sku/standard-nd96amsr-a100-v4`, `clusters/prod-eastus2/queues/kustomization.yaml patches`)")
    assert _gpus(queue_layer(REPO_ROOT, "base", team, base_tree.renders).objects, "team-a-cq") == "4"
    prod = next(d for d in quotas.diff(base_tree, head) if d.name == "prod-eastus2")
    assert prod.changed
    md = "\n".join(markdown.quota_section(prod))
    assert ("quota components and the cluster's own patches (in the order they apply, the last wins): "
            "**`components/gpu-sku/standard-nd96amsr-a100-v4`, `clusters/prod-eastus2/queues/kustomization.yaml patches`** "
            "(was `components/gpu-sku/standard-nd96amsr-a100-v4`)") in md, md


def test_a_cluster_that_switched_layout_runs_the_other_scenario_on_its_layer(repo_copy):
    from harness.report.scenarios import queue_layer

    k = repo_copy / "clusters/prod-eastus2/queues/kustomization.yaml"
    k.write_text(k.read_text().replace("../../../overlays/team-queues", "../../../overlays/single-queue"))
    renders = quotas.load_tree(repo_copy, "head").renders
    single, team = (next(s for s in SCENARIOS if s.name == n) for n in ("single-queue", "team-queues"))
    assert queue_layer(repo_copy, "head", single, renders).ran_on.startswith("prod-eastus2's queue layer (`clusters/prod-eastus2/queues`: "
                                                                            "`overlays/single-queue`")
    bare = queue_layer(repo_copy, "head", team, renders)
    assert bare.ran_on == "the bare `overlays/team-queues` (prod-eastus2 runs `overlays/single-queue` on this ref)"
    assert {o["metadata"]["name"] for o in bare.objects if o["kind"] == "ClusterQueue"} == {"team-a-cq", "team-b-cq"}


def test_each_ref_submits_its_own_samples(repo_copy):
    from harness.kueue.queues import rayjob
    from harness.report.scenarios import asks

    d = repo_copy / "workloads/defaults.yaml"
    d.write_text(d.read_text().replace('NUM_WORKERS: "4"', 'NUM_WORKERS: "2"'))
    assert asks(rayjob("llm-training", "train-1", "default", root=REPO_ROOT)) == "68 CPU, 528Gi memory, 4 GPU"
    assert asks(rayjob("llm-training", "train-1", "default", root=repo_copy)) == "36 CPU, 272Gi memory, 2 GPU"
    assert not any(re.search(r"\d+ [CG]PU", step.title) for sc in SCENARIOS for step in sc.steps if "sample" in step.title), \
        "a step title states a sample's size; each ref's sample has its own (ScenarioResult.asks)"


def test_a_job_that_never_ran_is_not_finished_and_the_header_says_where_it_ran(base_tree):
    sc = next(s for s in SCENARIOS if s.name == "team-queues")
    q = {"a-1": "team-a", "a-2": "team-a", "b-1": "team-b"}
    pending = ("pending", "couldn't assign flavors: insufficient unused quota for nvidia.com/gpu in flavor gpu, 4 more needed")
    step = StepResult("3", 0.0, 1.0, {"a-1": ("admitted", ""), "a-2": ("admitted", ""), "b-1": pending}, q, [], [], {},
                      [("b-1", "Kueue never admitted it, so it never ran")])
    assert "b-1 not finished: Kueue never admitted it, so it never ran" in step.outcome()
    head = ScenarioResult("team-queues", "head", sc.layout, steps=[step], ran_on="the bare `overlays/team-queues`",
                          asks={"a-1": "34 CPU, 264Gi memory, 4 GPU"})
    data = markdown.ReportData("repo", "main", "a" * 40, "working tree", "b" * 40, quotas.diff(base_tree, base_tree), [sc],
                               {("team-queues", "head"): head}, plane="the cluster of --kubeconfig /k")
    md = markdown.render(data)
    assert "Scenarios ran for real on the cluster of --kubeconfig /k" in md and "embedded" not in md
    assert "- head: ran on the bare `overlays/team-queues`; the jobs ask for a-1: 34 CPU, 264Gi memory, 4 GPU." in md


def test_autoscaling_pool_is_written_as_the_gate_writes_it(base_tree, repo_copy):
    """The headroom's pools say an autoscaling GPU pool's min-max and that it is counted (and the scenarios run) at
    max_count, in the gate's own words (Pool.size), not a fixed "2 x" pool."""
    tf = repo_copy / "terraform/node_pools.tf"
    text = tf.read_text()
    assert text.count("  node_count              = var.gpu_node_count\n") == 1, "node_pools.tf changed shape; update this test"
    tf.write_text(text.replace("  node_count              = var.gpu_node_count\n",
                               "  auto_scaling_enabled    = true\n  min_count               = 0\n  max_count               = 2\n"))
    prod = {d.name: d for d in quotas.diff(base_tree, quotas.load_tree(repo_copy, "head"))}["prod-eastus2"]
    md = "\n".join(markdown.quota_section(prod))
    row = next(line for line in md.splitlines() if line.startswith("| gpu | nvidia.com/gpu |"))
    assert "gpupool 0-2 x Standard_ND96amsr_A100_v4, autoscaling (run at max_count)" in row, row
    assert "**`16`** (was `8`)" in row, row  # capacity at max_count


# -- queue roles bound per ref (a renamed queue is the same role), and a layout switch headline -------------------------
def _edit(root: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    path = root / rel
    text = path.read_text()
    assert text.count(old) == count, f"{rel} changed shape; update this test"
    path.write_text(text.replace(old, new))


def test_a_renamed_local_queue_the_samples_follow_is_the_same_role(base_tree, repo_copy):
    """LocalQueue team-a renamed research, samples.yaml following (gate clean): the scenario submits team A's jobs to
    research, its ClusterQueue is still team-a-cq, and the layer line says so; no "team A never gets a GPU"."""
    from harness.report.scenarios import queue_layer

    _edit(repo_copy, "overlays/team-queues/team-a.yaml", "\n  name: team-a\n", "\n  name: research\n")
    _edit(repo_copy, "clusters/prod-eastus2/samples.yaml", "queue: team-a", "queue: research", count=2)
    team = next(s for s in SCENARIOS if s.name == "team-queues")
    layer = queue_layer(repo_copy, "head", team, quotas.load_tree(repo_copy, "head").renders)
    assert not layer.not_applicable
    assert layer.bind == {"team-a": "research", "team-a-cq": "team-a-cq", "team-b": "team-b", "team-b-cq": "team-b-cq"}
    assert layer.ran_on.endswith("; LocalQueue team-a is `research` here (where the samples file sends llm-training)"), layer.ran_on
    assert queue_layer(REPO_ROOT, "base", team, base_tree.renders).bind["team-a"] == "team-a"


def test_a_renamed_cluster_queue_is_the_same_role_and_outcomes_compare_equal(base_tree, repo_copy):
    """team-a-cq renamed research-cq (its LocalQueue following): the usage Kueue reports for research-cq is team-a-cq's
    role, so the outcome and the Borrows expectation are those of base."""
    from harness.report.scenarios import queue_layer

    _edit(repo_copy, "overlays/team-queues/team-a.yaml", "team-a-cq", "research-cq", count=2)
    team = next(s for s in SCENARIOS if s.name == "team-queues")
    layer = queue_layer(repo_copy, "head", team, quotas.load_tree(repo_copy, "head").renders)
    assert layer.bind["team-a-cq"] == "research-cq" and layer.bind["team-a"] == "team-a" and not layer.not_applicable
    assert "ClusterQueue team-a-cq is `research-cq` here" in layer.ran_on
    q = {"a-1": "team-a", "a-2": "team-a"}
    step = _step("1", {"a-1": ("admitted", ""), "a-2": ("admitted", "")}, q, usage={"team-a-cq": (Decimal(8), Decimal(4))})
    assert team.check([step]) == []  # usage is keyed by role (ScenarioRunner._step_result maps research-cq back)


def test_a_ref_without_the_scenario_queues_is_not_applicable_with_why(repo_copy):
    """The LocalQueue renamed and the samples not following (nor one LocalQueue left on team-a-cq): n/a with why, not a
    failing expectation."""
    from harness.report.scenarios import ScenarioRunner, queue_layer

    _edit(repo_copy, "overlays/team-queues/team-a.yaml", "team-a-cq", "research-cq", count=2)
    _edit(repo_copy, "overlays/team-queues/team-a.yaml", "\n  name: team-a\n", "\n  name: research\n")
    team = next(s for s in SCENARIOS if s.name == "team-queues")
    layer = queue_layer(repo_copy, "head", team, quotas.load_tree(repo_copy, "head").renders)
    assert layer.not_applicable == "LocalQueue team-a is not in this ref's layer and the samples file sends llm-training to none of its LocalQueues"
    result = ScenarioRunner.run(None, team, repo_copy, "head", layer)  # returns before any cluster work
    assert result.verdict() == f"n/a: {layer.not_applicable}" and not result.passed and not result.steps


def test_a_layout_switch_heads_the_report_with_the_cluster_base_layout_against_its_head_layout(base_tree, repo_copy):
    """prod-eastus2 switches team-queues -> single-queue: each scenario compared with its bare overlay shows no change, and the
    headline compares what prod-eastus2's base layout did on base with what its head layout does on head."""
    _edit(repo_copy, "clusters/prod-eastus2/queues/kustomization.yaml", "  - ../../../overlays/team-queues", "  - ../../../overlays/single-queue")
    single, team = (next(s for s in SCENARIOS if s.name == n) for n in ("single-queue", "team-queues"))
    q = {"a-1": "team-a", "a-2": "team-a"}
    team_run = [_step("team A submits a-1 and a-2", {"a-1": ("admitted", ""), "a-2": ("admitted", "")}, q,
                      usage={"team-a-cq": (Decimal(8), Decimal(4))})]
    single_run = [_step("submit train-1", {"train-1": ("admitted", "")}, {"train-1": "default"})]
    results = {("team-queues", "base"): ScenarioResult("team-queues", "base", team.layout, steps=team_run, on_cluster=True),
               ("team-queues", "head"): ScenarioResult("team-queues", "head", team.layout, steps=team_run),
               ("single-queue", "base"): ScenarioResult("single-queue", "base", single.layout, steps=single_run),
               ("single-queue", "head"): ScenarioResult("single-queue", "head", single.layout, steps=single_run, on_cluster=True)}
    data = markdown.ReportData("repo", "main", "a" * 40, "working tree", "b" * 40,
                               quotas.diff(base_tree, quotas.load_tree(repo_copy, "head")), [single, team], results)
    assert data.changed_scenarios() == []
    md = markdown.render(data)
    head = md[md.index("## Scenario outcomes that changed"):md.index("## Quotas per cluster")]
    assert "No scenario outcome changed." not in head, head
    assert "- **`prod-eastus2` switches its queue layout `overlays/team-queues` → `overlays/single-queue`**" in head, head
    assert ("  - base, `overlays/team-queues` (team-queues borrow and reclaim, ✅ holds): 1. team A submits a-1 and a-2: "
            "team-a: 2 admitted, team-a-cq holds 8 GPU (4 borrowed)") in head, head
    assert ("  - head, `overlays/single-queue` (single-queue back-pressure: one job runs, the next waits, ✅ holds): "
            "1. submit train-1: default: 1 admitted") in head, head


UNTOLERATED = ("0/3 nodes are available: 3 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/3 nodes are available: "
               "3 Preemption is not helpful for scheduling.")


def _pod(name: str, node: str | None = None, message: str = UNTOLERATED) -> dict:
    pod = {"metadata": {"name": name, "uid": name, "labels": {"kueue.x-k8s.io/cluster-queue-name": "team-a-cq"}}, "spec": {}, "status": {}}
    if node:
        pod["spec"]["nodeName"] = node
    else:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
    return pod


def test_an_admitted_job_whose_pods_are_not_bound_does_not_run_and_the_outcome_changes(base_tree):
    """O#1: the placement (harness.kueue.placement, the invariant checker's own test of a pod) is part of the
    outcome compared between refs and of the expectations: admitted but Pending is not "admitted"."""
    from harness.kueue import not_placed

    job = {"metadata": {"name": "a-1", "uid": "j1"}, "spec": {}, "status": {"jobDeploymentStatus": "Initializing"}}
    cluster = {"metadata": {"name": "a-1-raycluster-x", "ownerReferences": [{"uid": "j1"}]}, "status": {}}
    pods = [_pod("a-1-raycluster-x-head-0"), _pod("a-1-raycluster-x-gpu-workers-0"), _pod("a-10-raycluster-y-head-0")]
    why = not_placed(job, [cluster], pods)
    assert why == "2 of 2 pods Pending (0/3 nodes are available: 3 node(s) had untolerated taint(s))", why
    running = [_pod("a-1-raycluster-x-head-0", "aks-systempool-0"), _pod("a-1-raycluster-x-gpu-workers-0", "aks-gpupool-0")]
    assert not_placed(job, [cluster], running) == "its RayCluster is not ready (2 pods bound)"
    assert not_placed(job, [{**cluster, "status": {"state": "ready"}}], running) == ""
    refused = {**job, "status": {"jobDeploymentStatus": "ValidationFailed", "message": "SidecarMode doesn't support SubmitterPodTemplate"}}
    assert not_placed(refused, [], []) == "KubeRay refused it (ValidationFailed: SidecarMode doesn't support SubmitterPodTemplate)"

    sc = next(s for s in SCENARIOS if s.name == "team-queues")
    q = {"a-1": "team-a", "a-2": "team-a"}
    usage = {"team-a-cq": (Decimal(8), Decimal(4))}
    base = ScenarioResult("team-queues", "base", sc.layout, steps=[_step("1", {j: ("admitted", "") for j in q}, q, usage=usage)])
    head = ScenarioResult("team-queues", "head", sc.layout, steps=[_step("1", {"a-1": ("admitted", why), "a-2": ("admitted", why)}, q,
                                                                          usage=usage)])
    assert head.steps[0].outcome()[0] == f"team-a: 2 admitted but not running: {why}"
    failures = sc.check(head.steps)
    assert f"1: a-1 should {sc.steps[0].expect[0].should}, is admitted but does not run: {why}" in failures, failures
    data = markdown.ReportData("repo", "main", "a" * 40, "working tree", "b" * 40, quotas.diff(base_tree, base_tree), [sc],
                               {("team-queues", "base"): base, ("team-queues", "head"): head})
    assert data.changed_scenarios() == [sc]
    assert "outcome differs at step 1" in markdown.render(data)
