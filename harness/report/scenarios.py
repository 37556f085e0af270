"""The behavioural scenarios of the report: single-queue and team-queues as harness.kueue defines
them (the integration tests run the same), run on the real Kueue against each ref's queue layer,
with that ref's samples (workloads/).

A scenario names a layout (an overlay) and a cluster (prod-eastus2). On a ref where that cluster's
queue layer runs the scenario's overlay, the scenario runs on the layer as the cluster's Flux
renders it (its components and its own patches applied, as `make cluster` applies it); on a ref
where the cluster runs another overlay (it switched layouts), that other scenario runs on the
cluster's layer and this one on its bare overlay, and the result says so (ScenarioResult.ran_on).

After each step's actions the run waits until Kueue has settled (harness.report.recorder) and
records every job's state: a StepResult, judged by the scenario's expectations. The outcome of a
step is what a reviewer compares: per LocalQueue how many jobs are admitted (and, for one that does
not run, why: its pods not bound within timeouts.POD_BOUND with the scheduler's reason, or KubeRay
refused it) or pending (and why),
who was preempted and why, and the GPUs each ClusterQueue holds and borrows. Names of equal jobs
are left out of the outcome because Kueue may preempt either of them.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from kubernetes import client

from harness.cluster import Names, PoolNodes
from harness.core import HarnessError, format_quantity, parse_quantity, say, timeouts
from harness.gate import (ClusterRender, RenderError, build_directory, is_flux_kustomization, kustomization_file, pod_sets,
                          render_repository, sample_queues)
from harness.k8s import Kube, WaitTimeout
from harness.kueue import AFTER, BEFORE, Hook, Queues, Scenario, ScenarioRun, StepResult, run_scenario, scenarios, short_reason
from harness.report import ReportInputError
from harness.report.quotas import layout_of
from harness.report.recorder import Recorder, Recording

__all__ = ["SCENARIOS", "Layer", "Scenario", "ScenarioResult", "ScenarioRunner", "StepResult", "bind_roles", "by_name", "queue_layer", "render_layout",
           "run_all", "short_reason"]

GPU = "nvidia.com/gpu"
SCENARIOS = [scenarios.SINGLE_QUEUE, scenarios.TEAM_QUEUES]  # the report's, in the report's order


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
    ran_on: str = ""  # the queue layer it ran on, in words
    asks: dict[str, str] = field(default_factory=dict)  # job -> what it requests, as this ref's sample renders it
    bind: dict[str, str] = field(default_factory=dict)  # the scenario's queue roles -> their names in this ref's layer
    not_applicable: str = ""  # why the scenario's queue roles are not in this ref's layer (Scenario.bind)
    on_cluster: bool = False  # it ran on its cluster's own queue layer (not the bare overlay)

    @property
    def passed(self) -> bool:
        return not self.failures and not self.error and not self.missing_layout and not self.not_applicable

    def verdict(self) -> str:
        if self.missing_layout:
            return f"n/a ({self.layout} not in this ref)"
        if self.not_applicable:
            return f"n/a: {self.not_applicable}"
        if self.error:
            return "did not finish"
        return "holds" if self.passed else "does not hold"

    def outcome(self) -> list[list[str]]:
        return [s.outcome() for s in self.steps]


def by_name(names: list[str] | None) -> list[Scenario]:
    if not names:
        return list(SCENARIOS)
    known = {s.name: s for s in SCENARIOS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ReportInputError(f"unknown scenario(s) {', '.join(unknown)} (have: {', '.join(known)})")
    return [known[n] for n in names]


# -- running --------------------------------------------------------------------------------------
@dataclass
class Layer:
    """The queue objects a scenario runs on for one ref, and which they are in words."""
    objects: list[dict] | None  # None: the ref has no such layout
    ran_on: str
    bind: dict[str, str] = field(default_factory=dict)  # the scenario's queue roles as these objects name them (Scenario.bind)
    not_applicable: str = ""  # why the roles are not all there
    on_cluster: bool = False  # the cluster's own queue layer


def render_layout(root: Path, ref: str, layout: str) -> list[dict] | None:
    """The layout's objects as rendered from `ref`'s tree; None when that ref has no such overlay."""
    kfile = kustomization_file(root / layout)
    if kfile is None:
        return None
    try:
        return build_directory(root, layout)
    except RenderError as err:
        raise ReportInputError(f"{ref}: {layout}/{kfile.name} does not render (rule kustomize-build): {err}") from None


QUEUE_GROUPS = ("", "kueue.x-k8s.io")  # of a cluster's queue layer, what a scenario applies (core and Kueue objects)


def queue_layer(root: Path, ref: str, scenario: Scenario, clusters: dict[str, ClusterRender] | None = None) -> Layer:
    """What `scenario` runs on in `ref`'s tree, its queue roles bound to that tree's names (bind_roles): the queue layer of its
    cluster as that cluster's Flux renders it when that layer runs the scenario's overlay, else the bare overlay.
    `clusters`: the tree's rendered clusters (quotas.load_tree has them); rendered here when not given."""
    return bind_roles(root, scenario, _layer(root, ref, scenario, clusters))


def bind_roles(root: Path, scenario: Scenario, layer: Layer) -> Layer:
    """The layer with the scenario's LocalQueue and ClusterQueue roles bound to its names, from its objects and the
    cluster's samples file (a renamed queue the samples follow is the same role); what is renamed is said in ran_on."""
    if layer.objects is None:
        return layer
    layer.bind, notes, layer.not_applicable = scenario.bind(layer.objects, sample_queues(root, scenario.cluster) if scenario.cluster else {})
    if notes:
        layer.ran_on += "; " + "; ".join(notes)
    return layer


def _layer(root: Path, ref: str, scenario: Scenario, clusters: dict[str, ClusterRender] | None) -> Layer:
    note = ""
    if scenario.cluster:
        if clusters is None:
            clusters = {c.name: c for c in render_repository(root)[1]}
        cluster = clusters.get(scenario.cluster)
        layers = [b for b in cluster.flux if any(o.get("kind") == "ClusterQueue" for o in b.objects)] if cluster else []
        overlays, rewrites = layout_of(root, layers)
        if layers and overlays == [scenario.layout]:
            objs = [o for b in layers for o in b.objects if not is_flux_kustomization(o)
                    and str(o.get("apiVersion", "")).rpartition("/")[0] in QUEUE_GROUPS]
            own = [r for r in rewrites if not r.startswith("components/")]
            return Layer(objs, f"{scenario.cluster}'s queue layer ({', '.join(f'`{b.dir}`' for b in layers)}: `{scenario.layout}`"
                               + "".join(f", `{r}`" for r in rewrites) + ")"
                               + ("" if own else ", which has no patches of its own"), on_cluster=True)
        note = (f" ({scenario.cluster} has no queue layer on this ref)" if not layers else
                f" ({scenario.cluster} runs {', '.join(f'`{o}`' for o in overlays) or 'no overlay'} on this ref)") if cluster else \
            f" (no cluster {scenario.cluster} on this ref)"
    return Layer(render_layout(root, ref, scenario.layout), f"the bare `{scenario.layout}`{note}")


def asks(job: dict) -> str:
    """What a RayJob requests in all, as Kueue counts it: "68 CPU, 528Gi memory, 4 GPU"."""
    total: dict[str, Decimal] = {}
    for _, count, requests in pod_sets(job):
        for name, qty in requests.items():
            total[name] = total.get(name, Decimal(0)) + count * qty
    words = {"cpu": "CPU", "memory": "memory", GPU: "GPU"}
    return ", ".join(f"{format_quantity(r, total[r])} {words[r]}" for r in words if total.get(r))


class ScenarioRunner:
    """Runs scenarios on one cluster: apply a ref's layout, run, delete everything, wait until gone."""

    def __init__(self, api_client: client.ApiClient, names: Names | None = None, timeout: float = timeouts.SETTLE,
                 quiet: float = timeouts.SETTLE_QUIET):
        self.api_client = api_client
        self.names = names or Names()
        self.kube = Kube(api_client)
        self.queues = Queues(self.kube, self.names, timeout=timeout)
        self.timeout, self.quiet = timeout, quiet

    def run(self, scenario: Scenario, root: Path, ref: str, layer: Layer | None = None) -> ScenarioResult:
        """Runs `scenario` with the samples of the tree at `root` on `layer` (default: queue_layer of that tree)."""
        layer = layer or queue_layer(root, ref, scenario)
        result = ScenarioResult(scenario.name, ref, scenario.layout, ran_on=layer.ran_on, bind=layer.bind,
                                not_applicable=layer.not_applicable, on_cluster=layer.on_cluster)
        objs = layer.objects
        if objs is None:
            result.missing_layout = True
            return result
        if layer.not_applicable:
            say("report", f"{ref}: scenario {scenario.name} n/a: {layer.not_applicable}")
            return result
        say("report", f"{ref}: scenario {scenario.name} on {layer.ran_on.replace('`', '')}")
        self.queues.remove_jobs()
        for cq in (o for o in objs if o["kind"] == "ClusterQueue"):
            name = cq["metadata"]["name"]
            result.cluster_queues.append(name)
            result.nominal_gpus[name] = float(sum(
                (parse_quantity(r.get("nominalQuota", 0)) for g in cq["spec"].get("resourceGroups") or []
                 for f in g.get("flavors") or [] for r in f.get("resources") or [] if r.get("name") == GPU), Decimal(0)))
        recorder = Recorder(self.api_client, self.names, result.cluster_queues)
        nodes = PoolNodes(self.kube, self.names.namespace, self.timeout)
        failed = True  # until the scenario ran: a teardown after a failure is best effort (the plane may be gone)
        try:
            if scenario.cluster and (root / "clusters" / scenario.cluster).is_dir():
                nodes.add(root, scenario.cluster)  # that ref's pools
            started = False
            recorder.pods = bool(self.kube.list("v1", "Node"))  # with nodes, an admitted job must run (its pods bound)
            try:
                self.queues.apply_objects(objs)  # waits for Kueue's word on each ClusterQueue (a held one stays inactive)
                started = bool(recorder.start(self.timeout))
                run_scenario(self.queues, scenario, self._recording_hooks(recorder, result), expect=False, root=root, bind=layer.bind)
            except WaitTimeout as err:
                result.error = " ".join(str(err).splitlines()[:2])  # what was awaited, and the first object's state
            result.recording = recorder.stop() if started else None
            if not result.error:
                result.failures = scenario.check(result.steps)
            failed = False
        finally:
            recorder.stop()
            try:
                self.queues.teardown()
                nodes.close()
            except (HarnessError, client.ApiException):
                if not failed:
                    raise  # else the failure itself is what the run reports
        return result

    def _recording_hooks(self, recorder: Recorder, result: ScenarioResult) -> list[Hook]:
        """Before each step the recorder marks it; after its actions, once Kueue has settled, the
        step's StepResult is drawn from the recording."""
        start: dict[str, float | int] = {}

        def mark(run: ScenarioRun) -> None:
            start["t"] = recorder.now()
            recorder.step(run.step.title)
            start["events"] = len(recorder.record.events)

        def settle(run: ScenarioRun) -> None:
            recorder.wait_settled(run.live, sorted(run.finished), self.quiet, self.timeout)
            result.steps.append(self._step_result(run, recorder, start["t"], start["events"]))
            result.asks.update({job: asks(obj) for job, obj in run.created.items() if job not in result.asks})

        return [Hook(BEFORE, mark), Hook(AFTER, settle)]

    def _step_result(self, run: ScenarioRun, recorder: Recorder, t_start: float, first_event: int) -> StepResult:
        events = recorder.record.events[first_event:]
        prefix = self.names.prefix
        jobs = {}
        for job in run.queue_of:
            state, detail = recorder.job_state(job)
            jobs[job] = (state, detail.replace(prefix, "") if prefix else detail)
        usage = {}
        role = {name: r for r, name in run.bind.items()}  # keyed by the scenario's roles, which two refs' runs compare
        for sample in recorder.record.samples:  # the last sample of each queue wins
            total = sum((t for (f, r), (t, _) in sample.usage.items() if r == GPU), Decimal(0))
            borrowed = sum((b for (f, r), (_, b) in sample.usage.items() if r == GPU), Decimal(0))
            usage[role.get(sample.cluster_queue, sample.cluster_queue)] = (total, borrowed)
        return StepResult(
            run.step.title, t_start, recorder.now(), jobs, dict(run.queue_of),
            [e.job for e in events if e.kind == "admitted"],
            [(e.job, e.reason) for e in events if e.kind in ("preempted", "evicted")],
            usage, [(job, why) for step, job, why in run.not_finished if step == run.step.name])


def run_all(runs: list[tuple[Scenario, Path, str, Layer | None]], workdir: Path, api_client: client.ApiClient | None = None,
            names: Names | None = None, timeout: float = timeouts.SETTLE) -> dict[tuple[str, str], ScenarioResult]:
    """Runs each (scenario, tree, ref, layer) in order, one ref's runs after the other, on `api_client`'s
    cluster, or on an embedded cluster started in `workdir` when there is none. That cluster's
    component logs are kept (and where is said) when a run did not finish. Keyed (scenario, ref)."""
    results: dict[tuple[str, str], ScenarioResult] = {}
    cluster, logs = None, None
    try:
        if api_client is None:
            from harness.cluster import LocalCluster

            logs = Path(tempfile.mkdtemp(prefix="scenario-cluster-logs-"))
            cluster = LocalCluster(workdir, log_dir=logs)
            cluster.start()
            api_client = cluster.api_client()
        runner = ScenarioRunner(api_client, names, timeout=timeout)
        for scenario, root, ref, layer in runs:
            try:
                results[(scenario.name, ref)] = runner.run(scenario, root, ref, layer)
            except (HarnessError, client.ApiException) as err:
                raise plane_failure(cluster, err, f"during scenario {scenario.name} ({ref})", logs) from None
    finally:
        if cluster:
            cluster.stop()
        if logs and len(results) == len(runs) and not any(r.error for r in results.values()):
            shutil.rmtree(logs, ignore_errors=True)
        elif logs:
            say("report", f"component logs kept in {logs}")
    return results


def plane_failure(cluster, err: Exception, where: str, logs: Path | None) -> Exception:
    """What a failed API call means: a component of the embedded plane that died (named from the plane's process check,
    as `make cluster` names it, with where its logs are kept), else the apiserver's answer in one line, else `err`."""
    dead = [p for p in cluster.all_processes() if not p.alive()] if cluster else []
    if dead:
        how = f"killed by signal {-dead[0].returncode}" if (dead[0].returncode or 0) < 0 else f"exit code {dead[0].returncode}"
        return HarnessError(f"{dead[0].name} exited ({how}) {where}" + (f"; component logs kept in {logs}" if logs else ""))
    if isinstance(err, client.ApiException):
        return HarnessError(f"the apiserver answered {err.status} {err.reason} {where}")
    return err
