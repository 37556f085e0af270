"""Reads versions.yaml, the single source of pinned versions, from the repository the harness
works on (REPO_ROOT).

REPO_ROOT is, in this order:
1. $RAY_KUEUE_REPO, when set (it must hold versions.yaml);
2. the checkout this harness was loaded from (a source tree or an editable install), so a run
   from the checkout behaves the same whatever the working directory;
3. the nearest ancestor of the working directory that is a checkout (holds versions.yaml and
   tools/fluxbuild): an installed harness used inside a checkout;
4. otherwise harness/core/repo-snapshot, the part of the repository that the wheel carries: the
   versions.yaml and tools/fluxbuild source it was built from. That is enough for the static
   gate (`ray-kueue-validate REPO_DIR` renders and checks REPO_DIR with these pins, as
   `scripts/validate OTHER_DIR` does with its own checkout's); what needs the rest of a
   checkout (cluster, Flux, report) needs 1 or 3.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import yaml

REPO_ENV = "RAY_KUEUE_REPO"
PACKAGED_REPO = Path(__file__).resolve().with_name("repo-snapshot")


def is_checkout(path: Path) -> bool:
    return (path / "versions.yaml").is_file() and (path / "tools" / "fluxbuild").is_dir()


def find_repo_root(env: dict[str, str] | None = None, cwd: Path | None = None) -> Path:
    """The repository the harness works on (see the module docstring for the order)."""
    env = os.environ if env is None else env
    if env.get(REPO_ENV):
        root = Path(env[REPO_ENV]).expanduser().resolve()
        if not (root / "versions.yaml").is_file():
            raise RuntimeError(f"${REPO_ENV}={env[REPO_ENV]}: no versions.yaml there (it must name a checkout of this repository)")
        return root
    source = Path(__file__).resolve().parents[2]
    if is_checkout(source):
        return source
    here = (cwd or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if is_checkout(candidate):
            return candidate
    return PACKAGED_REPO


REPO_ROOT = find_repo_root()
VERSIONS_FILE = REPO_ROOT / "versions.yaml"


@functools.lru_cache(maxsize=None)
def pins() -> dict:
    with VERSIONS_FILE.open() as fh:
        return yaml.safe_load(fh)


def entry(name: str) -> dict:
    """The pin block of a component; dotted names reach nested ones, e.g. 'flux.source-controller'."""
    block = pins()
    for part in name.split("."):
        block = block[part]
    return block


def module(name: str) -> tuple[str, str]:
    """(module path, version) of a pinned Go component, e.g. module('kueue')."""
    block = entry(name)
    return block["module"], block["version"]


def staging_version(kube_version: str) -> str:
    """k8s.io/kubernetes v1.Y.Z goes with the staging modules v0.Y.Z."""
    return "v0." + kube_version.removeprefix("v1.")
