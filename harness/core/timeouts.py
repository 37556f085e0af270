"""Every bound the harness and its tests wait with, named once (in the manner of Kueue's
test/util Timeout/Interval). Waits are watch-driven: these are upper bounds, not sleeps."""
from __future__ import annotations

DECISION = 60.0       # Kueue admits, preempts or requeues a Workload; KubeRay follows a suspend
LONG_DECISION = 120.0  # a decision behind a restart or many pending Workloads
CLUSTER_START = 90.0  # the embedded control plane with Kueue and KubeRay ready
FLUX_RECONCILE = 120.0  # a pushed commit applied by source- and kustomize-controller
CRDS_ESTABLISHED = 120.0
SETTLE_QUIET = 3.0    # no change in this long counts as settled (report timelines)
PROCESS_STOP = 10.0   # SIGTERM to SIGKILL
HTTP_PROBE = 2.0      # one readiness probe
