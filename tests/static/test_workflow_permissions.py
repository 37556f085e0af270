"""The pull-request workflows are safe on forks (issue 18, item 2): least privilege per job, the
code of a pull request runs only with a read-only token, and the jobs with write permission
(pull-request-results.yml, started by workflow_run) never check out or run that code, post only
artefacts the pull-request workflow uploads, and hold only what their actions need."""
from __future__ import annotations

import copy
import re
import tomllib

import pytest
import yaml

from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
# The write permission each action needs; any other write permission is too much.
NEEDS = {
    "marocchino/sticky-pull-request-comment": {"pull-requests"},
    "EnricoMi/publish-unit-test-result-action": {"checks", "pull-requests"},
    "github/codeql-action/upload-sarif": {"security-events"},
}
RUNS_CODE = ("actions/checkout", "actions/setup-python", "actions/setup-go")


def _load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as a boolean
    return doc


def _action(step: dict) -> str:
    return step.get("uses", "").split("@", 1)[0]


def _writes(job: dict) -> set[str]:
    return {k for k, v in (job.get("permissions") or {}).items() if v == "write"}


def problems(pr: dict, results: dict) -> list[str]:
    out = []
    for name, doc in (("pull-request", pr), ("results", results)):
        if doc.get("permissions") != {"contents": "read"}:
            out.append(f"{name}: workflow-level permissions must be contents: read, not {doc.get('permissions')}")
        out += [f"{name}/{job}: no permissions of its own" for job, j in doc["jobs"].items() if "permissions" not in j]
    if "pull_request" not in pr["on"] or "pull_request_target" in pr["on"]:
        out.append("pull-request: must run on pull_request (never pull_request_target)")
    for job, j in pr["jobs"].items():
        if _writes(j):
            out.append(f"pull-request/{job}: runs the pull request's code with write permission {sorted(_writes(j))}")
        posting = [_action(s) for s in j.get("steps", []) if _action(s) in NEEDS]
        out += [f"pull-request/{job}: {a} needs a write token; it belongs in the results workflow" for a in posting]
    if set(results["on"]) != {"workflow_run"} or results["on"]["workflow_run"].get("workflows") != [pr["name"]]:
        out.append(f"results: must run only on workflow_run of {pr['name']!r}")
    uploaded = {s["with"]["name"] for j in pr["jobs"].values() for s in j.get("steps", [])
                if _action(s) == "actions/upload-artifact"}
    sarif_jobs = []
    for job, j in results["jobs"].items():
        needed = set().union(*(NEEDS.get(_action(s), set()) for s in j.get("steps", [])))
        if _writes(j) - needed:
            out.append(f"results/{job}: write permission {sorted(_writes(j) - needed)} that none of its actions needs")
        if any(_action(s) == "github/codeql-action/upload-sarif" for s in j.get("steps", [])):
            sarif_jobs.append(job)
        for s in j.get("steps", []):
            if _action(s) in RUNS_CODE:
                out.append(f"results/{job}: {_action(s)}: the results workflow must not check out or run the pull request's code")
            if "${{" in s.get("run", ""):
                out.append(f"results/{job}: an expression inside `run:` (pass it through env)")
            if _action(s) == "actions/download-artifact":
                name = s["with"].get("name") or s["with"].get("pattern")
                if name and name not in uploaded:
                    out.append(f"results/{job}: downloads {name!r}, which pull-request.yml never uploads")
                if s["with"].get("run-id") != "${{ github.event.workflow_run.id }}":
                    out.append(f"results/{job}: downloads from another run than the one that triggered it")
                if "actions" not in (j.get("permissions") or {}):
                    out.append(f"results/{job}: downloads artefacts of another run without actions: read")
    holders = [job for doc in (pr, results) for job, j in doc["jobs"].items() if "security-events" in _writes(j)]
    if holders != sarif_jobs or len(sarif_jobs) != 1:
        out.append(f"security-events: write must be on the one job that uploads SARIF, not {holders} (uploads: {sarif_jobs})")
    return out


def test_workflows_are_safe_on_forks():
    found = problems(_load("pull-request.yml"), _load("pull-request-results.yml"))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("breakage, expected", [
    (lambda pr, res: pr["jobs"]["gate"]["permissions"].update({"pull-requests": "write"}), "pull-request/gate: runs the pull request's code"),
    (lambda pr, res: pr.update(permissions={"contents": "read", "checks": "write"}), "workflow-level permissions"),
    (lambda pr, res: res["jobs"]["comment"]["steps"].insert(0, {"uses": "actions/checkout@x"}), "must not check out"),
    (lambda pr, res: res["jobs"]["comment"]["permissions"].update({"security-events": "write"}), "that none of its actions needs"),
    (lambda pr, res: res["jobs"]["code-scanning"]["steps"][0]["with"].update(name="sarif"), "never uploads"),
    (lambda pr, res: pr["jobs"]["gate"]["steps"].append({"uses": "marocchino/sticky-pull-request-comment@x"}), "belongs in the results workflow"),
    (lambda pr, res: res["jobs"]["source"]["steps"][1].update(run="echo ${{ github.event.workflow_run.head_branch }}"), "expression inside `run:`"),
    (lambda pr, res: pr["jobs"]["kind"].pop("permissions"), "pull-request/kind: no permissions of its own"),
])
def test_the_check_catches_each_mistake(breakage, expected):
    pr, res = copy.deepcopy(_load("pull-request.yml")), copy.deepcopy(_load("pull-request-results.yml"))
    breakage(pr, res)
    found = problems(pr, res)
    assert any(expected in p for p in found), found


def test_gate_findings_become_annotations_and_sarif():
    """The gate job asks for `--format github`, and `make validate` writes the SARIF file that the
    gate-reports artefact carries and the code-scanning job uploads."""
    pr, results = _load("pull-request.yml"), _load("pull-request-results.yml")
    runs = [s.get("run", "") for s in pr["jobs"]["gate"]["steps"]]
    assert any(r.startswith("make validate") and "--format github" in r for r in runs), runs
    target = re.search(r"^validate:.*?(?=^\S|\Z)", (REPO_ROOT / "Makefile").read_text(), re.M | re.S).group(0)
    assert "--format sarif=$(REPORTS)/validate.sarif" in target and "$(VALIDATE_FORMATS)" in target, target
    upload = next(s for s in pr["jobs"]["gate"]["steps"] if s.get("with", {}).get("name") == "gate-reports")
    assert "build/reports/*.sarif" in upload["with"]["path"]
    sarif = next(s for s in results["jobs"]["code-scanning"]["steps"] if _action(s) == "github/codeql-action/upload-sarif")
    assert sarif["with"]["sarif_file"] == "gate-reports/validate.sarif"


def test_failed_tests_are_annotated():
    """pytest-github-actions-annotate-failures is a test dependency, locked (it switches itself on
    where GITHUB_ACTIONS=true, so the workflow needs no flag)."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert any(re.match(r"pytest-github-actions-annotate-failures\b", d) for d in extras), extras
    assert re.search(r"^pytest-github-actions-annotate-failures==\S+ \\$", (REPO_ROOT / "locks/dev.txt").read_text(), re.M)


def test_rehearsal_runs_on_pull_requests_that_change_versions_read_only():
    """A pull request changing versions.yaml rehearses what it changes (harness/report/rehearsal_plan.py),
    with the read-only token it gets on forks too: nothing posts, the reports are artefacts."""
    doc = _load("rehearsal.yml")
    assert doc["on"]["pull_request"] == {"paths": ["versions.yaml"]}, doc["on"]
    assert "pull_request_target" not in doc["on"] and {"schedule", "workflow_dispatch"} <= set(doc["on"])
    assert doc.get("permissions") == {"contents": "read"}
    for job, j in doc["jobs"].items():
        assert not _writes(j), f"rehearsal/{job}: write permission {sorted(_writes(j))}"
        assert not [_action(s) for s in j.get("steps", []) if _action(s) in NEEDS], f"rehearsal/{job} posts"
    plan = " ".join(s.get("run", "") for s in doc["jobs"]["candidates"]["steps"])
    assert "harness.report.rehearsal_plan --base" in plan and "harness.report.rehearsal_plan --kueue" in plan, plan
    checkout = doc["jobs"]["rehearse"]["steps"][0]
    assert _action(checkout) == "actions/checkout" and "matrix.ref == 'base'" in checkout["with"]["ref"], checkout


def test_the_gpu_comment_describes_every_push():
    """A push whose gate or tests fail still gets its report (the Report step runs unless the run is cancelled or the
    set-up failed), and a push without one replaces the sticky comment with a note: the previous push's report
    never stays on the pull request as if it were this one's."""
    pr, results = _load("pull-request.yml"), _load("pull-request-results.yml")
    steps = pr["jobs"]["gate"]["steps"]
    report = next(s for s in steps if s.get("run", "").startswith("make report"))
    condition = str(report.get("if", ""))
    assert "!cancelled()" in condition or "always()" in condition, f"the Report step is skipped after a failed step: if: {condition!r}"
    ran = re.findall(r"steps\.(\w+)\.outcome", condition)
    ids = [s.get("id") for s in steps]
    assert ran and all(i in ids[:ids.index(report.get("id"))] for i in ran), (condition, ids)
    assert not any(i in ran for i in ("test",)), "the report must not wait for the tests to pass"
    upload = next(s for s in steps if s.get("with", {}).get("name") == "gpu-report")
    assert f"steps.{report['id']}.outcome == 'success'" in str(upload.get("if")), upload.get("if")
    posts = [s for s in results["jobs"]["comment"]["steps"] if _action(s) == "marocchino/sticky-pull-request-comment"]
    conditions = {str(s.get("if")).replace(" ", ""): s for s in posts}
    present, absent = "hashFiles('artefacts/gpu-report/comment.md')!=''", "hashFiles('artefacts/gpu-report/comment.md')==''"
    assert set(conditions) == {present, absent}, list(conditions)
    note = conditions[absent]["with"]
    assert note["header"] == conditions[present]["with"]["header"] and "github.event.workflow_run.head_sha" in note["message"], note
