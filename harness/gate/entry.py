"""The console script ray-kueue-validate (scripts/validate): the gate's Go helpers start first, so that
their start-up (each loads a large binary and initialises the Kubernetes packages it links) and fluxbuild's build of the
plain kustomization directories run on the other core while Python imports the gate; the Flux rounds of the render
start next (render.ahead), while the rules are imported; then harness.gate.validate's command line runs."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from harness.core import HarnessError, tell
from harness.gate.helper import prestart, warm


def cli() -> None:
    try:
        root = _repository(sys.argv[1:])
        # kubecheck only answers: where its answers are kept (helper.warm), it starts when a request is not.
        prestart("fluxbuild", *(() if warm("kubecheck") else ("kubecheck",)), prerender=root)
        from harness.gate import render
        ahead = render.ahead(root)  # the Flux rounds render while the rules are imported
        from harness.gate.validate import cli as validate_cli  # the imports the helpers' start-up overlaps
    except HarnessError as e:  # a setting its modules read (versions.yaml, $RAY_KUEUE_VERSIONS): the gate cannot run
        tell(f"validate: {e}")
        sys.exit(2)
    validate_cli(ahead)


def _repository(args: list[str]) -> Path:
    """The repository the command line most likely names, for the helper to start building before the gate has parsed
    it: the first argument that is an existing directory (report paths are files), else the default, the repository
    the working directory is in (`repository_root`). A wrong guess costs a build nobody asks for, never a result: the
    helper answers only a request for the same repository."""
    named = next((Path(a).resolve() for a in args if not a.startswith("-") and Path(a).is_dir()), None)
    return named or repository_root(Path(".").resolve()) or Path(".").resolve()


def temporary_directory() -> None:
    """Raises HarnessError naming $TMPDIR when no directory can be made in it: the Go helpers make their scratch
    directories there (Go's os.TempDir is $TMPDIR as set; Python's tempfile would silently fall back to /tmp)."""
    tmp = os.environ.get("TMPDIR")
    if not tmp:
        return
    try:
        os.rmdir(tempfile.mkdtemp(prefix="ray-kueue-gate-", dir=tmp))
    except OSError as err:
        raise HarnessError(f"$TMPDIR is {tmp}, where no directory can be made ({err.strerror or err}): the gate's helpers "
                           "write their temporary files there; point TMPDIR at a writable directory, or unset it") from None


CHECKOUT_MARKERS = ("clusters", "overlays", ".ray-kueue-gate.yaml")  # what a checked repository holds (config.CONFIG_FILE last)


def looks_like_checkout(path: Path) -> bool:
    return any((path / m).exists() for m in CHECKOUT_MARKERS)


def repository_root(start: Path) -> Path | None:
    """The repository to check when none is named, from the working directory `start`: as git finds its work tree, upward.
    The top of the git work tree holding `start` when it looks like a checkout (clusters/, overlays/ or the gate's
    configuration), else the outermost directory between it (or, outside git, the file system root) and `start` that
    does: so terraform/, whose clusters/ holds tfvars files, or clusters/ itself, is never taken for the repository.
    None when no such directory is there."""
    start = Path(start).resolve()
    chain = [start, *start.parents]
    top = chain.index(git_top(start) or chain[-1])
    return next((d for d in reversed(chain[:top + 1]) if looks_like_checkout(d)), None)


def git_top(start: Path) -> Path | None:
    """The top of the Git work tree holding `start` (the nearest directory with a `.git`, as git finds it; a worktree's
    `.git` is a file), or None outside Git."""
    start = Path(start).resolve()
    return next((d for d in (start, *start.parents) if (d / ".git").exists()), None)


def in_git(root: Path) -> str:
    """Where the checked tree `root` lies in its Git work tree ("platform" for a platform under a monorepo's platform/;
    "" at the top or outside Git): report paths are prefixed with it, so GitHub (annotations, SARIF %SRCROOT%, which
    it resolves against the repository root) maps them to the files."""
    top = git_top(root)
    rel = "." if top is None else Path(root).resolve().relative_to(top).as_posix()
    return "" if rel == "." else rel
