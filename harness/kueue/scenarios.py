"""Every behavioural scenario of the README's table, defined once: its steps and what Kueue
decides (harness.kueue.steps, harness.kueue.expectations). The integration tests run each of them on the chosen backend,
the fault tests run TEAM_QUEUES with a component broken at a named step, and `make report` runs
SINGLE_QUEUE and TEAM_QUEUES against each ref's queue layout (harness/report/scenarios.py).

The team scenarios use RayJobs sized 34 CPU / 264Gi / 4 GPU (FOUR_GPUS): with the sample's own
llm-training (68 CPU for 4 GPUs) CPU runs out before GPUs do (SAMPLE_CPU_FIRST), and the GPU
scenarios would not be exercised.
"""
from __future__ import annotations

from harness.kueue.queues import FOUR_GPUS, Size
from harness.kueue.expectations import (Admitted, Borrows, Kept, LocalQueueUsage, Pending, Preempted, RayClusters, Rejected,
                                        Suspended, SuspendedOnSubmit, Usage)
from harness.kueue.steps import Finish, Scenario, Step, Submit

TEAMS = {"team-a": "team-a-cq", "team-b": "team-b-cq"}  # the teams' LocalQueues and their ClusterQueues
TEAM_A_JOBS = ("a-1", "a-2")
BORROWING = "be admitted (team A borrows B's idle GPUs)"
READMITTED = "be (re-)admitted once B's GPUs are idle again"

PRODUCTION = "prod-eastus2"  # the overlays' base quotas are its Standard_ND96amsr_A100_v4 pool's

SINGLE_QUEUE = Scenario(
    "single-queue", "single-queue back-pressure: one job runs, the next waits", "overlays/single-queue", {"default": "cluster-queue"},
    "train-1 is admitted, train-2 waits for quota; when train-1 is done, train-2 is admitted",
    # The sample llm-training as it ships: head 4 CPU + 4 workers x (16 CPU, 128Gi, 1 GPU) = 68 CPU,
    # 528Gi, 4 GPU. Two of them need 136 CPU against the queue's 94.
    [Step("first", "submit train-1 (the sample llm-training as the ref ships it)", [Submit("llm-training", "train-1", "default")],
          expect=[Admitted("train-1")],
          details=[SuspendedOnSubmit("train-1"), RayClusters(("train-1",), 1, workers=4)]),  # KubeRay creates it
     Step("second", "submit train-2 (the same)", [Submit("llm-training", "train-2", "default")],
          expect=[Pending("train-2", "insufficient", should="wait for quota (back-pressure)"), Kept("train-1")],
          details=[Pending("train-2", "insufficient unused quota for cpu in flavor {default}"),
                   RayClusters(("train-1", "train-2"), 1),  # none for a job Kueue has not admitted
                   Usage("cluster-queue", admitted=1, pending=1, gpus="4", cpu="68"),
                   LocalQueueUsage("default", admitted=1, pending=1)]),
     Step("first-done", "train-1 finishes", [Finish("train-1")],  # its quota is free again
          expect=[Admitted("train-2", should="be admitted once train-1 is done")],
          details=[Usage("cluster-queue", admitted=1, pending=0)])],
    cluster=PRODUCTION)

TEAM_QUEUES = Scenario(
    "team-queues", "team-queues borrow and reclaim", "overlays/team-queues", TEAMS,
    "A's two jobs are admitted by borrowing B's idle GPUs; when B submits, one of A's jobs is preempted "
    "(InCohortReclamation) and B is admitted; when B is done, A's job is re-admitted",
    [Step("borrow", "team A submits a-1 and a-2 (4 GPU, 34 CPU each) while B idles",
          [Submit("llm-training", "a-1", "team-a", FOUR_GPUS), Submit("llm-training", "a-2", "team-a", FOUR_GPUS)],
          expect=[Admitted("a-1", BORROWING), Admitted("a-2", BORROWING), Borrows("team-a-cq")],
          details=[Usage("team-a-cq", gpus="8", borrowed="4", admitted=2, pending=0), RayClusters(TEAM_A_JOBS, 2)]),
     # Kueue reclaims B's lent GPUs by evicting one of A's workloads (either: both are equal and
     # were admitted within the same second), suspends that RayJob and admits B.
     Step("reclaim", "team B submits b-1 (4 GPU, 34 CPU)", [Submit("batch-inference", "b-1", "team-b", FOUR_GPUS)],
          expect=[Preempted(TEAM_A_JOBS, "InCohortReclamation", of="team A's jobs", roles=("victim", "survivor")),
                  Admitted("b-1", "be admitted on team B's guaranteed GPUs")],
          details=[Kept("survivor", "keep running (A's workload within its guarantee)"),
                   Usage("team-b-cq", gpus="4", borrowed="0", admitted=1, pending=0),
                   # Both busy: each team holds exactly its 4, nobody borrows; A's evicted job waits.
                   Pending("victim"),
                   Usage("team-a-cq", gpus="4", borrowed="0", admitted=1, pending=1),
                   Suspended("victim"),
                   RayClusters(("victim", "survivor", "b-1"), 2)]),  # the victim's deleted
     Step("readmit", "b-1 finishes", [Finish("b-1")],
          expect=[Admitted("a-1", READMITTED), Admitted("a-2", READMITTED)],
          details=[Usage("team-a-cq", gpus="8", borrowed="4", admitted=2, pending=0), Usage("team-b-cq", gpus="0", admitted=0),
                   RayClusters(TEAM_A_JOBS, 2)])],
    cluster=PRODUCTION)

SAMPLE_CPU_FIRST = Scenario(
    "sample-cpu-first", "team-queues with the sample's own llm-training: CPU runs out first", "overlays/team-queues", TEAMS,
    "llm-1 is admitted with 21 CPU borrowed; llm-2 waits for CPU in flavor default, not for GPUs",
    [Step("first", "team A submits llm-1 (the sample llm-training as it ships)", [Submit("llm-training", "llm-1", "team-a")],
          expect=[Admitted("llm-1")]),  # 68 CPU: 47 guaranteed + 21 borrowed
     Step("second", "team A submits llm-2 (the same)", [Submit("llm-training", "llm-2", "team-a")],
          expect=[Pending("llm-2", "insufficient unused quota for cpu in flavor {default}", should="wait for CPU")],
          details=[Usage("team-a-cq", cpu_borrowed="21", gpus="4", borrowed="0")])],
    cluster=PRODUCTION)

# Team B uses its whole share, so team A has nothing to borrow and must choose within itself.
B_BUSY = Step("b-busy", "team B submits b-busy (4 GPU): its whole share", [Submit("batch-inference", "b-busy", "team-b", FOUR_GPUS)],
              expect=[Admitted("b-busy")])


def _team_a_submits(priority: str, expect: list, details: list = ()) -> Step:
    """Step `priority`: team A submits a-<priority> (4 GPU) with that WorkloadPriorityClass."""
    job = f"a-{priority}"
    return Step(priority, f"team A submits {job} (priority {priority})",
                [Submit("llm-training", job, "team-a", FOUR_GPUS, priority)], expect=expect, details=list(details))


HIGH_PREEMPTS_LOW = Scenario(
    "high-preempts-low", "high vs low priority in one team: high preempts low", "overlays/team-queues", TEAMS,
    "a-high preempts a-low (InClusterQueue) and is admitted; team B within its guarantee keeps running",
    [B_BUSY, _team_a_submits("low", [Admitted("a-low")]),
     _team_a_submits("high", [Preempted(("a-low",), "InClusterQueue"), Admitted("a-high"),
                              Kept("b-busy", "keep running (team B within its guarantee is never preempted by A)")],
                     details=[Suspended("a-low")])],  # the state's "suspended" is read once KubeRay is done
    cluster=PRODUCTION)

LOW_NEVER_PREEMPTS_HIGH = Scenario(
    "low-never-preempts-high", "high vs low priority in one team: low never preempts high", "overlays/team-queues", TEAMS,
    "a-low waits; a-high keeps running",
    [B_BUSY, _team_a_submits("high", [Admitted("a-high")]), _team_a_submits("low", [Pending("a-low"), Kept("a-high")])],
    cluster=PRODUCTION)

NO_LOCAL_QUEUE = Scenario(
    "no-local-queue", "queue label names no LocalQueue", "overlays/team-queues", TEAMS,
    "the Workload stays pending: LocalQueue team-c doesn't exist",
    [Step("submit", "submit lost to team-c, which has no LocalQueue", [Submit("batch-inference", "lost", "team-c")],
          expect=[Pending("lost", "LocalQueue team-c doesn't exist", should="wait for its LocalQueue")])],
    cluster=PRODUCTION)

KEEPS_CLUSTER_REJECTED = Scenario(
    "keeps-cluster-rejected", "shutdownAfterJobFinishes: false", "overlays/team-queues", TEAMS,
    "Kueue's RayJob webhook rejects it",
    [Step("submit", "submit keeps-cluster with shutdownAfterJobFinishes: false",
          [Submit("batch-inference", "keeps-cluster", "team-a", spec={"shutdownAfterJobFinishes": False}, refused=True)],
          expect=[Rejected("keeps-cluster", "a kueue managed job should delete the cluster after finishing")])],
    cluster=PRODUCTION)

TOO_BIG = Scenario(
    "too-big", "more GPUs than the queue can ever hold", "overlays/team-queues", TEAMS,
    "the Workload stays pending: insufficient quota for nvidia.com/gpu",
    # 10 GPUs: more than team A's 4 guaranteed + 4 borrowable.
    [Step("submit", "team A submits too-big (10 GPU)",
          [Submit("llm-training", "too-big", "team-a", Size(workers=10, worker_cpu="4", worker_memory="32Gi"))],
          expect=[Pending("too-big", "insufficient quota for nvidia.com/gpu in flavor {gpu}", should="never be admitted")])],
    cluster=PRODUCTION)

# A submitter container asking for more CPU than its limit: the apiserver, Kueue's webhook and KubeRay
# accept the RayJob; Kueue's scheduler finds its Workload inadmissible (the gate's kueue-inadmissible).
OVER_LIMITS_SUBMITTER = {"submitterPodTemplate": {"spec": {"restartPolicy": "Never", "containers": [{
    "name": "ray-job-submitter", "image": "mcr.microsoft.com/azurelinux/busybox:1.36",
    "resources": {"requests": {"cpu": "1", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}}]}}}

REQUESTS_OVER_LIMITS = Scenario(
    "requests-over-limits", "a container's requests above its limits", "overlays/team-queues", TEAMS,
    "the Workload stays pending: resources validation failed",
    [Step("submit", "team A submits over-limits, whose submitter requests 1 CPU with a 500m limit",
          [Submit("batch-inference", "over-limits", "team-a", spec=OVER_LIMITS_SUBMITTER)],
          expect=[Pending("over-limits", "resources validation failed", should="never be admitted")])],
    cluster=PRODUCTION)

SCENARIOS = [SINGLE_QUEUE, TEAM_QUEUES, SAMPLE_CPU_FIRST, HIGH_PREEMPTS_LOW, LOW_NEVER_PREEMPTS_HIGH, NO_LOCAL_QUEUE,
             KEEPS_CLUSTER_REJECTED, TOO_BIG, REQUESTS_OVER_LIMITS]
