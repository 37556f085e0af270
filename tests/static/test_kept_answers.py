"""Answers kept on disk by their inputs (harness.core.memo, harness.gate.helper.submit_kept/submit_each): a kept answer is
the helper's own answer to the same request, only the items not asked before are sent, another build's answers are
never read back, and a cache that cannot be written changes nothing but the time."""
from __future__ import annotations

import os

import pytest

from harness.core import MISSING, Memo
from harness.gate import helper as gate_helper
from harness.gate import schema_check
from harness.gate.validate import validate_repository

from tests.static.test_gate_corpus import TEAM_A, TEAM_B, edit

pytestmark = pytest.mark.static



def _memo(tmp_path, name: str, identity: str, kept: int = 4096) -> Memo:
    """A Memo in `tmp_path`, not in the user's cache."""
    memo = Memo(name, identity, kept)
    memo.dir = tmp_path / "memo" / f"{name}-{identity}"
    return memo


def test_an_answer_is_read_back_under_its_inputs_only_and_by_the_code_that_kept_it(tmp_path):
    memo = _memo(tmp_path, "test-kept", "build-a")
    key = memo.key("check", {"objects": [{"kind": "ConfigMap", "data": {"a": os.urandom(8).hex()}}]})
    assert memo.get(key) is MISSING
    memo.put(key, [{"stage": "", "errors": []}])
    assert memo.get(key) == [{"stage": "", "errors": []}]
    assert memo.warm()
    assert _memo(tmp_path, "test-kept", "build-b").get(key) is MISSING  # another build of the helper: its own answers only
    assert memo.get(memo.key("check", {"objects": [{"kind": "ConfigMap"}]})) is MISSING
    assert memo.key({1: "a", "1": "b"}) is None and memo.get(None) is MISSING  # inputs that cannot be keyed: never kept


def test_the_oldest_answers_beyond_the_bound_are_removed_when_a_run_adds_answers(tmp_path):
    memo = _memo(tmp_path, "test-bound", "a", kept=3)
    keys = [memo.key(i) for i in range(5)]
    for i, key in enumerate(keys):
        memo.put(key, i)
        os.utime(memo.dir / key[:2] / key, (1000 + i, 1000 + i))
    _memo(tmp_path, "test-bound", "a", kept=3).put(memo.key(5), 5)  # a later run adds one
    kept = [memo.get(k) for k in keys]
    assert kept[:3] == [MISSING, MISSING, MISSING] and kept[3:] == [3, 4]


def test_only_the_newest_builds_answers_are_kept(tmp_path):
    for i, build in enumerate(("b1", "b2", "b3", "b4")):
        memo = _memo(tmp_path, "test-builds", build)
        memo.put(memo.key(i), i)
        os.utime(memo.dir, (1000 + i, 1000 + i))
    assert sorted(p.name for p in (tmp_path / "memo").iterdir()) == ["test-builds-b2", "test-builds-b3", "test-builds-b4"]


def test_an_unwritable_cache_keeps_nothing_and_says_nothing(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    memo = _memo(tmp_path / "file", "test-unwritable", "x")  # no one can create it, root included
    memo.put(memo.key("a"), 1)
    assert memo.get(memo.key("a")) is MISSING and not memo.warm()


def test_only_the_objects_not_judged_before_are_sent_and_kept_verdicts_are_the_helpers_own(monkeypatch):
    fresh = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"m-{os.urandom(4).hex()}", "namespace": "ray"},
             "data": {"bad key!": "x"}}
    other = {**fresh, "metadata": {**fresh["metadata"], "name": fresh["metadata"]["name"] + "-2"}, "data": {"ok": "y"}}
    first = schema_check.validate([fresh])
    assert first[0] is not None  # the apiserver refuses the key
    sent = []
    real = gate_helper.helper

    def counting(name="fluxbuild", args=()):
        process = real(name, args)

        class Counting:
            def submit(self, op, error, **fields):
                sent.append((name, op, len(fields.get("objects") or [])))
                return process.submit(op, error, **fields)

            def __getattr__(self, attr):
                return getattr(process, attr)
        return Counting()

    monkeypatch.setattr(gate_helper, "helper", counting)
    again = schema_check.validate([fresh, other])
    assert again[0] == first[0]
    assert again[1] is None
    assert ("fluxbuild", "check", 1) in sent and ("kubecheck", "builtin", 1) in sent  # the new object alone
    assert not [s for s in sent if s[1] in ("check", "builtin") and s[2] != 1], sent


def test_a_run_with_every_verdict_kept_reports_what_a_run_with_none_kept_does(repo_copy, tmp_path, monkeypatch):
    edit(repo_copy, TEAM_A, '              borrowingLimit: "0"\n', '              borrowingLimit: "0"\n              lendingLimit: "99999"\n')
    edit(repo_copy, TEAM_B, "queueingStrategy:", "queueingStrategyy:")
    own = {}
    for name in ("fluxbuild", "kubecheck"):  # this test's own (empty) memos, apart from the shared ones
        assert gate_helper.memo(name) is not None, f"tools/{name} is built"
        own[name] = Memo(name, "test")
        own[name].dir = tmp_path / "memo" / name
    monkeypatch.setattr(gate_helper, "memo", lambda name="fluxbuild": own.get(name))
    assert not gate_helper.warm("fluxbuild")
    with_none = [f.text() for f in validate_repository(repo_copy).findings]
    assert gate_helper.warm("fluxbuild") and gate_helper.warm("kubecheck")
    with_all = [f.text() for f in validate_repository(repo_copy).findings]
    assert with_none == with_all
    assert any("lendingLimit" in line for line in with_all) and any("queueingStrategyy" in line for line in with_all)
