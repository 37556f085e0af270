"""Files the harness writes: the per-user cache, atomic writes, and locks that make parallel
runs (two checkouts, xdist workers) wait for one writer instead of racing."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import shutil
from pathlib import Path
from typing import Iterator

from harness.core.errors import HarnessError

CACHE_DIR_NAME = "aks-ray-kueue"


def xdg_cache_home() -> str | None:
    """$XDG_CACHE_HOME when it is an absolute path; None when unset, empty or relative (the XDG Base Directory spec:
    a relative path there "should be considered invalid and ignored"; Go's os.UserCacheDir refuses it too)."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return base if os.path.isabs(base) else None


def cache_root() -> Path:
    """${XDG_CACHE_HOME:-~/.cache}/aks-ray-kueue: tool builds, schemas, seeds, parsed inputs. CacheError when the
    harness cannot create or write it (checked once per path)."""
    root = Path(xdg_cache_home() or os.path.join(os.path.expanduser("~"), ".cache")) / CACHE_DIR_NAME
    _check_cache(root)
    return root


class CacheError(HarnessError):
    """The tool cache cannot be written."""


@functools.lru_cache(maxsize=None)
def _check_cache(root: Path) -> None:
    try:
        writable_dir(root)
    except OSError as err:
        raise CacheError(f"cannot write the tool cache {root} ({err.strerror or err}; it is $XDG_CACHE_HOME/{CACHE_DIR_NAME}, "
                         f"else ~/.cache/{CACHE_DIR_NAME}): set XDG_CACHE_HOME to a directory you can write") from None


def writable_dir(path: Path) -> Path:
    """Creates `path` (and its parents) unless it exists; OSError (PermissionError, read-only file system) unless this
    user can write into it."""
    path.mkdir(parents=True, exist_ok=True)
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    return path


def unwritable_dir(path: Path, hint: str) -> HarnessError | None:
    """None when `path` can be created and written; else a HarnessError naming it, saying why and giving `hint` (the
    fix: a work or output directory elsewhere), for a run in a read-only checkout."""
    try:
        writable_dir(path)
    except OSError as err:
        return HarnessError(f"cannot write {path} ({err.strerror or err}; a read-only checkout?): {hint}")
    return None


def atomic_write(path: Path, data: bytes | str, mode: int | None = None) -> Path:
    """Writes `data` to a temporary file beside `path` and renames it over `path`, so a reader
    sees the old content or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def publish_dir(staging: Path, target: Path) -> Path:
    """Moves a fully written directory into place (replacing an incomplete one) with one rename;
    `staging` must be on the same filesystem, e.g. a sibling of `target`."""
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """An exclusive lock on `lock_path` (created if missing) for the duration of the block."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def cache_lock(name: str) -> contextlib.AbstractContextManager[None]:
    """The lock named `name` under the cache's locks/ directory."""
    return locked(cache_root() / "locks" / f"{name}.lock")


# What a checkout of this repository needs for the gate (the harness itself is not copied): what tests break on purpose
# and the benchmarks edit, in throwaway copies.
CONFIG_PATHS = ("base", "overlays", "components", "clusters", "flux", "workloads", "terraform", "versions.yaml", ".sourceignore")


def copy_config(dest: Path, root: Path | None = None) -> Path:
    """Copies CONFIG_PATHS of `root` (default: this repository) into the new directory `dest`; returns `dest`."""
    from harness.core.versions import REPO_ROOT

    root = REPO_ROOT if root is None else root
    dest.mkdir(parents=True)
    for rel in CONFIG_PATHS:
        src = root / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel)
        elif src.exists():
            shutil.copy2(src, dest / rel)
    return dest
