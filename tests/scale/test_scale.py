"""The scale scenario at N=100 on its own embedded cluster with the production cluster's pool nodes
(make bench-scale measures 100, 500 and 1000): Kueue decides on every Workload, the end state is
the one the queues promise; then every job runs to its end on the nodes, eight at a time (3 pods
each, bound by kube-scheduler, run by KWOK); the invariant checker held on every event (every pod
of an admitted workload bound within its bound), and its watches lost nothing."""
from __future__ import annotations

import pytest

from harness.kueue import scale

pytestmark = pytest.mark.scale

N = 100


def test_hundred_rayjobs_over_two_teams_and_two_priorities(fresh_cluster):
    result = scale.run(fresh_cluster, N)
    assert result.violations == [], result.violations
    assert result.lost_events == [], f"the harness's watches fell behind: {result.lost_events}"
    # Kueue's decision: each team holds exactly its own 4 GPUs, only high-priority jobs run.
    assert result.gpus == {"team-a-cq": "4", "team-b-cq": "4"}, result
    assert result.borrowed == {"team-a-cq": "0", "team-b-cq": "0"}, result
    assert result.admitted == {"team-a-cq": 4, "team-b-cq": 4}, result
    assert result.pending == {"team-a-cq": N // 2 - 4, "team-b-cq": N // 2 - 4}, result
    assert result.admitted_low == 0, result
    # The checker followed every object and holds no more than there are (bounded memory).
    assert result.watched_workloads == N
    assert result.events >= 2 * N, f"only {result.events} events for {N} RayJobs and their Workloads"
    # Every job ran to its end: its head, worker and submitter ran, its result was reported, Kueue
    # finished its Workload and admitted the next; never more jobs' pods at once than 8 GPUs admit.
    assert result.finished == N, result
    assert result.pods >= 3 * N, f"{result.pods} pods for {N} RayJobs (head, worker, submitter each)"
    assert result.peak_pods <= 3 * 8 * 2, f"{result.peak_pods} pods at once: more than 8 running jobs' (and their going) pods"
