"""Flux paths from the Git root: a Flux Kustomization's spec.path, the `path` of a kustomization of Terraform's
azurerm_kubernetes_flux_configuration and `flux bootstrap --path` are relative to the root of the GitRepository's
artifact, i.e. the Git root. The checked tree may be a subdirectory of its Git work tree (a monorepo's platform/): its
`prefix` (entry.in_git, computed once per run by the render session, render.FluxBuild.prefix) is "" at the Git root or
outside Git, where nothing changes. A path into the prefix is the checked tree's directory; one outside it (another
directory of the monorepo) is no directory the gate checks (flux-path-outside when it exists, flux-path when not)."""
from __future__ import annotations

import posixpath


def flux_path(value, prefix: str = "") -> str:
    """A Flux path as a directory relative to the checked tree. kustomize-controller joins it under the artifact's
    root (securejoin): "./a", "a" and "/a" are one directory, and ".." stops at the root; a directory outside the
    checked tree (`prefix` of the Git work tree) starts with "../" (`outside`)."""
    return posixpath.relpath(posixpath.normpath("/" + str(value)), "/" + prefix)


def outside(rel: str) -> bool:
    """Whether `rel`, a flux_path, lies outside the checked tree."""
    return rel == ".." or rel.startswith("../")


def written(rel: str, prefix: str = "") -> str:
    """How a Flux path to the checked tree's directory `rel` is written: from the Git root, with "./" (what flux_path reads)."""
    joined = posixpath.normpath(posixpath.join(prefix, rel))
    return "./" if joined == "." else f"./{joined}"
