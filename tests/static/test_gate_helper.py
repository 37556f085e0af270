"""The gate's Go helpers (tools/fluxbuild: render, check, match; tools/kubecheck; harness.gate.helper) and the
request protocol it speaks (harness.toolchain.RequestProcess): concurrent requests get their own
answers, a refused request does not end the process, and a helper that dies fails every caller
waiting on it with what it printed, never leaving one waiting."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import toolchain as tools
from harness.core import HarnessError
from harness.core.versions import REPO_ROOT
from harness.gate import schema_check
from harness.gate.helper import helper
from harness.gate.matching import MatchError, selector_matches
from harness.gate.render import FluxBuild, RenderError
from harness.gate.schema_check import CheckError

pytestmark = pytest.mark.static

BROKEN_CQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
             "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
                 {"name": "cpu", "nominalQuota": "4", "lendingLimit": "8"}]}]}]}}


def test_render_check_and_match_run_concurrently_in_one_process():
    """Requests from several threads at once, of every kind, each answered with its own result."""
    checker = schema_check.Checker().start()

    def render(i):
        with FluxBuild(REPO_ROOT) as fb:
            return fb.run([{"id": f"job{i}", "dir": "overlays/team-queues"}])[f"job{i}"]

    with ThreadPoolExecutor(6) as pool:
        renders = [pool.submit(render, i) for i in range(3)]
        checks = [pool.submit(checker.check, [BROKEN_CQ]) for _ in range(3)]
        matches = [pool.submit(selector_matches, {"matchLabels": {"team": t}}, {"team": "a"}) for t in ("a", "b")]
        rendered = [f.result() for f in renders]
        checked = [f.result() for f in checks]
        matched = [f.result()[0] for f in matches]
    assert all(not r.get("error") and any(o["kind"] == "ClusterQueue" for o in r["objects"]) for r in rendered)
    assert all(c[0] is not None and c[0].rule == "kueue-webhook" and "lendingLimit" in c[0].errors[0]["field"] for c in checked), checked
    assert matched == [True, False]
    assert helper()._proc is not None and helper()._proc.poll() is None, "one long-lived helper serves them all"


def test_a_refused_request_is_an_error_of_its_caller_and_the_helper_goes_on():
    with pytest.raises(MatchError, match='unknown op "nonsense"'):
        helper().call("nonsense", MatchError)
    with pytest.raises(CheckError, match="needs schema_dir"):
        helper().call("check", CheckError, objects=[])
    with FluxBuild(REPO_ROOT) as fb:
        assert not fb.run([{"id": "a", "dir": "base"}])["a"].get("error")


def test_a_render_outside_any_checkout_is_a_render_error(tmp_path):
    with FluxBuild(tmp_path / "missing") as fb, pytest.raises(RenderError, match="missing"):
        fb.run([{"id": "a", "dir": "base"}])


class _Boom(HarnessError, RuntimeError):
    pass


def test_a_helper_that_dies_fails_every_waiting_caller_with_its_stderr():
    proc = tools.RequestProcess("fake", lambda: ["bash", "-c", "read -r line; sleep 0.2; echo 'boom: bad input' >&2; exit 3"])
    try:
        futures = [proc.submit("render", _Boom) for _ in range(3)]
        for f in futures:
            with pytest.raises(_Boom, match=r"fake failed \(exit 3\): boom: bad input"):
                f.result(timeout=30)
        # The next request starts it again (and fails the same way): nobody is left waiting.
        with pytest.raises(_Boom, match="exit 3"):
            proc.submit("render", _Boom).result(timeout=30)
    finally:
        proc.close()


def test_a_reader_that_cannot_read_the_answers_fails_the_waiting_callers(monkeypatch):
    """The thread reading a helper's answers stops on an error (once: an answer in the locale's encoding): the callers
    waiting are failed with the reason and the helper is ended, never left waiting for ever."""
    def unreadable(self, proc, pending):
        raise UnicodeDecodeError("ascii", b"\xc3", 0, 1, "ordinal not in range(128)")
    monkeypatch.setattr(tools.RequestProcess, "_answer", unreadable)
    proc = tools.RequestProcess("fake", lambda: ["bash", "-c", "read -r line; sleep 30"])
    try:
        with pytest.raises(_Boom, match=r"fake failed .*its answers could not be read \(UnicodeDecodeError"):
            proc.submit("render", _Boom).result(timeout=20)
    finally:
        proc.close(wait=False)


def test_answers_that_are_not_the_protocol_are_not_taken_for_an_answer():
    """A stray line on the helper's stdout (a library printing) is skipped; the real answer still arrives."""
    script = 'read -r line; echo "not json"; echo \'{"id": 7}\'; echo \'{"id": 1, "answer": [42]}\'; read -r rest'
    proc = tools.RequestProcess("fake", lambda: ["bash", "-c", script])
    try:
        assert proc.submit("x", _Boom).result(timeout=30) == [42]
    finally:
        proc.close()


def test_a_caller_gone_before_its_answer_leaves_no_copy_behind(tmp_path):
    """The gate's CLI exits without waiting for the helper; a render whose answer nobody reads anymore
    still ends with the helper removing its copy of the repository (TMPDIR here)."""
    import json
    import os
    import subprocess

    binary = str(tools.ensure("fluxbuild")["fluxbuild"].path())
    proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    proc.stdout.close()  # the caller is gone: nobody reads the answers
    request = {"id": 1, "op": "render", "session": "s", "root": str(REPO_ROOT), "skip_dirs": [".git", ".venv"],
               "jobs": [{"id": "a", "dir": "overlays/team-queues"}]}
    proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.close()
    assert proc.wait(timeout=60) == 2, proc.stderr.read()
    assert b"broken pipe" in proc.stderr.read()
    assert list(tmp_path.iterdir()) == [], "the helper left its copy behind"


def test_kubecheck_refuses_an_unknown_op_and_goes_on():
    """tools/kubecheck, the second helper, speaks the same protocol: a refused request is its caller's error."""
    with pytest.raises(CheckError, match="unknown op"):
        helper("kubecheck").call("nope", CheckError)
    assert helper("kubecheck").call("builtin", CheckError, objects=[]) == []


def test_objects_kubecheck_cannot_decode_are_the_schema_checks_finding():
    """A built-in or Ray object whose fields have the wrong types: kubeconform (or the CRD) names the field, and
    that is the finding; kubecheck does not end. For a built-in it answers the apiserver's decoding refusal (what
    decides when the schema has no pattern, as for a quantity), which the schema's verdict outranks here."""
    limit_range = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "x", "namespace": "ray"}, "spec": {"limits": "all"}}
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j", "namespace": "ray"},
              "spec": {"rayClusterSpec": {"workerGroupSpecs": "many"}}}
    problems = schema_check.validate([limit_range, rayjob])
    assert [p.rule if p else None for p in problems] == ["schema", "api-validation"], problems
    assert "cannot be handled as" not in str(problems)
    builtin = helper("kubecheck").call("builtin", CheckError, objects=[limit_range])
    assert [(e["field"], "LimitRange in version \"v1\" cannot be handled as a LimitRange" in e["detail"]) for e in builtin[0]["errors"]] == \
        [("spec.limits", True)], builtin
    assert helper("kubecheck").call("pods", CheckError, objects=[rayjob])[0]["errors"] == []


def test_a_kind_or_api_version_that_is_no_string_is_the_schema_checks_finding():
    """Found by the mutation property run unseeded: a mapping where apiVersion or kind is written raised
    TypeError (unhashable) when the objects were sorted for kubecheck."""
    problems = schema_check.validate([{"apiVersion": {"a": 1}, "kind": "RayJob", "metadata": {"name": "j"}},
                                      {"apiVersion": "ray.io/v1", "kind": ["RayJob"], "metadata": {"name": "j"}}])
    assert all(p is not None and p.rule in ("schema", "schema-unknown-kind") for p in problems), problems


def test_a_prerendered_repository_gives_the_first_session_the_same_builds(repo_copy, tmp_path, monkeypatch):
    """fluxbuild --prerender builds the plain kustomization directories at start; the first session on that repository
    (same skip list) takes the copy and those builds, which equal what it would build itself, broken ones included.
    Another repository is built as usual."""
    import json

    from harness.gate import SKIP_DIRS
    from harness.gate.sources import kustomization_dirs

    (repo_copy / "overlays/team-queues/team-b.yaml").write_text("kind: [\n")  # a directory whose build fails
    rels = [d.relative_to(repo_copy).as_posix() for d in kustomization_dirs(repo_copy)]
    jobs = [{"id": rel, "dir": rel} for rel in rels]
    path = str(tools.local_binary("fluxbuild") or tools.ensure("fluxbuild")["fluxbuild"].path())
    skips = [a for d in sorted(SKIP_DIRS) for a in ("--skip-dir", d)]

    def rendered(args, root):
        process = tools.RequestProcess("fluxbuild", lambda: [path, *args])
        try:
            return process.call("render", RenderError, session="s", root=str(root), skip_dirs=sorted(SKIP_DIRS), jobs=jobs)
        finally:
            process.close()

    plain = rendered([], repo_copy)
    monkeypatch.setenv("FLUXBUILD_TRACE", str(tmp_path / "trace"))
    ahead = rendered(["--prerender", str(repo_copy), *skips], repo_copy)
    monkeypatch.delenv("FLUXBUILD_TRACE")
    assert json.dumps(ahead, sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert f"prerender           jobs={len(jobs) - 2}" in (tmp_path / "trace").read_text()  # all but the two gpu-sku components
    assert any(r["error"] for r in plain if r["id"] == "overlays/team-queues") and any(not r.get("error") for r in plain)
    elsewhere = rendered(["--prerender", str(REPO_ROOT), *skips], repo_copy)
    assert json.dumps(elsewhere, sort_keys=True) == json.dumps(plain, sort_keys=True)
