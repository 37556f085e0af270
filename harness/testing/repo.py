"""Throwaway copies of the repository's configuration, for tests that break it on purpose."""
from __future__ import annotations

import shutil
from pathlib import Path

from harness.core import REPO_ROOT

# What a checkout of this repository needs for the gate; the harness itself is not copied.
CONFIG_PATHS = ("base", "overlays", "components", "clusters", "flux", "workloads", "terraform", "versions.yaml", ".sourceignore")


def copy_config(dest: Path, root: Path = REPO_ROOT) -> Path:
    """Copies CONFIG_PATHS of `root` into the new directory `dest`; returns `dest`."""
    dest.mkdir(parents=True)
    for rel in CONFIG_PATHS:
        src = root / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel)
        elif src.exists():
            shutil.copy2(src, dest / rel)
    return dest
