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
RUN_STOP = 60.0       # a harness run (a pytest suite) tears down its clusters after Ctrl-C, before SIGKILL
HTTP_PROBE = 2.0      # one readiness probe
# The cluster, its operators and the watches (harness/cluster, harness/k8s, harness/gitops):
REQUEST = 60.0        # one API request (a list, a server-side apply of a large CRD)
WEBHOOKS_READY = 30.0  # Kueue's webhooks answer the apiserver once Kueue is ready
APISERVER_BACK = 60.0  # Kueue's webhooks answer through a restarted kube-apiserver
CONTROLLER_READY = 60.0  # a Flux controller's /readyz
DEFAULT_NAMESPACE = 20.0  # the `default` namespace after kube-apiserver's /readyz
PROCESS_REAP = 5.0    # a SIGKILLed child reaped
WATCH_SYNC = 30.0     # the first listing of a background watch
WATCH_WINDOW = 10.0   # one watch request; the loop then watches on from the last version seen
WATCH_RETRY = 0.5     # pause before listing again after a broken stream or a refused connection
THREAD_JOIN = 10.0    # a watch thread ends after stop()
SETTLE = 90.0         # Kueue has decided on every job of a report step, and nothing moves
# The scenarios, the report and the tests that run the repository's scripts:
FLUX_BOOTSTRAP = 180.0  # the first reconcile of every Kustomization on a fresh cluster
SCALE_PER_JOB = 0.3   # added to LONG_DECISION per RayJob of the scale scenario
SCALE_PER_JOB_RUN = 2.0  # ... and per RayJob run to its end (8 at a time: pods, result, Finished, the next admitted)
SCRIPT = 120.0        # one of scripts/ run as a subprocess against a cluster
REPORT_RUN = 900.0    # a whole `make report` run, both refs, on a running cluster
DOCKER_PROBE = 30.0   # `docker info`: does a Docker engine answer (the kind backend)
KIND_ROLLOUT = 300.0  # Kueue's Deployment rolled out on a kind cluster
KIND_CREATE = 300.0   # `kind create cluster --wait`: the control plane of a kind cluster Ready
KIND_KUBECTL = 120.0  # one kind or kubectl command against a kind cluster (apply, label, delete)
NODES_READY = 60.0  # KWOK nodes Ready and the node-lifecycle controller's not-ready taint lifted
POD_BOUND = 30.0  # the scheduler binds every pod of an admitted workload (the invariant checker's bound)
SUSPEND_BOUND = 10.0  # Kueue suspends a RayJob whose Workload lost its admission (the invariant checker's bound)
