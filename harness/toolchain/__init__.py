"""The pinned Go tools (Kubernetes, etcd, Kueue, KubeRay, Flux, kustomize, kubeconform, ...),
built from the Go module proxy and cached per version under the XDG cache."""
from harness.toolchain.builds import (CLUSTER_TOOLS, DEFAULT_TOOLS, FLUX_TOOLS, KIND_TOOLS, STATIC_TOOLS, GoTool, ToolBuildError, cache_root,
                                      ensure, go_env, module_dir, module_info, tool)
from harness.toolchain.lineproc import LineProcess, LineProcessError, RequestProcess

__all__ = ["CLUSTER_TOOLS", "DEFAULT_TOOLS", "FLUX_TOOLS", "KIND_TOOLS", "STATIC_TOOLS", "GoTool", "LineProcess", "LineProcessError", "RequestProcess", "ToolBuildError", "cache_root", "ensure",
           "go_env", "module_dir", "module_info", "tool"]
