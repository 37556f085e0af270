"""single-queue: back-pressure on one ClusterQueue. One workload runs, the next waits
(harness.kueue.scenarios.SINGLE_QUEUE; every step's expectations are awaited)."""
from __future__ import annotations

import pytest

from harness.kueue import scenarios

pytestmark = pytest.mark.integration


def test_one_runs_the_next_waits_then_runs(scenario):
    result = scenario(scenarios.SINGLE_QUEUE)
    first = result["first"].state
    assert first["train-1"]["admitted"] and first["train-1"]["rayclusters"] == 1, first

    # Two of the sample's llm-training need 136 CPU against the queue's 94: the second waits.
    second = result["second"].state
    assert second["train-1"]["admitted"], second
    train_2 = second["train-2"]
    assert (train_2["workloads"], train_2["admitted"], train_2["suspended"], train_2["rayclusters"]) == (1, False, True, 0), second
    assert second["cluster-queue"] == {"gpu": "4", "borrowed": "0", "admitted": 1, "pending": 1}, second

    # The first finishing (its RayJob goes away) frees the quota; Kueue admits the second.
    done = result["first-done"].state
    assert "train-1" not in done and done["train-2"]["admitted"], done
    assert done["cluster-queue"]["admitted"] == 1 and done["cluster-queue"]["pending"] == 0, done
