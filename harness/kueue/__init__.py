"""Kueue behaviour: the queue layouts applied to a cluster, RayJobs sized for the scenarios,
the waits on Kueue's decisions, the invariant checker and the scale scenario."""
from harness.kueue.invariants import InvariantChecker
from harness.kueue.queues import (CLUSTER_QUEUE, FOUR_GPUS, LOCAL_QUEUE, PRIORITY_LABEL, RAYCLUSTER, RAYJOB, WORKLOAD,
                                  Queues, Size, flavor_usage, rayjob)

__all__ = ["CLUSTER_QUEUE", "FOUR_GPUS", "LOCAL_QUEUE", "PRIORITY_LABEL", "RAYCLUSTER", "RAYJOB", "WORKLOAD",
           "InvariantChecker", "Queues", "Size", "flavor_usage", "rayjob"]
