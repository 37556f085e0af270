"""Records what Kueue decides during a scenario, from watches on the real cluster.

Watch streams (Workloads, RayJobs, RayClusters and pods in the scenario's namespace, ClusterQueues)
feed one state; every event is stamped with the time it arrived (seconds since the recording started):
  - Workload condition transitions become events: admitted, pending (with Kueue's message),
    preempted / evicted (with reason), finished (the Workload Finished: the job ended and Kueue freed its quota; or deleted);
  - every ClusterQueue status becomes a usage sample (status.flavorsUsage total and borrowed);
  - pods bound to nodes become occupancy samples (the GPUs each node holds).
The plots and the scenario outcomes are drawn from this record only. With nodes (`pods=True`), an
admitted job counts as settled once it runs (its pods bound, its RayCluster ready) or
timeouts.POD_BOUND after its admission, the invariant checker's bound; its state's detail then says
why it does not run (harness.kueue.placement: "5 of 5 pods Pending (<the scheduler's reason>)").
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal

from kubernetes import client

from harness.cluster import Names
from harness.core import parse_quantity, timeouts
from harness.k8s import CLUSTER_QUEUE, POD, RAYCLUSTER, RAYJOB, WORKLOAD, ListWatch, WaitTimeout, condition, conditions, is_true
from harness.kueue import not_placed, refused

WATCHED = (WORKLOAD, RAYJOB, RAYCLUSTER, CLUSTER_QUEUE, POD)  # in the scenario's namespace (ClusterQueues: all)
GPU = "nvidia.com/gpu"
TRACKED_CONDITIONS = ("QuotaReserved", "Admitted", "Evicted", "Preempted", "Finished")


@dataclass
class Event:
    t: float
    kind: str  # admitted | pending | preempted | evicted | finished
    job: str
    queue: str  # LocalQueue (repository name)
    cluster_queue: str | None  # repository name, where Kueue said one
    reason: str = ""
    message: str = ""


@dataclass
class Sample:
    t: float
    cluster_queue: str  # repository name
    usage: dict[tuple[str, str], tuple[Decimal, Decimal]]  # (flavor, resource) -> (total, borrowed)


@dataclass
class Recording:
    events: list[Event] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)  # ClusterQueue status, as Kueue reports it
    # Quota reserved by Workloads, summed per ClusterQueue after every Workload event; borrowed is
    # what exceeds the queue's nominal quota. One ordered stream, so unlike the ClusterQueue
    # statuses (each queue updated on its own, a second or so late) it never double-counts a
    # preemption in flight; the plots use it.
    held: list[Sample] = field(default_factory=list)
    steps: list[tuple[float, str]] = field(default_factory=list)  # (start time, step title)
    # GPUs requested by the pods bound to each node (Running or about to be), after every pod
    # event that changes them: what the nodes hold, next to what the queues hold (empty: no nodes).
    occupancy: list[tuple[float, dict[str, Decimal]]] = field(default_factory=list)
    end: float = 0.0


class Recorder:
    def __init__(self, api_client: client.ApiClient, names: Names, cluster_queues: list[str], pods: bool = False,
                 pod_bound: float = timeouts.POD_BOUND):
        self.api_client = api_client
        self.pods, self.pod_bound = pods, pod_bound  # pods: the cluster has nodes, so an admitted job's pods must be bound
        self.names = names
        self.cluster_queues = {names.cq(n): n for n in cluster_queues}  # cluster name -> repository name
        self.record = Recording()
        self.workloads: dict[str, dict] = {}  # Workload name -> object
        self.rayjobs: dict[str, dict] = {}
        self.rayclusters: dict[str, dict] = {}
        self._pods: dict[str, dict] = {}  # pod uid -> object
        self._admitted_at: dict[str, float] = {}  # job -> when the recorder last saw it admitted
        self.seen_jobs: set[str] = set()
        self.last_event = 0.0
        self._conditions: dict[str, dict[str, tuple]] = {}
        self._nominal: dict[str, dict[tuple[str, str], Decimal]] = {}  # from the watched ClusterQueue specs
        self._last_held: dict[str, dict] = {}
        self._cv = threading.Condition()
        self._stop = threading.Event()
        self._watches: list[ListWatch] = []
        self._t0 = time.monotonic()
        self._synced: set[str] = set()
        self._bound: dict[str, tuple[str, Decimal]] = {}  # pod uid -> (node, GPUs requested)

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self, timeout: float = timeouts.DECISION) -> "Recorder":
        self._t0 = time.monotonic()
        for rtype in WATCHED:
            w = ListWatch(self.api_client, rtype, namespace=self.names.namespace, lock=self._cv,
                          on_list=self._listed(rtype.kind), on_event=self._seen(rtype.kind))
            self._watches.append(w.start(f"report-recorder-{rtype.kind}"))
        kinds = {t.kind for t in WATCHED}
        with self._cv:  # every stream listed once, so nothing that follows is missed
            if not self._cv.wait_for(lambda: self._synced == kinds or self._failures(), timeout):
                raise WaitTimeout(f"the recorder's watches did not list {kinds - self._synced} within {timeout:.0f}s; "
                                  f"errors: {[e for w in self._watches for e in w.errors][-3:]}")
        self._raise_errors()
        return self

    def stop(self) -> Recording:
        if self._stop.is_set():
            return self.record
        self.record.end = self.now()
        self._stop.set()
        for w in self._watches:
            w.stop()
        return self.record

    def now(self) -> float:
        return time.monotonic() - self._t0

    def step(self, title: str) -> None:
        with self._cv:
            self.record.steps.append((self.now(), title))

    def _failures(self) -> list[str]:
        return [f"{w.rtype.kind}: {type(w.failure).__name__}: {w.failure}" for w in self._watches if w.failure is not None]

    def _raise_errors(self) -> None:
        if self._failures():
            raise RuntimeError("the recorder's watch failed: " + "; ".join(self._failures()))

    # -- watching (called by the ListWatches with self._cv held) -----------------------------------
    def _listed(self, kind: str):
        def listed(items: list[dict]) -> None:
            for obj in items:
                self._observe(kind, "ADDED", obj)
            self._synced.add(kind)
            self._cv.notify_all()
        return listed

    def _seen(self, kind: str):
        def seen(etype: str, obj: dict) -> None:
            self._observe(kind, etype, obj)
            self._cv.notify_all()
        return seen

    def _observe(self, kind: str, etype: str, obj: dict) -> None:
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            return
        name = obj["metadata"]["name"]
        if kind == "ClusterQueue":
            if name in self.cluster_queues and etype != "DELETED":
                self.record.samples.append(Sample(self.now(), self.cluster_queues[name], _usage(obj, self.names)))
                self._nominal[self.cluster_queues[name]] = _nominal(obj, self.names)
                self.last_event = self.now()
            return
        if kind == "Pod":
            self._pod(etype, obj)
            return
        if kind == "RayCluster":
            if etype == "DELETED":
                self.rayclusters.pop(name, None)
            else:
                self.rayclusters[name] = obj
            return
        self.last_event = self.now()
        if kind == "RayJob":
            if etype == "DELETED":
                self.rayjobs.pop(name, None)
            else:
                self.rayjobs[name] = obj
                self.seen_jobs.add(name)
            return
        if etype == "DELETED":
            old = self.workloads.pop(name, None)
            self._conditions.pop(name, None)
            if old and not is_true(old, "Finished"):
                self._event(old, "finished", "", "the RayJob was deleted")
            self._sample_held()
            return
        self.workloads[name] = obj
        self._sample_held()
        before = self._conditions.get(name, {})
        now = {c["type"]: (c.get("status"), c.get("reason", ""), c.get("message", ""))
               for c in conditions(obj) if c.get("type") in TRACKED_CONDITIONS}
        self._conditions[name] = now

        def became(ctype, status="True"):
            return now.get(ctype, (None,))[0] == status and before.get(ctype, (None,))[0] != status

        if became("Finished"):  # the job ended (its result reported): Kueue frees its quota
            self._event(obj, "finished", now["Finished"][1], now["Finished"][2])
        if became("Admitted"):
            self._event(obj, "admitted", now["Admitted"][1], now["Admitted"][2])
        if became("Preempted"):
            self._event(obj, "preempted", now["Preempted"][1], now["Preempted"][2])
        elif became("Evicted"):
            self._event(obj, "evicted", now["Evicted"][1], now["Evicted"][2])
        qr = now.get("QuotaReserved")
        if qr and qr[0] == "False" and qr[2] and (before.get("QuotaReserved") or (None, "", ""))[::2] != qr[::2]:
            self._event(obj, "pending", qr[1], qr[2])

    def _pod(self, etype: str, pod: dict) -> None:
        uid, spec = pod["metadata"]["uid"], pod.get("spec") or {}
        if etype == "DELETED":
            self._pods.pop(uid, None)
        else:
            self._pods[uid] = pod
        done = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if etype == "DELETED" or done or not spec.get("nodeName"):
            changed = self._bound.pop(uid, None) is not None
        else:
            gpus = sum((parse_quantity(((c.get("resources") or {}).get("requests") or {}).get(GPU, 0))
                        for c in spec.get("containers") or []), Decimal(0))
            changed = self._bound.get(uid) != (spec["nodeName"], gpus)
            self._bound[uid] = (spec["nodeName"], gpus)
        if changed:
            per_node: dict[str, Decimal] = {}
            for node, gpus in self._bound.values():
                per_node[node] = per_node.get(node, Decimal(0)) + gpus
            self.record.occupancy.append((self.now(), per_node))

    def _sample_held(self) -> None:
        held: dict[str, dict[tuple[str, str], Decimal]] = {cq: {} for cq in self.cluster_queues.values()}
        for wl in self.workloads.values():
            admission = (wl.get("status") or {}).get("admission")
            if not admission or not is_true(wl, "QuotaReserved") or is_true(wl, "Finished"):
                continue  # a Finished Workload keeps its admission, but Kueue no longer counts it
            cq = self.cluster_queues.get(admission.get("clusterQueue"))
            if cq is None:
                continue
            for psa in admission.get("podSetAssignments") or []:
                flavors = psa.get("flavors") or {}
                for resource, qty in (psa.get("resourceUsage") or {}).items():
                    key = (str(flavors.get(resource, "")).removeprefix(self.names.prefix), resource)
                    held[cq][key] = held[cq].get(key, Decimal(0)) + parse_quantity(qty)
        for cq, usage in held.items():
            last = self._last_held.get(cq)
            if last == usage:
                continue
            self._last_held[cq] = usage
            nominal = self._nominal.get(cq, {})
            self.record.held.append(Sample(self.now(), cq, {k: (v, max(Decimal(0), v - nominal.get(k, Decimal(0))))
                                                          for k, v in usage.items()}))

    def _event(self, wl: dict, kind: str, reason: str, message: str) -> None:
        job = _owner(wl)
        admission = (wl.get("status") or {}).get("admission") or {}
        cq = admission.get("clusterQueue")
        if kind == "admitted":
            self._admitted_at[job] = self.now()
        self.record.events.append(Event(self.now(), kind, job, (wl.get("spec") or {}).get("queueName", ""),
                                        self.cluster_queues.get(cq, cq), reason, message))

    # -- what the scenarios ask -------------------------------------------------------------------
    def job_state(self, job: str) -> tuple[str, str]:
        """(state, detail) of a RayJob's Workload now: admitted (detail: why it does not run, "" when
        it does), pending (Kueue's message), evicting, deleted or no-workload."""
        with self._cv:
            return self._job_state(job)

    def _job_state(self, job: str) -> tuple[str, str]:
        wl = next((w for w in self.workloads.values() if _owner(w) == job), None)
        if wl is None:
            return ("finished", "") if job in self.seen_jobs and job not in self.rayjobs else ("no-workload", "")
        if is_true(wl, "Finished"):
            return "finished", ""
        if is_true(wl, "Evicted") and is_true(wl, "QuotaReserved"):
            reason = (condition(wl, "Evicted") or {}).get("reason", "")
            stuck = refused(self.rayjobs.get(job))  # KubeRay never suspends it, so Kueue never sees it stop
            return "evicting", f"{reason}; {stuck}, so its eviction never completes" if stuck else reason
        if is_true(wl, "Admitted"):
            return "admitted", self._not_running(job)
        qr = condition(wl, "QuotaReserved")
        if qr and qr.get("status") == "False" and qr.get("message"):
            return "pending", qr["message"]
        return "deciding", ""

    def _not_running(self, job: str) -> str:
        """Why admitted `job` does not run ("" when it does, or when pods are not the subject: no nodes)."""
        if not self.pods:
            return refused(self.rayjobs.get(job))
        return not_placed(self.rayjobs.get(job), list(self.rayclusters.values()), list(self._pods.values()))

    def _placing(self, job: str) -> bool:
        """Admitted `job` may still come to run: it does not yet, KubeRay did not refuse it, and its
        admission is less than pod_bound seconds ago."""
        return bool(self._not_running(job)) and not refused(self.rayjobs.get(job)) \
            and self.now() - self._admitted_at.get(job, float("-inf")) < self.pod_bound

    def wait_settled(self, jobs: list[str], gone: list[str] = (), quiet: float = timeouts.SETTLE_QUIET,
                     timeout: float = timeouts.SETTLE) -> None:
        """Waits until Kueue has decided about every job (admitted, or pending with a message),
        every admitted job runs or had pod_bound seconds to (see the module's doc), the Workloads of
        `gone` jobs are deleted, no eviction or preemption is in flight, and no watched object
        changed for `quiet` seconds. Raises WaitTimeout with the last state otherwise."""
        deadline = time.monotonic() + timeout

        def decided() -> bool:
            if any(self._job_state(j)[0] != "finished" for j in gone):
                return False
            states = {job: self._job_state(job) for job in jobs}
            stuck = any(state == "evicting" and refused(self.rayjobs.get(job)) for job, (state, _) in states.items())
            for job, (state, detail) in states.items():
                if state in ("deciding", "no-workload") or (state == "evicting" and not refused(self.rayjobs.get(job))):
                    return False
                if state == "pending" and re.search(r"preempt", detail, re.I) and not stuck:
                    return False  # waiting for its victims to go (unless one of them can never go)
                if state == "admitted" and self._placing(job):
                    return False  # its pods are being bound, its RayCluster started
            return True

        with self._cv:
            while True:
                self._raise_errors()
                if decided():
                    remaining_quiet = self.last_event + quiet - self.now()
                    if remaining_quiet <= 0:
                        return
                    wait = remaining_quiet  # nothing to do but let the quiet period pass
                else:
                    wait = 1.0
                if time.monotonic() >= deadline:
                    states = "; ".join(f"{j}: {' '.join(filter(None, self._job_state(j)))}" for j in [*jobs, *gone])
                    raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for Kueue to settle on {', '.join(jobs)}; "
                                      f"last states: {states}")
                self._cv.wait(min(wait, max(0.05, deadline - time.monotonic())))


def _owner(wl: dict) -> str:
    refs = (wl.get("metadata") or {}).get("ownerReferences") or []
    return refs[0]["name"] if refs else wl["metadata"]["name"]


def _usage(cq: dict, names: Names) -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
    out = {}
    for f in (cq.get("status") or {}).get("flavorsUsage") or []:
        fname = f.get("name", "").removeprefix(names.prefix)  # back to the repository's flavor name
        for r in f.get("resources") or []:
            out[(fname, r.get("name"))] = (parse_quantity(r.get("total", "0")), parse_quantity(r.get("borrowed", "0")))
    return out


def _nominal(cq: dict, names: Names) -> dict[tuple[str, str], Decimal]:
    out = {}
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for f in group.get("flavors") or []:
            for r in f.get("resources") or []:
                out[(f.get("name", "").removeprefix(names.prefix), r.get("name"))] = parse_quantity(r.get("nominalQuota", 0))
    return out
