"""The pinned Go tools (Kubernetes, etcd, Kueue, KubeRay, Flux, kustomize, kubeconform, ...),
built from the Go module proxy and cached per version under the XDG cache.

The public names load their module on first use (PEP 562): the gate's entry point finds its cached helper
(`local_binary`) and starts it before the build recipes (which read versions.yaml) are imported."""
from __future__ import annotations

import importlib

# Public name -> module of this package.
_EXPORTS = {
    **{name: "builds" for name in ("CLUSTER_TOOLS", "DEFAULT_TOOLS", "FLUX_TOOLS", "KIND_TOOLS", "STATIC_TOOLS", "GoTool", "ToolBuildError",
                                   "cache_root", "ensure", "go_env", "module_dir", "module_info", "tool")},
    **{name: "lineproc" for name in ("LineProcess", "LineProcessError", "RequestProcess")},
    "local_binary": "local",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value  # looked up once
    return value
