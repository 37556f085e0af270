"""A commit's tree as plain files, written by git itself.

`git read-tree` into an index file of its own (GIT_INDEX_FILE) and `git checkout-index --all --prefix`: the user's
checkout, index, refs and worktrees are untouched, and git writes the files as it writes a checkout (modes, symlinks,
its own path checks), so no archive is unpacked by Python (tarfile's extraction filters only exist from Python 3.11.4,
and an unfiltered extraction trusts every path and link in the archive).
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from harness.core.errors import HarnessError


class TreeError(HarnessError, RuntimeError):
    """git could not read or write the tree."""


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, env=env)
    if proc.returncode != 0:
        raise TreeError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace").strip()


def export_tree(repo: Path, ref: str, dest: Path) -> Path:
    """The tree of commit `ref` under `repo`'s directory (its subtree when `repo` is a subdirectory of the work tree, as
    `git archive` run there gives it) as plain files in `dest` (created); returns `dest`."""
    top = Path(_git(repo, "rev-parse", "--show-toplevel"))
    prefix = _git(repo, "rev-parse", "--show-prefix")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="export-index-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(top, "read-tree", f"{ref}:{prefix}" if prefix else ref, env=env)
        _git(top, "checkout-index", "--all", "--force", f"--prefix={dest.resolve()}/", env=env)
    return dest
