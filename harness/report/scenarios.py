"""The behavioural scenarios of the report: this tree's scenarios, run on the real Kueue against
each ref's queue layout (the overlay rendered from that ref).

A scenario is a list of steps (submit, finish); after each step the run waits until Kueue has
settled (harness.report.recorder) and records every job's state. The outcome of a step is what
a reviewer compares: per LocalQueue how many jobs are admitted or pending (and why), who was
preempted and why, and the GPUs each ClusterQueue holds and borrows. Names of equal jobs are
left out of the outcome because Kueue may preempt either of them.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Callable

from kubernetes import client

from harness.cluster import Names
from harness.k8s import Kube, WaitTimeout, apply_order, is_true
from harness.core import say
from harness.core import parse_quantity
from harness.gate import RenderError, build_directory
from harness.report import ReportInputError
from harness.report.recorder import Recorder, Recording
from harness.kueue import RAYJOB, WORKLOAD, Queues, Size, rayjob

GPU = "nvidia.com/gpu"
# 34 CPU / 264Gi / 4 GPU: with the sample's own 68 CPU, CPU runs out before GPUs do
# (tests/integration/test_team_queues.py), and the GPU scenario would not be exercised.
FOUR_GPUS = Size(workers=4, worker_cpu="8", worker_memory="64Gi", head_cpu="2", head_memory="8Gi")


# -- results --------------------------------------------------------------------------------------
@dataclass
class StepResult:
    title: str
    t_start: float
    t_end: float
    jobs: dict[str, tuple[str, str]]  # job -> (state, detail) when the step settled
    queue_of: dict[str, str]  # job -> LocalQueue
    admitted: list[str]  # jobs admitted during the step
    preempted: list[tuple[str, str]]  # (job, reason) preempted or evicted during the step
    usage: dict[str, tuple[Decimal, Decimal]]  # ClusterQueue -> (GPUs held, GPUs borrowed) when settled

    def outcome(self) -> list[str]:
        """What is compared between refs (no names of interchangeable jobs)."""
        lines = []
        for queue in sorted(set(self.queue_of.values())):
            states = Counter()
            for job, q in self.queue_of.items():
                if q == queue:
                    state, detail = self.jobs.get(job, ("no-workload", ""))
                    states[state if state != "pending" else f"pending ({short_reason(detail)})"] += 1
            lines.append(f"{queue}: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
        for (queue, reason), n in sorted(Counter((self.queue_of.get(j, "?"), r) for j, r in self.preempted).items()):
            lines.append(f"{n} preempted on {queue} ({reason})")
        for cq, (total, borrowed) in sorted(self.usage.items()):
            lines.append(f"{cq} holds {total:f} GPU" + (f" ({borrowed:f} borrowed)" if borrowed else ""))
        return lines


@dataclass
class ScenarioResult:
    scenario: str
    ref: str
    layout: str
    steps: list[StepResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # the scenario's expectations that did not hold
    error: str = ""  # the run could not finish (e.g. Kueue did not settle)
    missing_layout: bool = False
    recording: Recording | None = None
    cluster_queues: list[str] = field(default_factory=list)  # repository names, in layout order
    nominal_gpus: dict[str, float] = field(default_factory=dict)  # ClusterQueue -> GPU nominal quota

    @property
    def passed(self) -> bool:
        return not self.failures and not self.error and not self.missing_layout

    def verdict(self) -> str:
        if self.missing_layout:
            return f"n/a ({self.layout} not in this ref)"
        if self.error:
            return "did not finish"
        return "holds" if self.passed else "does not hold"

    def outcome(self) -> list[list[str]]:
        return [s.outcome() for s in self.steps]


def short_reason(message: str) -> str:
    """Kueue's pending message without the numbers that change with every quota."""
    m = re.search(r"insufficient (unused )?quota for (\S+) in flavor ([^\s,;]+)", message)
    if m:
        return f"insufficient {m.group(1) or ''}quota for {m.group(2)} in flavor {m.group(3)}"
    return message.split(";")[0][:100]


# -- scenarios ------------------------------------------------------------------------------------
@dataclass
class Step:
    title: str
    action: Callable[["Run"], None]


@dataclass
class Scenario:
    name: str
    title: str
    layout: str  # overlay directory, rendered from each ref
    cluster_queues: list[str]
    expectation: str
    steps: list[Step]
    check: Callable[[list[StepResult]], list[str]]  # -> expectations that failed


class Run:
    """What a step can do: submit this tree's sized sample RayJobs and let them finish."""

    def __init__(self, queues: Queues):
        self.queues = queues
        self.queue_of: dict[str, str] = {}
        self.finished: set[str] = set()

    def submit(self, sample: str, name: str, queue: str, size: Size | None = None) -> None:
        self.queues.submit(rayjob(sample, name, queue, size, namespace=self.queues.names.namespace))
        self.queue_of[name] = queue

    def finish(self, name: str) -> None:
        self.queues.delete(name)  # without a kubelet, a job "finishing" is its RayJob going away
        self.finished.add(name)

    @property
    def live(self) -> list[str]:
        return [j for j in self.queue_of if j not in self.finished]


def _state(step: StepResult, job: str) -> str:
    return step.jobs.get(job, ("no-workload", ""))[0]


def _check_single_queue(steps: list[StepResult]) -> list[str]:
    fails = []
    if _state(steps[0], "train-1") != "admitted":
        fails.append(f"{steps[0].title}: train-1 should be admitted, is {_state(steps[0], 'train-1')}")
    s = steps[1]
    if _state(s, "train-2") != "pending" or "insufficient" not in s.jobs["train-2"][1]:
        fails.append(f"{s.title}: train-2 should wait for quota (back-pressure), is {_state(s, 'train-2')} {s.jobs['train-2'][1]}".rstrip())
    if _state(s, "train-1") != "admitted":
        fails.append(f"{s.title}: train-1 should keep running, is {_state(s, 'train-1')}")
    if _state(steps[2], "train-2") != "admitted":
        fails.append(f"{steps[2].title}: train-2 should be admitted once train-1 is done, is {_state(steps[2], 'train-2')}")
    return fails


def _check_team_queues(steps: list[StepResult]) -> list[str]:
    fails = []
    s = steps[0]
    for job in ("a-1", "a-2"):
        if _state(s, job) != "admitted":
            fails.append(f"{s.title}: {job} should be admitted (team A borrows B's idle GPUs), is {_state(s, job)}")
    if s.usage.get("team-a-cq", (0, 0))[1] <= 0:
        fails.append(f"{s.title}: team-a-cq should borrow GPUs, borrows {s.usage.get('team-a-cq', (0, 0))[1]}")
    s = steps[1]
    reclaimed = [(j, r) for j, r in s.preempted if j in ("a-1", "a-2")]
    if len(reclaimed) != 1 or reclaimed[0][1] != "InCohortReclamation":
        fails.append(f"{s.title}: exactly one of team A's jobs should be preempted with reason InCohortReclamation, "
                     f"preempted: {reclaimed or 'none'}")
    if _state(s, "b-1") != "admitted":
        fails.append(f"{s.title}: b-1 should be admitted on team B's guaranteed GPUs, is {_state(s, 'b-1')} {s.jobs['b-1'][1]}".rstrip())
    s = steps[2]
    for job in ("a-1", "a-2"):
        if _state(s, job) != "admitted":
            fails.append(f"{s.title}: {job} should be (re-)admitted once B's GPUs are idle again, is {_state(s, job)}")
    return fails


SCENARIOS = [
    Scenario(
        "single-queue", "single-queue back-pressure: one job runs, the next waits", "overlays/single-queue", ["cluster-queue"],
        "train-1 is admitted, train-2 waits for quota; when train-1 is done, train-2 is admitted",
        [Step("submit train-1 (sample llm-training: 68 CPU, 4 GPU)", lambda r: r.submit("llm-training", "train-1", "default")),
         Step("submit train-2 (the same)", lambda r: r.submit("llm-training", "train-2", "default")),
         Step("train-1 finishes", lambda r: r.finish("train-1"))],
        _check_single_queue),
    Scenario(
        "team-queues", "team-queues borrow and reclaim", "overlays/team-queues", ["team-a-cq", "team-b-cq"],
        "A's two jobs are admitted by borrowing B's idle GPUs; when B submits, one of A's jobs is preempted "
        "(InCohortReclamation) and B is admitted; when B is done, A's job is re-admitted",
        [Step("team A submits a-1 and a-2 (4 GPU, 34 CPU each) while B idles",
              lambda r: (r.submit("llm-training", "a-1", "team-a", FOUR_GPUS), r.submit("llm-training", "a-2", "team-a", FOUR_GPUS))),
         Step("team B submits b-1 (4 GPU, 34 CPU)", lambda r: r.submit("batch-inference", "b-1", "team-b", FOUR_GPUS)),
         Step("b-1 finishes", lambda r: r.finish("b-1"))],
        _check_team_queues),
]


def by_name(names: list[str] | None) -> list[Scenario]:
    if not names:
        return list(SCENARIOS)
    known = {s.name: s for s in SCENARIOS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ReportInputError(f"unknown scenario(s) {', '.join(unknown)} (have: {', '.join(known)})")
    return [known[n] for n in names]


# -- running --------------------------------------------------------------------------------------
def render_layout(root: Path, ref: str, layout: str) -> list[dict] | None:
    """The layout's objects as rendered from `ref`'s tree; None when that ref has no such overlay."""
    if not (root / layout / "kustomization.yaml").exists():
        return None
    try:
        return build_directory(root, layout)
    except RenderError as err:
        raise ReportInputError(f"{ref}: {layout}/kustomization.yaml does not render (rule kustomize-build): {err}") from None


class ScenarioRunner:
    """Runs scenarios on one cluster: apply a ref's layout, run, delete everything, wait until gone."""

    def __init__(self, api_client: client.ApiClient, names: Names | None = None, timeout: float = 90, quiet: float = 3.0):
        self.api_client = api_client
        self.kube = Kube(api_client)
        self.names = names or Names()
        self.queues = Queues(self.kube, self.names, timeout=timeout)
        self.timeout, self.quiet = timeout, quiet

    def layout_objects(self, root: Path, ref: str, layout: str) -> list[dict] | None:
        objs = render_layout(root, ref, layout)
        return None if objs is None else apply_order([self.names.localize(o) for o in objs])

    def run(self, scenario: Scenario, root: Path, ref: str) -> ScenarioResult:
        result = ScenarioResult(scenario.name, ref, scenario.layout)
        objs = self.layout_objects(root, ref, scenario.layout)
        if objs is None:
            result.missing_layout = True
            return result
        say("report", f"{ref}: scenario {scenario.name} on {scenario.layout}")
        self.clean_jobs()
        applied: list[dict] = []
        for cq in (o for o in objs if o["kind"] == "ClusterQueue"):
            name = cq["metadata"]["name"].removeprefix(self.names.prefix)
            result.cluster_queues.append(name)
            result.nominal_gpus[name] = float(sum(
                (parse_quantity(r.get("nominalQuota", 0)) for g in cq["spec"].get("resourceGroups") or []
                 for f in g.get("flavors") or [] for r in f.get("resources") or [] if r.get("name") == GPU), Decimal(0)))
        recorder = Recorder(self.api_client, self.names, result.cluster_queues)
        try:
            for o in objs:
                self.kube.apply(o)
                applied.append(o)
            for o in objs:
                if o["kind"] == "ClusterQueue":
                    self.queues.wait_cluster_queue(o["metadata"]["name"].removeprefix(self.names.prefix),
                                                   lambda c: is_true(c, "Active"), "Active=True")
            recorder.start(self.timeout)
            run = Run(self.queues)
            try:
                for step in scenario.steps:
                    t_start = recorder.now()
                    recorder.step(step.title)
                    before = len(recorder.record.events)
                    step.action(run)
                    recorder.wait_settled(run.live, sorted(run.finished), self.quiet, self.timeout)
                    result.steps.append(self._step_result(step.title, t_start, recorder, run, before))
            except WaitTimeout as err:
                result.error = str(err).splitlines()[0]
            result.recording = recorder.stop()
            if not result.error:
                result.failures = scenario.check(result.steps)
        finally:
            recorder.stop()
            self.teardown(applied)
        return result

    def _step_result(self, title: str, t_start: float, recorder: Recorder, run: Run, first_event: int) -> StepResult:
        events = recorder.record.events[first_event:]
        prefix = self.names.prefix
        jobs = {}
        for job in run.queue_of:
            state, detail = recorder.job_state(job)
            jobs[job] = (state, detail.replace(prefix, "") if prefix else detail)
        usage = {}
        for sample in recorder.record.samples:  # the last sample of each queue wins
            total = sum((t for (f, r), (t, _) in sample.usage.items() if r == GPU), Decimal(0))
            borrowed = sum((b for (f, r), (_, b) in sample.usage.items() if r == GPU), Decimal(0))
            usage[sample.cluster_queue] = (total, borrowed)
        return StepResult(
            title, t_start, recorder.now(), jobs, dict(run.queue_of),
            [e.job for e in events if e.kind == "admitted"],
            [(e.job, e.reason) for e in events if e.kind in ("preempted", "evicted")],
            usage)

    # -- cleaning up ------------------------------------------------------------------------------
    def clean_jobs(self) -> None:
        """RayJobs first, then wait for Kueue to drop their Workloads, so no queue is deleted
        while it still holds a workload (its finalizer would keep it Terminating)."""
        ns = self.names.namespace
        if self.kube.get("v1", "Namespace", ns) is None:
            return
        for job in self.kube.list(*RAYJOB, namespace=ns):
            self.kube.delete(*RAYJOB, name=job["metadata"]["name"], namespace=ns)
        self.kube.wait_for(*RAYJOB, lambda items: not items or None, "all RayJobs deleted", ns, self.timeout)
        self.kube.wait_for(*WORKLOAD, lambda items: not items or None, "all Workloads deleted", ns, self.timeout)

    def teardown(self, applied: list[dict]) -> None:
        self.clean_jobs()
        for o in reversed(applied):
            if o["kind"] != "Namespace":  # deleting a namespace is slow and the next run wants it
                self.kube.delete(o["apiVersion"], o["kind"], o["metadata"]["name"], (o.get("metadata") or {}).get("namespace"))
        # Gone, not Terminating: a flavor behind its finalizer would leave the next layout inactive.
        for api_version, kind in sorted({(o["apiVersion"], o["kind"]) for o in applied if o["kind"] != "Namespace"}):
            ours = {o["metadata"]["name"] for o in applied if o["kind"] == kind}
            self.kube.wait_for(api_version, kind, lambda items: not ours & {i["metadata"]["name"] for i in items} or None,
                               f"the report's {kind} objects deleted", None, self.timeout)
