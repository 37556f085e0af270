"""What a scenario's steps expect of Kueue, in the manner of Kueue's test/util
(ExpectWorkloadsToBeAdmitted, ...): each expectation waits, watch-driven and bounded, until it
holds on the cluster (`wait`, for the tests), and those a step lists in `expect` also judge a
recorded StepResult (`judge`, for the report, which runs other refs' layouts and cannot wait for
an outcome that may never come).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from harness.core import parse_quantity
from harness.k8s import condition, is_true, summary
from harness.kueue.queues import Queues

if TYPE_CHECKING:
    from harness.kueue.steps import ScenarioRun


# -- what one step showed, as recorded (the report's view) ---------------------------------------
@dataclass
class StepResult:
    title: str
    t_start: float
    t_end: float
    # job -> (state, detail) when the step settled; an admitted job's detail says why it does not run
    # (its pods not bound within timeouts.POD_BOUND, KubeRay refused it: harness.kueue.placement), "" when it runs
    jobs: dict[str, tuple[str, str]]
    queue_of: dict[str, str]  # job -> LocalQueue
    admitted: list[str]  # jobs admitted during the step
    preempted: list[tuple[str, str]]  # (job, reason) preempted or evicted during the step
    usage: dict[str, tuple[Decimal, Decimal]]  # ClusterQueue -> (GPUs held, GPUs borrowed) when settled
    not_finished: list[tuple[str, str]] = field(default_factory=list)  # (job, why) a finish step found not running

    def outcome(self) -> list[str]:
        """What is compared between refs (no names of interchangeable jobs)."""
        lines = []
        for queue in sorted(set(self.queue_of.values())):
            states = Counter()
            for job, q in self.queue_of.items():
                if q == queue:
                    state, detail = self.jobs.get(job, ("no-workload", ""))
                    states[f"pending ({short_reason(detail)})" if state == "pending" else
                           f"admitted but not running: {detail}" if state == "admitted" and detail else
                           f"evicting ({detail})" if state == "evicting" and detail else state] += 1
            lines.append(f"{queue}: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
        for (queue, reason), n in sorted(Counter((self.queue_of.get(j, "?"), r) for j, r in self.preempted).items()):
            lines.append(f"{n} preempted on {queue} ({reason})")
        for cq, (total, borrowed) in sorted(self.usage.items()):
            lines.append(f"{cq} holds {total:f} GPU" + (f" ({borrowed:f} borrowed)" if borrowed else ""))
        for job, why in self.not_finished:
            lines.append(f"{job} not finished: {why}")
        return lines


def short_reason(message: str) -> str:
    """Kueue's pending message without the numbers that change with every quota."""
    m = re.search(r"insufficient (unused )?quota for (\S+) in flavor ([^\s,;]+)", message)
    if m:
        return f"insufficient {m.group(1) or ''}quota for {m.group(2)} in flavor {m.group(3)}"
    return message.split(";")[0][:100]


# -- expectations ---------------------------------------------------------------------------------
class Expectation:
    """What Kueue (or the queues' status, or KubeRay) shows once a step's actions are done."""

    def wait(self, run: ScenarioRun) -> None:
        """Waits (watch-driven, bounded) until it holds; raises AssertionError / WaitTimeout."""
        raise NotImplementedError

    def judge(self, seen: StepResult, roles: dict[str, str]) -> str | None:
        """The recorded step against it: None if it holds, else what a reviewer reads."""
        raise NotImplementedError


def judged(e: Expectation) -> bool:
    return type(e).judge is not Expectation.judge


def _is(seen: StepResult, job: str, state: str, should: str, because: str = "") -> str | None:
    now, detail = seen.jobs.get(job, ("no-workload", ""))
    if now == state == "admitted" and detail:
        return f"{job} should {should}, is admitted but does not run: {detail}"
    if now == state and because in detail:
        return None
    return f"{job} should {should}, is {now} {detail}".rstrip()


class _Flavors(dict):
    """"{gpu}" in an expected message: the run's name of flavor gpu (the repository's when recorded)."""

    def __init__(self, queues: Queues | None):
        super().__init__()
        self.queues = queues

    def __missing__(self, flavor: str) -> str:
        return self.queues.names.flavor(flavor) if self.queues else flavor


@dataclass(frozen=True)
class Admitted(Expectation):
    """Kueue admits the job's Workload and unsuspends its RayJob."""
    job: str
    should: str = "be admitted"

    def wait(self, run):
        run.queues.wait_admitted(run.name(self.job))

    def judge(self, seen, roles):
        return _is(seen, roles.get(self.job, self.job), "admitted", self.should)


@dataclass(frozen=True)
class Kept(Expectation):
    """The job's Workload is admitted now and was not evicted: nothing preempted it."""
    job: str
    should: str = "keep running"

    def wait(self, run):
        name = run.name(self.job)
        wl = run.queues.workload(name)
        assert is_true(wl, "Admitted") and not is_true(wl, "Evicted"), f"{name} should {self.should}: {summary(wl)}"

    def judge(self, seen, roles):
        return _is(seen, roles.get(self.job, self.job), "admitted", self.should)


@dataclass(frozen=True)
class Pending(Expectation):
    """Kueue reserves no quota (QuotaReserved=False, its message containing `because`, in which
    {flavor} stands for the run's name of that flavor); the RayJob stays suspended."""
    job: str
    because: str = ""
    should: str = "wait for quota"

    def wait(self, run):
        wl = run.queues.wait_pending(run.name(self.job))
        message = condition(wl, "QuotaReserved")["message"]
        assert self.because.format_map(_Flavors(run.queues)) in message, message

    def judge(self, seen, roles):
        return _is(seen, roles.get(self.job, self.job), "pending", self.should, self.because.format_map(_Flavors(None)))


@dataclass(frozen=True)
class Preempted(Expectation):
    """Kueue preempts exactly one of `among` (any: they are equal) with `reason`, and suspends
    its RayJob. `roles` name the one preempted and then the others, for later expectations."""
    among: tuple[str, ...]
    reason: str
    of: str = ""  # how a reviewer calls `among` ("team A's jobs")
    roles: tuple[str, ...] = ()

    def wait(self, run):
        names = [run.name(j) for j in self.among]
        victim, wl = run.queues.wait_one_evicted(names)
        preempted = condition(wl, "Preempted")
        assert preempted and preempted["status"] == "True" and preempted["reason"] == self.reason, preempted
        assert (condition(wl, "Evicted") or {}).get("reason") == "Preempted", condition(wl, "Evicted")
        run.roles.update(self._roles(victim, names))

    def judge(self, seen, roles):
        names = [roles.get(j, j) for j in self.among]
        hits = [(j, r) for j, r in seen.preempted if j in names]
        if len(hits) == 1 and hits[0][1] == self.reason:
            roles.update(self._roles(hits[0][0], names))
            return None
        return f"exactly one of {self.of or ', '.join(self.among)} should be preempted with reason {self.reason}, " \
               f"preempted: {hits or 'none'}"

    def _roles(self, victim: str, names: list[str]) -> dict[str, str]:
        return dict(zip(self.roles, [victim, *(n for n in names if n != victim)]))


@dataclass(frozen=True)
class Borrows(Expectation):
    """The ClusterQueue borrows GPUs from its cohort."""
    cluster_queue: str

    def wait(self, run):
        q = run.queues
        q.wait_cluster_queue(run.bound(self.cluster_queue), lambda c: parse_quantity(q.gpus(c, "borrowed")) > 0, "borrows GPUs")

    def judge(self, seen, roles):
        borrowed = seen.usage.get(self.cluster_queue, (0, 0))[1]
        return None if borrowed > 0 else f"{self.cluster_queue} should borrow GPUs, borrows {borrowed}"


@dataclass(frozen=True)
class Usage(Expectation):
    """A ClusterQueue's status: GPUs (and CPU) in use and borrowed, Workloads admitted and pending."""
    cluster_queue: str
    gpus: str | None = None
    borrowed: str | None = None
    cpu: str | None = None
    cpu_borrowed: str | None = None
    admitted: int | None = None
    pending: int | None = None

    def wait(self, run):
        q = run.queues
        want = {k: v for k, v in vars(self).items() if k != "cluster_queue" and v is not None}

        def now(c: dict) -> dict:
            status = c.get("status") or {}
            return {"gpus": q.gpus(c), "borrowed": q.gpus(c, "borrowed"), "cpu": q.usage(c, "default", "cpu"),
                    "cpu_borrowed": q.usage(c, "default", "cpu", "borrowed"),
                    "admitted": status.get("admittedWorkloads", 0), "pending": status.get("pendingWorkloads", 0)}

        q.wait_cluster_queue(run.bound(self.cluster_queue), lambda c: all(now(c)[k] == v for k, v in want.items()),
                             ", ".join(f"{k} {v}" for k, v in want.items()))


@dataclass(frozen=True)
class LocalQueueUsage(Expectation):
    """A LocalQueue's status: its Workloads admitted and pending."""
    local_queue: str
    admitted: int
    pending: int

    def wait(self, run):
        counts = lambda lq: ((lq.get("status") or {}).get("admittedWorkloads"), (lq.get("status") or {}).get("pendingWorkloads"))  # noqa: E731
        run.queues.wait_local_queue(run.bound(self.local_queue), lambda lq: counts(lq) == (self.admitted, self.pending),
                                    f"{self.admitted} admitted, {self.pending} pending")


@dataclass(frozen=True)
class RayClusters(Expectation):
    """KubeRay runs `count` RayClusters for these jobs (none for a job Kueue has not admitted or
    has suspended), each with `workers` worker replicas if given."""
    jobs: tuple[str, ...]
    count: int
    workers: int | None = None

    def wait(self, run):
        def holds(owned: list[dict]) -> bool:
            return len(owned) == self.count and (self.workers is None or all(
                c["spec"]["workerGroupSpecs"][0]["replicas"] == self.workers for c in owned))

        run.queues.wait_rayclusters([run.name(j) for j in self.jobs], holds,
                                    f"{self.count}" + (f" with {self.workers} workers" if self.workers else ""))


@dataclass(frozen=True)
class Suspended(Expectation):
    """KubeRay has finished suspending the RayJob (jobDeploymentStatus Suspended)."""
    job: str

    def wait(self, run):
        run.queues.wait_job(run.name(self.job), lambda j: (j.get("status") or {}).get("jobDeploymentStatus") == "Suspended",
                            "jobDeploymentStatus Suspended (KubeRay finished suspending it)")


@dataclass(frozen=True)
class SuspendedOnSubmit(Expectation):
    """Kueue's webhook suspended the RayJob as it was created (the object the create returned)."""
    job: str

    def wait(self, run):
        created = run.created[self.job]
        assert created["spec"].get("suspend") is True, f"RayJob {self.job} was created unsuspended: {summary(created)}"


@dataclass(frozen=True)
class Rejected(Expectation):
    """The apiserver refused the RayJob (Kueue's webhook), saying `says`; nothing was created."""
    job: str
    says: str

    def wait(self, run):
        err = run.refusals.get(self.job)
        assert err is not None, f"RayJob {self.job} was accepted"
        assert err.status in (400, 403, 422), err
        assert self.says in str(err.body), err.body
        assert run.queues.job(self.job) is None

    def judge(self, seen, roles):
        return _is(seen, self.job, "no-workload", f"be refused ({self.says})")
