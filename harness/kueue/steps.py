"""The scenario machinery, in the manner of Kueue's test/util: a Scenario is a list of named
Steps; a Step submits or finishes RayJobs, then says what Kueue decides, as expectations that
are awaited with watch-driven waits (harness.kueue.Queues).

    result = run_scenario(queues, scenarios.TEAM_QUEUES, [Hook(ACTED, break_kueue, step="reclaim")])
    result["reclaim"].state["victim"]        # per-step results, jobs named by role

A step's `expect` is the outcome the scenario is about: the tests await it, and the report, which
runs the scenario against other refs' queue layouts, judges it against what it recorded
(Scenario.check over StepResults). Its `details` pin this repository's own quotas and sizes and
the bookkeeping of the queues and of KubeRay: the tests await them too, the report does not judge
them. Kueue may choose either of two equal jobs as its victim: Preempted binds roles ("victim",
"survivor") that later expectations and the per-step state use in place of names.

Hooks run at a named step (or at every step): BEFORE its actions, ACTED (actions done, Kueue's
decisions not awaited yet: where the fault tests break a component) and AFTER (expectations
awaited; with expect=False nothing is awaited, and the report waits for Kueue to settle there).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kubernetes import client

from harness.core import REPO_ROOT, timeouts
from harness.k8s import POD, RAYCLUSTER, WORKLOAD, WaitTimeout, condition, owned_by
from harness.kueue.expectations import Expectation, StepResult, judged
from harness.kueue.placement import READY, not_placed, refused
from harness.kueue.queues import Queues, Size, rayjob
from harness.kueue.results import finish_rayjob

BEFORE, ACTED, AFTER = "before", "acted", "after"


# -- actions --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Submit:
    """A sample RayJob renamed `name`, submitted to LocalQueue `queue` (re-sized, with a priority
    class, with fields of its spec replaced). `refused`: the apiserver is to refuse it (a webhook);
    the refusal is kept for Rejected."""
    sample: str
    name: str
    queue: str
    size: Size | None = None
    priority: str | None = None
    spec: dict = field(default_factory=dict)
    refused: bool = False

    def do(self, run: ScenarioRun) -> None:
        job = rayjob(self.sample, self.name, run.bound(self.queue), self.size, self.priority, root=run.root)
        job["spec"].update(copy.deepcopy(self.spec))
        try:
            run.created[self.name] = run.queues.submit(job)
        except client.ApiException as err:
            if not self.refused:
                raise
            run.refusals[self.name] = err
            return
        run.queue_of[self.name] = self.queue  # the role: what two refs' runs compare


@dataclass(frozen=True)
class Finish:
    """A job is done, as on AKS: its result is reported as Ray would report it (harness.kueue.
    finish_rayjob); KubeRay ends the RayJob, Kueue marks its Workload Finished and frees the quota.
    Only a job that runs can finish. A RayJob that is suspended (Kueue never admitted it, or
    preempted it) runs nothing in KubeRay (no RayCluster, no submitted job); one KubeRay refused
    (ValidationFailed) never gets a RayCluster; and on a cluster with nodes, one whose RayCluster
    KubeRay does not report ready within timeouts.POD_BOUND (its pods not bound: a taint, no room)
    is never submitted to Ray (KubeRay waits for the RayCluster to be ready first). Such a job is
    left as it is, holding its quota as on AKS, and recorded in run.not_finished with why, for the
    step's outcome to say so."""
    job: str  # a name or a bound role

    def do(self, run: ScenarioRun) -> None:
        name = run.name(self.job)
        why = not_running(run.queues, name)
        if why:
            run.not_finished.append((run.step.name if run.step else "", self.job, why))
            return
        finish_rayjob(run.queues.kube, name, run.queues.namespace)
        run.finished.add(name)


def not_running(queues: Queues, name: str, bound: float = timeouts.POD_BOUND) -> str:
    """Why RayJob `name` cannot finish ("" when it runs): it is gone; suspended, never admitted or
    preempted; refused by KubeRay; or (on a cluster with nodes) its RayCluster not ready within
    `bound` seconds, with the scheduler's reason for its pods (harness.kueue.placement)."""
    job = queues.job(name)
    if job is None:
        return "its RayJob is gone"
    if not (job.get("spec") or {}).get("suspend"):
        if why := refused(job):
            return why
        if not queues.kube.list("v1", "Node"):
            return ""  # nothing can be bound: pods are not the subject of this run (the invariant checker's rule)
        uid = job["metadata"]["uid"]
        try:
            queues.kube.wait_for(*RAYCLUSTER, lambda cs: any((c.get("status") or {}).get("state") == READY for c in owned_by(cs, uid)),
                                 f"the RayCluster of {name} ready", queues.namespace, bound)
            return ""
        except WaitTimeout:
            why = not_placed(queues.job(name), queues.kube.list(*RAYCLUSTER, namespace=queues.namespace),
                             queues.kube.list(*POD, namespace=queues.namespace))
            return f"it does not run: {why}" if why else ""
    uid = job["metadata"]["uid"]
    workloads = owned_by(queues.kube.list(*WORKLOAD, namespace=queues.namespace), uid)
    if any(condition(w, c) for w in workloads for c in ("Evicted", "Preempted")):
        return "it is suspended after its eviction, so it does not run"
    return "Kueue never admitted it, so it never ran"


# -- scenarios and their runs ---------------------------------------------------------------------
@dataclass(eq=False)
class Step:
    name: str  # what hooks and results name it by
    title: str  # what a reviewer reads
    actions: list
    expect: list[Expectation] = field(default_factory=list)
    details: list[Expectation] = field(default_factory=list)

    def __post_init__(self):
        unjudged = [type(e).__name__ for e in self.expect if not judged(e)]
        if unjudged:
            raise TypeError(f"step {self.name}: {', '.join(unjudged)} cannot be judged from a recording; list it in details")


@dataclass(eq=False)
class Scenario:
    name: str
    title: str
    layout: str  # the queue layout it runs on (an overlay directory)
    # Its roles: each LocalQueue its steps submit to -> the ClusterQueue behind it, named as this repository's
    # layout names them; a ref's layer that names them otherwise binds them (bind) for its run.
    queues: dict[str, str]
    expectation: str  # the expected outcome in words
    steps: list[Step]
    # The cluster in clusters/ whose Terraform pools the pods run on where a run adds nodes (the
    # report; tests/integration/test_pods.py); its layout's base quotas are sized for those pools.
    cluster: str | None = None

    @property
    def cluster_queues(self) -> list[str]:
        return list(dict.fromkeys(self.queues.values()))

    def bind(self, objects: list[dict], sample_queues: dict[str, set[str]], namespace: str = "ray") -> tuple[dict[str, str], list[str], str]:
        """The roles as a ref's queue layer (`objects`, in the repository's names) names them: (role -> name there, what
        differs in words, why the scenario cannot run there or ""). A LocalQueue role is the LocalQueue of that name in
        `namespace`, else the one the cluster's samples file (`sample_queues`: sample -> LocalQueues) sends the role's
        samples to, else the only one pointing at the role's ClusterQueue; the ClusterQueue role is the one it points at."""
        lqs = {o["metadata"]["name"]: (o.get("spec") or {}).get("clusterQueue") for o in objects
               if o.get("kind") == "LocalQueue" and (o.get("metadata") or {}).get("namespace") == namespace}
        cqs = {o["metadata"]["name"] for o in objects if o.get("kind") == "ClusterQueue"}
        bound: dict[str, str] = {}
        notes, missing = [], []
        for lq, cq in self.queues.items():
            samples = sorted({a.sample for st in self.steps for a in st.actions if isinstance(a, Submit) and a.queue == lq})
            listed = sorted({q for s in samples for q in sample_queues.get(s, ())} & set(lqs))
            behind = [n for n, c in lqs.items() if c == cq]
            if lq in lqs:
                found = lq
            elif len(listed) == 1:
                found = listed[0]
                notes.append(f"LocalQueue {lq} is `{found}` here (where the samples file sends {', '.join(samples)})")
            elif len(behind) == 1:
                found = behind[0]
                notes.append(f"LocalQueue {lq} is `{found}` here (the LocalQueue of ClusterQueue {cq})")
            else:
                missing.append(f"LocalQueue {lq} is not in this ref's layer" + (
                    f" and the samples file sends {', '.join(samples)} to none of its LocalQueues" if samples else ""))
                continue
            bound[lq] = found
            if lqs[found] not in cqs:
                missing.append(f"LocalQueue {found} points at ClusterQueue {lqs[found]}, which this ref's layer does not have")
            elif cq not in bound:
                bound[cq] = lqs[found]
                if lqs[found] != cq:
                    notes.append(f"ClusterQueue {cq} is `{lqs[found]}` here")
        return bound, notes, "; ".join(missing)

    def step(self, name: str) -> Step:
        found = [s for s in self.steps if s.name == name]
        if not found:
            raise KeyError(f"scenario {self.name} has no step {name!r} (has: {', '.join(s.name for s in self.steps)})")
        return found[0]

    def check(self, seen: list[StepResult]) -> list[str]:
        """The recorded steps judged against every step's `expect`: what did not hold."""
        roles: dict[str, str] = {}
        return [f"{result.title}: {failure}" for step, result in zip(self.steps, seen)
                for e in step.expect if (failure := e.judge(result, roles))]


@dataclass
class StepRun:
    name: str
    title: str
    state: dict  # Queues.state once the step's expectations held, jobs by role ({} when not awaited)


@dataclass(frozen=True)
class Hook:
    when: str  # BEFORE, ACTED or AFTER
    fn: Callable[[ScenarioRun], object]
    step: str | None = None  # the step's name; None: every step


class ScenarioRun:
    """One run of a scenario: what its steps did so far, and a StepRun per step done."""

    def __init__(self, queues: Queues, scenario: Scenario, root: Path = REPO_ROOT, bind: dict[str, str] | None = None):
        self.queues, self.scenario = queues, scenario
        self.bind = dict(bind or {})  # the scenario's queue roles as the layer applied names them (Scenario.bind)
        self.root = root  # the tree whose samples (workloads/) the jobs are rendered from
        self.not_finished: list[tuple[str, str, str]] = []  # (step, job or role, why) a Finish found the job not running
        self.queue_of: dict[str, str] = {}  # every job submitted (and not refused) -> its LocalQueue
        self.finished: set[str] = set()
        self.created: dict[str, dict] = {}
        self.refusals: dict[str, client.ApiException] = {}
        self.roles: dict[str, str] = {}  # role -> job, bound by expectations
        self.steps: list[StepRun] = []
        self.step: Step | None = None  # the step running

    def name(self, job: str) -> str:
        """A role's job, or the job itself."""
        return self.roles.get(job, job)

    def bound(self, queue: str) -> str:
        """A queue role's name in the layer applied (the role's own name when the layer has it)."""
        return self.bind.get(queue, queue)

    @property
    def live(self) -> list[str]:
        return [j for j in self.queue_of if j not in self.finished]

    def __getitem__(self, step: str) -> StepRun:
        self.scenario.step(step)
        found = [s for s in self.steps if s.name == step]
        if not found:
            raise KeyError(f"step {step} of {self.scenario.name} did not run")
        return found[0]

    def labels(self) -> dict[str, str]:
        """The live jobs by role where one is bound, else by name."""
        live = self.live
        by_role = {role: job for role, job in self.roles.items() if job in live}
        return {**by_role, **{j: j for j in live if j not in by_role.values()}}


def run_scenario(queues: Queues, scenario: Scenario, hooks: list[Hook] = (), *, expect: bool = True,
                 until: str | None = None, root: Path = REPO_ROOT, bind: dict[str, str] | None = None) -> ScenarioRun:
    """Runs the steps in order on `queues` (its layout applied by the caller, its queue roles named there as `bind`
    says: Scenario.bind), up to and including step `until`, with the samples of the tree at `root`. expect=True: every
    expectation awaited, in order (`expect`, then `details`); expect=False: actions and hooks only."""
    for h in hooks:
        if h.when not in (BEFORE, ACTED, AFTER):
            raise ValueError(f"hook at {h.when!r}: use BEFORE, ACTED or AFTER")
        if h.step is not None:
            scenario.step(h.step)
    if until is not None:
        scenario.step(until)
    run = ScenarioRun(queues, scenario, root, bind)

    def call(when: str) -> None:
        for h in hooks:
            if h.when == when and h.step in (None, run.step.name):
                h.fn(run)

    for step in scenario.steps:
        run.step = step
        call(BEFORE)
        for action in step.actions:
            action.do(run)
        call(ACTED)
        if expect:
            for e in (*step.expect, *step.details):
                e.wait(run)
        run.steps.append(StepRun(step.name, step.title, queues.state(run.labels(), [run.bound(c) for c in scenario.cluster_queues]) if expect else {}))
        call(AFTER)
        if step.name == until:
            break
    return run
