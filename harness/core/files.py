"""Files the harness writes: the per-user cache, atomic writes, and locks that make parallel
runs (two checkouts, xdist workers) wait for one writer instead of racing."""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from pathlib import Path
from typing import Iterator

CACHE_DIR_NAME = "aks-ray-kueue"


def cache_root() -> Path:
    """${XDG_CACHE_HOME:-~/.cache}/aks-ray-kueue: tool builds, schemas, seeds, parsed inputs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / CACHE_DIR_NAME


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
