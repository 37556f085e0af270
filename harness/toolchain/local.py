"""The tools built from a module inside this repository (tools/fluxbuild, tools/tfeval, tools/kubecheck): their version
is a hash of their source, so the binary of the current source is found in the cache without the build recipes
(builds.py, which read versions.yaml); the gate's entry point starts its Go helper that way, first."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from harness.core import REPO_ROOT, cache_root

STAMP = ".complete"  # written last into a tool's bin directory by its build


def local_version(src: Path) -> str:
    """The version of a tool built from directory `src`: a hash of its files' names and contents."""
    digest = hashlib.sha256()
    for path in sorted(src.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(src).as_posix().encode())
            digest.update(path.read_bytes())
    return "src-" + digest.hexdigest()[:12]


def bin_dir(name: str, version: str) -> Path:
    """Where version `version` of tool `name` is cached."""
    return cache_root() / "bin" / f"{name}-{version}"


def local_binary(name: str) -> Path | None:
    """The cached binary of tools/<name> as its source is now; None when that is not built yet."""
    d = bin_dir(name, local_version(REPO_ROOT / "tools" / name))
    return d / name if (d / STAMP).exists() and (d / name).exists() else None


KEEP = 3  # builds of one in-repository tool kept: the current source's and the two built before it


def prune_local(name: str) -> list[Path]:
    """Removes the cached builds of tools/<name> (binary and build copy) beyond the KEEP most recently built, and
    staging left by an interrupted build; called under the tool's build lock, once a build is published. A tool's
    version is a hash of its source, so without this every edit, pull or branch switch leaves ~100 MB behind.
    Returns what it removed."""
    bins = cache_root() / "bin"
    found = list(bins.glob(f"{name}-src-*"))
    built = sorted((d for d in found if d.suffix != ".tmp" and (d / STAMP).exists()),
                   key=lambda d: (d / STAMP).stat().st_mtime, reverse=True)
    stale = built[KEEP:] + [d for d in found if d not in built]
    kept = {d.name for d in built[:KEEP]}
    stale += [d for d in (cache_root() / "build").glob(f"{name}-src-*") if d.name not in kept]
    for d in stale:
        shutil.rmtree(d, ignore_errors=True)
    return stale
