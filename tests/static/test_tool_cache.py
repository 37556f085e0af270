"""The cache of the tools built from this repository's own source (tools/fluxbuild, kubecheck, tfeval): their
version is a hash of their source, so every edit, pull or branch switch is a new build of ~100 MB. A build
keeps the three most recently built of its tool and removes the rest, with staging an interrupted build left."""
from __future__ import annotations

import os

import pytest

from harness.toolchain.local import KEEP, STAMP, prune_local

pytestmark = pytest.mark.static


def _built(root, name, version, age, stamp=True):
    d = root / "aks-ray-kueue" / "bin" / f"{name}-{version}"
    d.mkdir(parents=True)
    (d / name.split("-")[0]).write_bytes(b"binary")
    if stamp:
        (d / STAMP).write_text(version)
        os.utime(d / STAMP, (1_000_000 - age, 1_000_000 - age))
    return d


def test_prune_keeps_the_newest_builds_of_that_tool_only(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ages = range(6)
    builds = [_built(tmp_path, "fluxbuild", f"src-{i:012x}", age) for i, age in enumerate(ages)]
    interrupted = _built(tmp_path, "fluxbuild", "src-aaaaaaaaaaaa", 0, stamp=False)
    staging = _built(tmp_path, "fluxbuild", "src-bbbbbbbbbbbb.tmp", 0)
    copies = tmp_path / "aks-ray-kueue" / "build"
    for d in builds:
        (copies / d.name).mkdir(parents=True)
    other_tool = _built(tmp_path, "kubecheck", "src-000000000000", 100)
    pinned = _built(tmp_path, "kueue", "v0.17.1", 100)

    removed = prune_local("fluxbuild")

    assert [d.exists() for d in builds] == [True] * KEEP + [False] * (len(builds) - KEEP)
    assert [(copies / d.name).exists() for d in builds] == [True] * KEEP + [False] * (len(builds) - KEEP)
    assert not interrupted.exists() and not staging.exists()
    assert other_tool.exists() and pinned.exists()
    assert len(removed) == 2 * (len(builds) - KEEP) + 2


def test_prune_of_a_fresh_cache_removes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    only = _built(tmp_path, "tfeval", "src-0123456789ab", 0)
    assert prune_local("tfeval") == [] and only.exists()
