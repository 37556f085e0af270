"""Reads versions.yaml, the single source of pinned versions."""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
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
