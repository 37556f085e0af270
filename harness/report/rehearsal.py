"""`make rehearse KUEUE=<v> KUBERAY=<v>`: the upgrade rehearsal. The same proof runs on the
production pins and on candidate versions of Kueue and KubeRay (versions.yaml `candidates:`), and
build/rehearsal/report.md + report.json say what differs:

1. the candidate tools are built (cached per version, like the pins);
2. the static gate runs on both (`scripts/validate --kueue V --kuberay V`: the candidate's CRD
   schemas and quota accounting);
3. Kueue's decision at every step of the report's scenarios (harness.report.step_decisions);
   the test suites (behavioural by default; `--suites integration,flux,faults`) run on both, each
   pytest run told its versions through $RAY_KUEUE_VERSIONS (harness.core.versions);
   the two sides run at the same time (`--jobs 2`, the default), each on clusters of its own
   (their ports, data and temporary directories are disjoint: tests/harness/test_parallel_runs.py), since
   most of a side's time is waiting on controllers rather than using a core;
4. the CRD schema changes that touch fields this repository sets, Kueue's Configuration as both
   binaries fill it in, and the release changes (harness.core.releases) with what the repository
   must do about them.

    python -m harness.report.rehearsal [--kueue V] [--kuberay V] [--suites integration] [--out build/rehearsal]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

from harness.cluster import kueue_effective_config, production_kueue_config
from harness.core import HarnessError, REPO_ROOT, StopSignals, atomic_write, releases, say, timeouts, unwritable_dir, versions
from harness.gate import render_repository, render_sample, sample_names
from harness.report import rehearsal_markdown, step_decisions
from harness.report.rehearsal_steps import RehearsalError, StepInterrupted, Steps
from harness.report.upgrade_diff import config_changes, crd_changes
from harness.toolchain import tool

SUITES = {"integration": "integration", "flux": "flux", "faults": "faults"}  # name -> pytest marker
EMPTY_CONFIG = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
OPERATOR_GROUPS = ("kueue.x-k8s.io/", "ray.io/")


def newest_candidate(component: str) -> str:
    newest = versions.newest_candidate(component)
    if newest is None:
        raise RehearsalError(f"versions.yaml {component}: no candidates to rehearse")
    return newest


# Two sides at once share two cores: the bound on each of Kueue's decisions is raised as for
# tests/harness/test_parallel_runs.py (a bound, not a wait: a passing run is not slowed).
CONCURRENT_ENV = {"RAY_KUEUE_WAIT": "180"}


def _env(choice: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    return {**extra, **os.environ, versions.SELECT_ENV: versions.selection_text(choice)}  # the caller's own settings win


def junit_outcomes(path: Path) -> dict[str, dict]:
    """test id -> {"outcome": passed|failed|error|skipped, "message"} from a pytest JUnit file."""
    out: dict[str, dict] = {}
    if not path.exists():
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or child.text or "").strip().splitlines()[0][:300] if (child.get("message") or child.text) else ""
                break
        out[test_id] = {"outcome": outcome, "message": message}
    return out


def _gate_findings(path: Path) -> list[dict]:
    if not path.exists():
        return []
    doc = json.loads(path.read_text())
    items = doc.get("findings", doc) if isinstance(doc, dict) else doc
    return [{k: f.get(k) for k in ("rule", "file", "resource", "message", "severity")} for f in items if isinstance(f, dict)]


def _main_of(module: str) -> list[str]:
    """A command running `module`'s main() (like its console script, without runpy's -m warning
    for modules their package already imports)."""
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())"]


# Files whose content cannot change a side's results: a commit, the README or a generated report
# alone does not make a side run again.
KEY_EXCLUDES = ("build/", "docs/", ".github/", "README.md")


def tree_key(choice: dict[str, str], suites: list[str]) -> str:
    """What a side's results depend on: the content of the checkout's files (tracked and untracked,
    not KEY_EXCLUDES), the versions and the suites. A side whose saved key matches is not run again."""
    digest = hashlib.sha256(json.dumps([choice, suites], sort_keys=True).encode())
    proc = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT, capture_output=True)
    if proc.returncode != 0:
        return f"no-git-{time.time()}"  # never matches: always run
    for name in sorted(filter(None, proc.stdout.decode().split("\0"))):
        path = REPO_ROOT / name
        if name.startswith(KEY_EXCLUDES) or not path.is_file():
            continue
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:20]


def saved_side(label: str, choice: dict[str, str], suites: list[str], out: Path) -> dict | None:
    """The results of an earlier run of this side for the same key, if there are any."""
    path = out / label / "result.json"
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    return saved if saved.get("key") == tree_key(choice, suites) else None


def build_tools(label: str, choice: dict[str, str], suites: list[str], out: Path, steps: Steps) -> float:
    """A side's tools (cached per version; the first build of a candidate takes minutes): the seconds it took.
    A build that fails says why (the build's own last message: Go's reason, e.g. the proxy refusing that version)."""
    side = out / label
    groups = ["--group", "cluster"] + (["--group", "flux"] if "flux" in suites else [])
    log = side / "tools.log"
    rc, secs = steps.run([*_main_of("harness.toolchain.builds"), *groups], _env(choice, {}), log, label)
    steps.ended(label, "the tool build", rc, log)
    if rc != 0:
        raise RehearsalError(f"{label}: the tools for {versions.selection_text(choice)} could not be built: {build_failure(log)} "
                             f"(log: {log})")
    return secs


def build_failure(log: Path) -> str:
    """The build's own error message (from its last `build-tools:` line on, whitespace folded), and when Go's
    reason is the module proxy's refusal, that said first."""
    text = log.read_text(errors="replace") if log.exists() else ""
    reason = " ".join(text[text.rfind("build-tools:"):].split()) if "build-tools:" in text else " ".join(text.split()[-60:])
    refused = re.search(r"(\S+@v\S+?): reading https?://\S+: (4\d\d [A-Za-z ]+?)(?:\s|$)", text)
    if refused:
        mod, _, version = refused.group(1).rpartition("@")
        reason = (f"the Go module proxy refuses {mod} {version} ({refused.group(2).strip()}); `go list -m -versions {mod}` "
                  f"lists versions it serves. Go said: {reason}")
    return reason[:1500] or "no message"


def rehearse_side(label: str, choice: dict[str, str], suites: list[str], out: Path, extra_env: dict[str, str],
                  tools_seconds: float, steps: Steps) -> dict:
    """One side of the rehearsal (the pins, or the candidates), its tools built (`tools_seconds`): gate, scenario
    steps, suites. Saved as <out>/<label>/result.json with its tree_key only when every step ran to its end;
    StepInterrupted at the first that did not. `extra_env`: defaults for its steps' environment."""
    side = out / label
    key = tree_key(choice, suites)
    env = _env(choice, extra_env)
    side.mkdir(parents=True, exist_ok=True)
    result: dict = {"versions": choice, "timings": {"tools": tools_seconds}, "suites": {}, "exit_codes": {"tools": 0}}
    gate_json, log = side / "validate.json", side / "validate.log"
    gate_json.unlink(missing_ok=True)  # an earlier run's findings are never read as this one's
    rc, secs = steps.run([*_main_of("harness.gate.validate"), ".", "--quiet", "--json", str(gate_json),
                          "--kueue", choice["kueue"], "--kuberay", choice["kuberay"]], env, log, label)
    steps.ended(label, "the gate", rc, log)
    result["timings"]["gate"], result["exit_codes"]["gate"] = secs, rc
    result["gate"] = _gate_findings(gate_json)
    decisions, log = side / "scenarios.json", side / "scenarios.log"
    decisions.unlink(missing_ok=True)
    rc, secs = steps.run([*_main_of("harness.report.step_decisions"), "--out", str(decisions), "--label", label], env, log, label)
    steps.ended(label, "the scenario steps", rc, log)
    result["timings"]["scenarios"], result["exit_codes"]["scenarios"] = secs, rc
    result["scenarios"] = json.loads(decisions.read_text()) if rc == 0 and decisions.exists() else []
    for suite in suites:
        junit, log = side / f"{suite}.junit.xml", side / f"{suite}.log"
        junit.unlink(missing_ok=True)
        # Its own --basetemp, under the side's directory: two sides' pytest runs never share (or clean up) each other's,
        # and what a killed rehearsal leaves (etcd data, ~75 MB a cluster) is cleared by the next run (clear_scratch).
        basetemp = side / f"pytest-{suite}"
        try:
            rc, secs = steps.run(suite_command(suite, junit, basetemp), env, log, label)
        finally:
            shutil.rmtree(basetemp, ignore_errors=True)
        steps.ended(label, f"`pytest -m {SUITES[suite]}`", rc, log, pytest=True)
        result["timings"][suite], result["exit_codes"][suite] = secs, rc
        result["suites"][suite] = junit_outcomes(junit)
    result["key"], result["finished"] = key, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    atomic_write(side / "result.json", json.dumps(result, indent=1) + "\n")
    return result


def suite_command(suite: str, junit: Path, basetemp: Path) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", SUITES[suite], "-q", f"--junitxml={junit}",
            f"--basetemp={basetemp}"]


def clear_scratch(side: Path) -> None:
    """The pytest base directories a killed (SIGKILLed) rehearsal of this side left."""
    for basetemp in side.glob("pytest-*"):
        shutil.rmtree(basetemp, ignore_errors=True)


def run_sides(choices: dict[str, dict[str, str]], suites: list[str], out: Path, *, fresh: bool = False,
              jobs: int = 2, steps: Steps | None = None) -> dict[str, dict]:
    """Each side's results: saved ones reused (same key), the others run, `jobs` at a time.
    The tools of every side are built first, one side after the other: a candidate that cannot be built stops
    the rehearsal before any side runs, and a first build (minutes on both cores) never runs beside the other
    side's tests. Any failure or interrupt stops the rehearsal: pending sides are cancelled, running steps stopped."""
    steps = steps or Steps()
    sides: dict[str, dict] = {}
    for label, choice in choices.items():
        clear_scratch(out / label)
        saved = None if fresh else saved_side(label, choice, suites, out)
        if saved:
            say("rehearse", f"{label}: reusing {out / label / 'result.json'} of {saved['finished']} "
                            f"(same checkout, versions and suites; --fresh runs it again)")
            sides[label] = {**saved, "reused": True}
    todo = [label for label in choices if label not in sides]
    at_once = max(1, min(jobs, len(todo)))
    pool = None

    def side(label: str, *args) -> dict:
        try:
            return rehearse_side(label, *args)
        except BaseException:
            steps.stop()  # at once, in this thread: the pool's next side must not start meanwhile
            raise

    try:
        built = {label: build_tools(label, choices[label], suites, out, steps) for label in todo}
        pool = ThreadPoolExecutor(at_once)
        running = {label: pool.submit(side, label, choices[label], suites, out, CONCURRENT_ENV if at_once > 1 else {},
                                      built[label], steps) for label in todo}
        pending = set(running.values())
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()  # the first side that failed or was interrupted ends the rehearsal
        sides.update({label: future.result() for label, future in running.items()})
    except BaseException:
        steps.stop()
        if pool:
            pool.shutdown(wait=True, cancel_futures=True)  # pending sides never start; running ones end with their steps
        raise
    pool.shutdown()
    return {label: sides[label] for label in choices}


def _binary(choice: dict[str, str]) -> Path:
    previous = os.environ.get(versions.SELECT_ENV)
    os.environ[versions.SELECT_ENV] = versions.selection_text(choice)
    try:
        return tool("kueue").path()
    finally:
        if previous is None:
            os.environ.pop(versions.SELECT_ENV)
        else:
            os.environ[versions.SELECT_ENV] = previous


def repository_objects() -> list[dict]:
    """Every Kueue and KubeRay object this repository sets: rendered directories, clusters, samples."""
    builds, clusters = render_repository(REPO_ROOT)
    objs = [o for b in builds for o in b.objects] + [o for c in clusters for _, o in c.applied()]
    objs += [render_sample(name, "default") for name in sample_names()]
    return [o for o in objs if isinstance(o, dict) and str(o.get("apiVersion", "")).startswith(OPERATOR_GROUPS)]


def compare_tests(base: dict[str, dict], cand: dict[str, dict]) -> list[dict]:
    """Per suite and test, the outcome on each side; the tests whose outcome differs first."""
    absent = {"outcome": "absent", "message": ""}
    tests = []
    for suite in sorted(set(base) | set(cand)):
        a, b = base.get(suite, {}), cand.get(suite, {})
        for test_id in sorted(set(a) | set(b)):
            old, new = a.get(test_id, absent), b.get(test_id, absent)
            tests.append({"suite": suite, "test": test_id, "baseline": old, "candidate": new, "differs": old["outcome"] != new["outcome"]})
    tests.sort(key=lambda t: (not t["differs"], t["suite"], t["test"]))
    return tests


def junit_id(node_id: str) -> str:
    """A pytest node id ("tests/integration/test_x.py::test_y") as junit_outcomes keys it
    (JUnit's classname "tests.integration.test_x", then "::test_y")."""
    path, _, func = node_id.partition("::")
    return f"{path.removesuffix('.py').replace('/', '.')}::{func}"


def compare(base: dict, cand: dict, out: Path) -> dict:
    """What differs between the two sides, and what the repository must change."""
    tests = compare_tests(base["suites"], cand["suites"])
    gate_key = lambda f: (f["rule"], f["file"], f["resource"], f["message"])  # noqa: E731
    base_gate, cand_gate = {gate_key(f): f for f in base["gate"]}, {gate_key(f): f for f in cand["gate"]}
    objs = repository_objects()
    crds = {c: [x for x in crd_changes(c, base["versions"][c], cand["versions"][c], objs)] for c in ("kueue", "kuberay")}
    work = out / "kueue-config"
    configs = {}
    for name, cfg in (("defaults", EMPTY_CONFIG), ("production", production_kueue_config())):
        configs[name] = config_changes(kueue_effective_config(_binary(base["versions"]), cfg, work / f"base-{name}"),
                                       kueue_effective_config(_binary(cand["versions"]), cfg, work / f"cand-{name}"))
    changes = [c for comp in ("kueue", "kuberay") for c in releases.between(comp, base["versions"][comp], cand["versions"][comp])]
    by_id = {t["test"]: t for t in tests}
    return {
        "tests": tests,
        "scenario_steps": step_decisions.compare(base.get("scenarios") or [], cand.get("scenarios") or []),
        "gate": {"only_baseline": [base_gate[k] for k in sorted(set(base_gate) - set(cand_gate))],
                 "only_candidate": [cand_gate[k] for k in sorted(set(cand_gate) - set(base_gate))]},
        "crds": {c: {"touching": [x for x in v if x["touches"]], "other": [x for x in v if not x["touches"]]} for c, v in crds.items()},
        "configuration": configs,
        "release_changes": [{"component": c.component, "since": c.since, "key": c.key, "area": c.area, "note": c.note,
                             "repository": c.repository, "checked_by": c.checked_by,
                             "ran": [{"test": ref, "baseline": by_id[ref]["baseline"]["outcome"], "candidate": by_id[ref]["candidate"]["outcome"]}
                                     for ref in map(junit_id, c.tests) if ref in by_id]} for c in changes],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kueue", help="candidate Kueue version (default: the newest in versions.yaml)")
    parser.add_argument("--kuberay", help="candidate KubeRay version (default: the newest in versions.yaml)")
    parser.add_argument("--suites", default="integration", help=f"comma-separated, of {', '.join(SUITES)} (default: integration)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "rehearsal")
    parser.add_argument("--fresh", action="store_true", help="run both sides even when saved results for this checkout exist")
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=2,
                        help="sides run at once (default 2: both, each on clusters of its own; 1: one after the other)")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    # Ctrl-C, SIGTERM (timeout, a cancelled CI job) and SIGHUP stop the rehearsal (run_sides stops its steps); a
    # second one only says that it is stopping.
    StopSignals(on_later=lambda name: say("rehearse", f"{name}: stopping already; the running steps get SIGKILL "
                                                     f"{timeouts.RUN_STOP:.0f}s after the first")).install()
    try:
        suites = [s for s in args.suites.split(",") if s]
        unknown = [s for s in suites if s not in SUITES]
        if unknown:
            raise RehearsalError(f"unknown suite(s) {unknown}; known: {', '.join(SUITES)}")
        # A version versions.yaml does not list is refused here, named as the user typed it (make rehearse KUEUE=...).
        cand = {c: versions.listed_version(c, typed, f"{c.upper()}={typed} (--{c})") if typed else newest_candidate(c)
                for c, typed in (("kueue", args.kueue), ("kuberay", args.kuberay))}
        versions.parse_selection(versions.selection_text(cand))
        base = {c: versions.pinned(c) for c in cand}
        if cand == base:
            raise RehearsalError(f"{', '.join(f'{c} {v}' for c, v in cand.items())} are the pins: a rehearsal compares candidates "
                                 "with them; name a candidate of versions.yaml (KUEUE=, KUBERAY=)")
        unwritable = unwritable_dir(args.out, "pass an output directory you can write: make rehearse OUT=DIR (--out DIR)")
        if unwritable:
            raise unwritable
        t = time.monotonic()
        sides = run_sides({"candidate": cand, "baseline": base}, suites, args.out, fresh=args.fresh, jobs=args.jobs)
        report = {"baseline": sides["baseline"], "candidate": sides["candidate"], "suites": suites,
                  "comparison": compare(sides["baseline"], sides["candidate"], args.out)}
        report["seconds"] = time.monotonic() - t
    except HarnessError as err:
        print(f"rehearse: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print(f"rehearse: interrupted ({err or 'SIGINT'}); a side saves its result.json only when every step ran to "
              f"its end", file=sys.stderr)
        return 130
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "report.json", json.dumps(report, indent=1, default=str) + "\n")
    atomic_write(args.out / "report.md", rehearsal_markdown.render(report))
    differing = sum(t["differs"] for t in report["comparison"]["tests"])
    say("rehearse", f"{args.out / 'report.md'}: {differing} test(s) differ; {report['seconds']:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
