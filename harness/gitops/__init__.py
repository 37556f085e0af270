"""The GitOps loop on the local cluster: the real source-controller and kustomize-controller,
a local smart-HTTP Git server, and a watch-fed timeline of what they did."""
from harness.gitops.flux import (FLUX_LABELS, GIT_INTERVAL, KUSTOMIZATION, NAMESPACE, ROOT, Fleet, FluxControllers, FluxError,
                                 applied_revision, inventory_id, managed_paths, rendered_paths, set_whole_pool_quota,
                                 value_at)
from harness.gitops.gitserver import GitServer, WorkingCopy, git
from harness.gitops.timeline import Timeline

__all__ = ["FLUX_LABELS", "GIT_INTERVAL", "KUSTOMIZATION", "NAMESPACE", "ROOT", "Fleet", "FluxControllers", "FluxError", "GitServer",
           "Timeline", "WorkingCopy", "applied_revision", "git", "inventory_id", "managed_paths", "rendered_paths",
           "set_whole_pool_quota", "value_at"]
