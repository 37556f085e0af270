"""The pieces of `make rehearse` that need no cluster: JUnit outcomes, schema and Configuration
comparison, and the report's order (differences first)."""
from __future__ import annotations

import json
import threading

import pytest
import yaml

from harness.report import rehearsal_markdown, rehearsal_plan, step_decisions
from harness.core import releases, versions
from harness.report.rehearsal import compare_tests, junit_id, junit_outcomes, newest_candidate
from harness.report.upgrade_diff import config_changes, flatten_schema, object_paths, schema_changes

pytestmark = pytest.mark.static


def test_junit_outcomes_read_each_test(tmp_path):
    junit = tmp_path / "r.xml"
    junit.write_text("""<?xml version="1.0"?><testsuites><testsuite name="pytest">
<testcase classname="tests.integration.test_a" name="test_ok" time="1"/>
<testcase classname="tests.integration.test_a" name="test_bad" time="1"><failure message="assert 1 == 2">trace</failure></testcase>
<testcase classname="tests.integration.test_a" name="test_skip" time="0"><skipped message="no GPU"/></testcase>
</testsuite></testsuites>""")
    out = junit_outcomes(junit)
    assert out["tests.integration.test_a::test_ok"] == {"outcome": "passed", "message": ""}
    assert out["tests.integration.test_a::test_bad"] == {"outcome": "failed", "message": "assert 1 == 2"}
    assert out["tests.integration.test_a::test_skip"]["outcome"] == "skipped"
    assert junit_outcomes(tmp_path / "missing.xml") == {}
    # A release change's tests are found under the ids junit_outcomes gives them.
    assert junit_id("tests/integration/test_a.py::test_bad") in out
    assert all(junit_id(t).startswith("tests.") and "/" not in junit_id(t) for c in releases.CHANGES for t in c.tests)


def test_differences_come_first_and_a_skip_is_not_a_pass():
    base = {"integration": {"t::a": {"outcome": "passed", "message": ""}, "t::b": {"outcome": "passed", "message": ""}}}
    cand = {"integration": {"t::a": {"outcome": "passed", "message": ""}, "t::b": {"outcome": "skipped", "message": "x"}}}
    tests = compare_tests(base, cand)
    assert [t["test"] for t in tests] == ["t::b", "t::a"] and tests[0]["differs"] and not tests[1]["differs"]


def test_schema_changes_touch_only_fields_the_repository_sets():
    old = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "quota": {"type": "string"}, "unused": {"type": "string"}}}}}
    new = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "quota": {"type": "string", "pattern": "^[0-9]+$"}, "unused": {"type": "integer"}, "added": {"type": "string"}}}}}
    changes = {c["path"]: c for c in schema_changes(flatten_schema(old), flatten_schema(new), object_paths({"spec": {"quota": "4"}}))}
    assert set(changes) == {"spec.quota", "spec.unused", "spec.added"}
    assert changes["spec.quota"]["touches"] and changes["spec.quota"]["change"] == "validation changed"
    assert not changes["spec.unused"]["touches"] and not changes["spec.added"]["touches"]
    assert changes["spec.added"]["change"] == "field added"


def test_configuration_changes_name_each_value():
    old = {"clientConnection": {"qps": 20, "burst": 30}, "integrations": {"frameworks": ["batch/job"]}}
    new = {"clientConnection": {"qps": 300, "burst": 30}, "integrations": {"frameworks": ["batch/job"]},
           "waitForPodsReady": {"timeout": "30m0s"}}
    assert config_changes(old, new) == [{"path": "clientConnection.qps", "old": 20, "new": 300},
                                        {"path": "waitForPodsReady.timeout", "old": None, "new": "30m0s"}]


def test_markdown_lists_differences_first():
    side = {"versions": {"kueue": "v0.17.1"}, "timings": {"tools": 1, "gate": 2, "integration": 3},
            "exit_codes": {"tools": 0, "gate": 0, "integration": 0}}
    tests = compare_tests({"integration": {"t::same": {"outcome": "passed", "message": ""},
                                           "t::moved": {"outcome": "passed", "message": ""}}},
                          {"integration": {"t::same": {"outcome": "passed", "message": ""},
                                           "t::moved": {"outcome": "failed", "message": "boom"}}})
    report = {"baseline": side, "candidate": {**side, "versions": {"kueue": "v0.18.3"}}, "suites": ["integration"], "seconds": 6,
              "comparison": {"tests": tests, "gate": {"only_baseline": [], "only_candidate": []},
                             "crds": {"kueue": {"touching": [], "other": []}},
                             "configuration": {"defaults": [], "production": []}, "release_changes": []}}
    text = rehearsal_markdown.render(report)
    assert "v0.17.1 → kueue v0.18.3" in text and "1 of 2 test(s) differ" in text
    assert text.index("t::moved") < text.index("t::same") and "**failed**: boom" in text


def test_default_candidates_are_the_newest():
    assert newest_candidate("kueue") == "v0.19.2" and newest_candidate("kuberay") == "v1.6.2"


def test_validate_refuses_a_kueue_version_versions_yaml_does_not_list(capsys, monkeypatch):
    from harness.core import versions
    from harness.gate.validate import main

    monkeypatch.delenv(versions.SELECT_ENV, raising=False)
    assert main([str(versions.REPO_ROOT), "--kueue", "v0.1.0", "--list-rules"]) == 2
    assert "neither the pin nor a candidate" in capsys.readouterr().err


def test_a_refused_version_names_the_flag_and_the_checked_repository_s_candidate(repo_copy, capsys, monkeypatch):
    """--kuberay V refused: the flag (not $RAY_KUEUE_VERSIONS, which the user did not set) and the gate's versions.yaml
    are named, and so is the checked repository's versions.yaml when it lists V (this gate cannot build it)."""
    import yaml
    from harness.core import versions
    from harness.gate.validate import main

    monkeypatch.setenv(versions.SELECT_ENV, "")  # recorded, so that the selection main() makes below is undone after the test
    monkeypatch.delenv(versions.SELECT_ENV)
    pins = yaml.safe_load((repo_copy / "versions.yaml").read_text())
    pins["kuberay"]["candidates"].append({"version": "v1.6.3", "chart": "1.6.3"})
    (repo_copy / "versions.yaml").write_text(yaml.safe_dump(pins))
    for flag, listed in (("v1.6.3", True), ("v1.9.9", False)):
        assert main([str(repo_copy), "--kuberay", flag, "--list-rules"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"validate: --kuberay: kuberay {flag} is neither the pin nor a candidate in the gate's "
                              f"versions.yaml ({versions.VERSIONS_FILE}") and "$RAY" not in err, err
        assert (f"{repo_copy / 'versions.yaml'} lists it" in err) is listed, err
    assert main([str(repo_copy), "--kuberay", "1.6.2", "--list-rules"]) == 0 and versions.selection() == {"kuberay": "v1.6.2"}


def _versions(kueue="v0.17.1", kueue_candidates=("v0.18.3", "v0.19.2"), kuberay="v1.6.1", kuberay_candidates=("v1.6.2",)):
    return {"kueue": {"version": kueue, "candidates": [{"version": v, "chart": v[1:]} for v in kueue_candidates]},
            "kuberay": {"version": kuberay, "candidates": [{"version": v, "chart": v[1:]} for v in kuberay_candidates]}}


def test_a_pull_request_rehearses_what_it_changes_in_versions_yaml():
    base = _versions()
    assert rehearsal_plan.pull_request(base, _versions()) == []  # a comment or another tool's pin: nothing to rehearse
    # A promotion is rehearsed from the base, where the old pin is still production and the new one a candidate.
    promoted = _versions(kueue="v0.18.3", kueue_candidates=("v0.19.2",))
    assert rehearsal_plan.pull_request(base, promoted) == [{"ref": "base", "kueue": "v0.18.3", "kuberay": "v1.6.1"}]
    both = _versions(kueue="v0.18.3", kueue_candidates=("v0.19.2",), kuberay="v1.6.2", kuberay_candidates=())
    assert rehearsal_plan.pull_request(base, both) == [{"ref": "base", "kueue": "v0.18.3", "kuberay": "v1.6.2"}]
    # An added candidate alone, against the pins, from the head.
    added = _versions(kueue_candidates=("v0.18.3", "v0.19.2", "v0.19.3"))
    assert rehearsal_plan.pull_request(base, added) == [{"ref": "head", "kueue": "v0.19.3", "kuberay": "v1.6.1"}]
    added_ray = _versions(kuberay_candidates=("v1.6.2", "v1.7.0"))
    assert rehearsal_plan.pull_request(base, added_ray) == [{"ref": "head", "kueue": "v0.17.1", "kuberay": "v1.7.0"}]


def test_a_pin_moved_back_is_a_rollback_that_rehearses_nothing_with_a_notice(tmp_path, capsys):
    """P.md #7: rolling Kueue back from v0.17.1 to v0.17.0 after a bad upgrade is no promotion: candidates are newer than
    the pin, so there is no upgrade to rehearse. The plan is empty (the workflow's rehearse job is skipped), exit 0, and
    the notice says why; a candidate the same pull request adds is still rehearsed."""
    base, back = _versions(), _versions(kueue="v0.17.0")
    assert rehearsal_plan.pull_request(base, back) == []
    assert set(rehearsal_plan.rollbacks(base, back)) == {"kueue"}
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(base))
    new.write_text(yaml.safe_dump(_versions(kueue="v0.17.0", kuberay_candidates=("v1.6.2", "v1.7.0"))))
    assert rehearsal_plan.main(["--base", str(old), "--head", str(new)]) == 0
    out = capsys.readouterr()
    assert "moves back from v0.17.1 to v0.17.0 (a rollback)" in out.err, out.err
    assert json.loads(out.out.removeprefix("matrix=")) == {"include": [{"ref": "head", "kueue": "v0.17.0", "kuberay": "v1.7.0"}]}


def test_a_pin_that_was_never_a_candidate_is_refused_with_the_way_forward(tmp_path, capsys):
    with pytest.raises(rehearsal_plan.PlanError, match="add it as a candidate first"):
        rehearsal_plan.pull_request(_versions(), _versions(kueue="v0.20.0"))
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(_versions()))
    new.write_text(yaml.safe_dump(_versions(kueue="v0.20.0")))
    assert rehearsal_plan.main(["--base", str(old), "--head", str(new)]) == 2
    assert "v0.20.0" in capsys.readouterr().err
    new.write_text("kueue: [")
    assert rehearsal_plan.main(["--base", str(old), "--head", str(new)]) == 2
    assert "cannot read versions.yaml" in capsys.readouterr().err


def test_the_schedule_rehearses_every_kueue_candidate_with_the_newest_kuberay(capsys):
    assert rehearsal_plan.main([]) == 0
    matrix = json.loads(capsys.readouterr().out.removeprefix("matrix="))
    assert matrix["include"] == [{"ref": "head", "kueue": c["version"], "kuberay": newest_candidate("kuberay")}
                                 for c in versions.candidates("kueue")]
    assert rehearsal_plan.main(["--kueue", "v9.9.9"]) == 2  # not in versions.yaml


def test_scenario_steps_compare_step_by_step_with_differences_first():
    def run(*outcomes):
        return [{"scenario": "team-queues", "verdict": "holds",
                 "steps": [{"title": f"step {i}", "outcome": o} for i, o in enumerate(outcomes)]}]
    base = run(["a: 2 admitted"], ["a: 1 admitted, 1 pending (insufficient quota)"], ["b: 1 admitted"])
    cand = run(["a: 2 admitted"], ["a: 2 admitted"])  # the candidate stopped a step earlier
    rows = step_decisions.compare(base, cand)
    assert [(r["step"], r["differs"]) for r in rows] == [("step 1", True), ("step 2", True), ("step 0", False)]
    assert rows[1]["candidate"] is None
    md = rehearsal_markdown.render({"baseline": {"versions": {}, "timings": {}, "exit_codes": {}},
                                    "candidate": {"versions": {}, "timings": {}, "exit_codes": {}}, "suites": [], "seconds": 1,
                                    "comparison": {"tests": [], "scenario_steps": rows, "gate": {"only_candidate": [], "only_baseline": []},
                                                   "crds": {}, "configuration": {"defaults": [], "production": []}, "release_changes": []}})
    section = md.split("## Kueue's decisions per scenario step")[1].split("##")[0]
    lines = [line for line in section.splitlines() if line.startswith("| team-queues")]
    assert "⚠ step 1" in lines[0] and "1 pending (insufficient quota)" in lines[0] and "(not reached)" in lines[1], section
    assert lines[2].endswith("| same |"), section


def test_both_sides_run_at_once_and_a_saved_side_is_reused(monkeypatch, tmp_path):
    """--jobs 2: the two sides run concurrently (a barrier only both can pass); a side whose key
    matches a saved run is reused and not run; --jobs 1 runs them one after the other."""
    from harness.report import rehearsal

    choices = {"candidate": {"kueue": "v2"}, "baseline": {"kueue": "v1"}}
    barrier, ran, built = threading.Barrier(2, timeout=20), [], []
    monkeypatch.setattr(rehearsal, "build_tools", lambda label, *_: built.append(label) or 1.5)

    def side(label, choice, suites, out, extra_env, tools_seconds, steps):
        assert extra_env == rehearsal.CONCURRENT_ENV  # the decision bound raised for two sides at once
        assert tools_seconds == 1.5 and built == ["candidate", "baseline"]  # both built before either side runs
        ran.append(label)
        barrier.wait()  # BrokenBarrierError after 20 s unless the other side runs at the same time
        return {"label": label}

    monkeypatch.setattr(rehearsal, "rehearse_side", side)
    monkeypatch.setattr(rehearsal, "saved_side", lambda label, choice, suites, out: None)
    assert rehearsal.run_sides(choices, ["integration"], tmp_path, jobs=2) == {"candidate": {"label": "candidate"},
                                                                                "baseline": {"label": "baseline"}}
    monkeypatch.setattr(rehearsal, "saved_side", lambda label, *_: {"finished": "then", "label": "saved"} if label == "baseline" else None)
    ran.clear()
    monkeypatch.setattr(rehearsal, "rehearse_side", lambda label, *_: ran.append(label) or {"label": label})
    sides = rehearsal.run_sides(choices, ["integration"], tmp_path, jobs=2)
    assert ran == ["candidate"] and sides["baseline"] == {"finished": "then", "label": "saved", "reused": True}
    alone = threading.Barrier(2, timeout=1)  # passed only by two sides at once
    monkeypatch.setattr(rehearsal, "saved_side", lambda *_: None)
    monkeypatch.setattr(rehearsal, "rehearse_side", lambda label, *_: alone.wait())
    with pytest.raises(threading.BrokenBarrierError):  # one at a time: the first side waits alone
        rehearsal.run_sides(choices, ["integration"], tmp_path, jobs=1)


def test_rehearse_names_the_version_as_the_user_typed_it(capsys, monkeypatch):
    """`make rehearse KUEUE=v9.9.9` is refused naming KUEUE=, not $RAY_KUEUE_VERSIONS (which the user never set);
    a version without its leading v is the listed one."""
    from harness.core import versions
    from harness.report.rehearsal import main

    monkeypatch.delenv(versions.SELECT_ENV, raising=False)
    assert main(["--kueue", "v9.9.9", "--out", "/nonexistent/rehearsal"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rehearse: KUEUE=v9.9.9 (--kueue): kueue v9.9.9 is neither the pin nor a candidate") and "$RAY" not in err, err
    candidate = newest_candidate("kuberay")
    assert versions.listed_version("kuberay", candidate.removeprefix("v"), "KUBERAY=") == candidate
    assert versions.parse_selection(f"kuberay={candidate.removeprefix('v')}") == {"kuberay": candidate}


class FakeSteps:
    """harness.report.rehearsal_steps.Steps with each step's exit code given, nothing run: (label, what) -> rc."""

    def __init__(self, codes: dict[tuple[str, str], int], log_text: str = ""):
        from harness.report.rehearsal_steps import Steps

        self.real, self.codes, self.log_text, self.ran = Steps(), codes, log_text, []

    def run(self, cmd, env, log, label):
        from harness.report.rehearsal_steps import StepInterrupted

        if self.real.stopping.is_set():  # as Steps.run: no step starts once the rehearsal stops
            raise StepInterrupted(f"{label}: stopped")
        what = next((w for w in ("toolchain.builds", "gate.validate", "step_decisions", "pytest") if w in " ".join(cmd)), "?")
        self.ran.append((label, what))
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(self.log_text if what == "toolchain.builds" else "")
        return self.codes.get((label, what), 0), 0.1

    def ended(self, *args, **kwargs):
        return self.real.ended(*args, **kwargs)

    def stop(self):
        self.real.stop()


REFUSED = ("go: downloading sigs.k8s.io/kueue v0.18.0\nbuild-tools: tool build failed: building kueue (kueue v0.18.0) failed:\n"
           "go: sigs.k8s.io/kueue@v0.18.0: reading https://proxy.golang.org/sigs.k8s.io/kueue/@v/v0.18.0.zip: 403 Forbidden\n"
           "\tserver response: This module version is not available.\n")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_candidate_that_cannot_be_built_stops_the_rehearsal_before_any_side_runs(tmp_path, jobs):
    from harness.report.rehearsal import RehearsalError, run_sides

    steps = FakeSteps({("candidate", "toolchain.builds"): 1}, REFUSED)
    with pytest.raises(RehearsalError) as err:
        run_sides({"candidate": {"kueue": "v0.18.0", "kuberay": "v1.6.1"}, "baseline": {"kueue": "v0.17.1", "kuberay": "v1.6.1"}},
                  ["integration"], tmp_path, fresh=True, jobs=jobs, steps=steps)
    assert steps.ran == [("candidate", "toolchain.builds")]  # not the baseline's build, gate or suite
    assert "the Go module proxy refuses sigs.k8s.io/kueue v0.18.0 (403 Forbidden)" in str(err.value)
    assert "This module version is not available" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("step, rc", [("pytest", 2), ("pytest", -2), ("gate.validate", -15), ("step_decisions", -9)])
def test_a_side_whose_step_was_interrupted_stops_there_and_saves_nothing(tmp_path, step, rc):
    from harness.report.rehearsal import run_sides
    from harness.report.rehearsal_steps import StepInterrupted

    steps = FakeSteps({("candidate", step): rc})
    choices = {"candidate": {"kueue": "v0.18.3", "kuberay": "v1.6.1"}, "baseline": {"kueue": "v0.17.1", "kuberay": "v1.6.1"}}
    with pytest.raises(StepInterrupted, match="did not run to its end.*nothing saved for candidate"):
        run_sides(choices, ["integration", "flux"], tmp_path, fresh=True, jobs=1, steps=steps)
    ran = [what for label, what in steps.ran if label == "candidate"]
    assert ran[-1] == step and ran.count("pytest") <= 1  # stopped at that step: not the next suite
    assert not [what for label, what in steps.ran if label == "baseline" and what != "toolchain.builds"]  # never started
    assert not list(tmp_path.rglob("result.json")) and steps.real.stopping.is_set()


def test_a_side_whose_every_step_ran_is_saved_and_reused(tmp_path):
    from harness.report.rehearsal import run_sides, saved_side

    choices = {"candidate": {"kueue": "v0.18.3", "kuberay": "v1.6.1"}, "baseline": {"kueue": "v0.17.1", "kuberay": "v1.6.1"}}
    steps = FakeSteps({("candidate", "gate.validate"): 1, ("baseline", "pytest"): 1})  # findings, a failed test: ran to the end
    sides = run_sides(choices, ["integration"], tmp_path, fresh=True, jobs=2, steps=steps)
    assert sides["candidate"]["exit_codes"] == {"tools": 0, "gate": 1, "scenarios": 0, "integration": 0}
    assert all(saved_side(label, choice, ["integration"], tmp_path) for label, choice in choices.items())
