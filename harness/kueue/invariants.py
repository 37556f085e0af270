"""The invariant checker that runs beside every behavioural test.

It follows RayJobs, Workloads, ClusterQueues and Cohorts (and Pods and Nodes) with watches and, on every event, checks:
  1. no RayJob stays unsuspended without an admitted Workload for longer than `suspend_bound`
     seconds (but one KubeRay refused, jobDeploymentStatus ValidationFailed: it runs nothing, and
     Kueue 0.19 releases its quota before it suspends it, kueue#14192). Kueue promises this
     eventually, not at every instant: a Workload preempted in the same moment as it was admitted
     can lose its quota while the job reconciler's cache still shows the RayJob suspended, so the
     RayJob stays unsuspended until the next reconcile suspends it (reconciler.go, step 6: stopJob
     sees a suspended job, IsActive is false while KubeRay's status is still New, the reservation
     is cleared). Such windows are counted in `brief_unadmitted`; one that outlasts the bound and is
     confirmed on fresh reads is a violation. The ticker re-checks once a second;
  2. per ClusterQueue, flavor and resource: quota held by its Workloads <= nominalQuota + borrowingLimit;
  3. per cohort, flavor and resource: quota held in total <= the sum of nominal quotas (its
     ClusterQueues' and the Cohort object's own resourceGroups; a Cohort seen with a parent may borrow
     from above it and is not bounded here, nor after it lost the parent or was deleted);
  4. no workload admitted twice: at most one admitted Workload per RayJob, and a Workload is
     admitted again only after an eviction (admissions <= 1 + the evictions the watch saw or Kueue
     counted in status.schedulingStats, whichever is more: harness.kueue.admissions);
  5. pods on nodes (when the cluster has Nodes, i.e. KWOK's simulated ones): every pod of an
     admitted workload (Kueue labels them kueue.x-k8s.io/cluster-queue-name) is bound within
     `pod_bound` seconds, else the violation names the pod and the scheduler's PodScheduled
     message; the pods of a suspended (preempted, evicted) RayJob are gone within `pod_bound`
     seconds of the checker seeing it suspended. A ticker re-checks once a second, because these
     two are about time passing, not about an event;
  6. nodes stay Ready: a Node once seen Ready whose Ready condition turns False or Unknown (its
     kubelet, KWOK's simulated one here, stopped heartbeating) is reported with the condition's
     message; the node-lifecycle controller would mark its pods not Ready and, beyond the grace
     period, evict them, so every later pod outcome would be an artefact. A deleted Node is not.
The watches (harness.k8s.ListWatch) survive component restarts: a broken stream (the apiserver
went away) is listed again and followed from there; `reconnects` counts how often that happened.
A suspected violation of (1) is confirmed against fresh reads before it is recorded, because
the watches are independent streams and may deliver events in different orders.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from decimal import Decimal

from kubernetes import client

from harness.core import parse_quantity, timeouts
from harness.k8s import (CLUSTER_QUEUE, COHORT, NODE, POD, RAYJOB, WORKLOAD, ListWatch, condition, get_object, is_true, list_objects,
                         owned_by)
from harness.kueue.admissions import AdmissionLedger
from harness.kueue.placement import CQ_LABEL, REFUSED, unbound

WATCHED = (RAYJOB, WORKLOAD, CLUSTER_QUEUE, COHORT, POD, NODE)  # every namespace
RAY_CLUSTER_LABEL = "ray.io/cluster"
KINDS = tuple(t.kind for t in WATCHED)


class InvariantChecker:
    def __init__(self, api_client: client.ApiClient, pod_bound: float = timeouts.POD_BOUND,
                 suspend_bound: float = timeouts.SUSPEND_BOUND, clock=time.monotonic):
        self.api_client = api_client
        self.pod_bound, self.suspend_bound = pod_bound, suspend_bound
        self._clock = clock
        self._first_seen: dict[str, float] = {}  # pod uid -> when the checker first saw it unbound
        self._suspended_since: dict[str, float] = {}  # RayJob uid -> when the checker first saw it suspended
        self._unadmitted_since: dict[str, float] = {}  # RayJob uid -> first seen unsuspended without an admitted Workload
        self.brief_unadmitted = 0  # such windows that closed within suspend_bound (Kueue's stale-cache race)
        self._ready_nodes: set[str] = set()  # Node uids seen Ready
        self.state: dict[str, dict[tuple, dict]] = {k: {} for k in KINDS}
        self.violations: list[str] = []
        self._taken: set[str] = set()  # what a test took as the violations it provoked (take's match)
        self.events = 0
        self._ledger = AdmissionLedger()  # admissions against evictions, per Workload
        self.synced: set[str] = set()
        self._held_memo: dict[str, tuple] = {}  # Workload uid -> (resourceVersion, quota it holds)
        self._parented: set[str] = set()  # Cohorts seen with a parent: what they borrowed from above stays admitted after
        self._changed = threading.Condition()  # held while the watches apply an event; notified after each
        self._stop = threading.Event()
        self._watches: list[ListWatch] = []

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> "InvariantChecker":
        for rtype in WATCHED:
            w = ListWatch(self.api_client, rtype, lock=self._changed, on_list=self._listed(rtype.kind),
                          on_event=self._changed_by(rtype.kind))
            self.state[rtype.kind] = w.state  # the watch keeps it current
            self._watches.append(w.start(f"invariants-{rtype.kind}"))
        for w in self._watches:
            w.synced.wait(timeouts.WATCH_SYNC)
        threading.Thread(target=self._tick, name="invariants-ticker", daemon=True).start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self._changed:
                self._check_unsuspended()
                self._check_pods()
                self._changed.notify_all()

    def stop(self) -> None:
        self._stop.set()
        for w in self._watches:
            w.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def reconnects(self) -> int:
        """How often a watch listed again after a broken stream (the apiserver went away)."""
        return sum(w.reconnects for w in self._watches)

    @property
    def eviction_counts_set_back(self) -> int:
        """How often Kueue wrote a Workload's eviction count lower than before (harness.kueue.admissions)."""
        return self._ledger.counts_set_back

    @property
    def errors(self) -> list[str]:
        """Why streams broke, for the message when something fails."""
        return [e for w in self._watches for e in w.errors]

    def assert_held(self) -> None:
        assert not self.violations, "invariants violated:\n" + "\n".join(self.violations)
        dead = [w.rtype.kind for w in self._watches if not w.alive and not self._stop.is_set()]
        failed = [f"{w.rtype.kind}: {w.failure!r}" for w in self._watches if w.failure is not None]
        assert not dead and not failed, f"invariant watches died: {dead or failed}; last errors: {self.errors[-3:]}"
        assert self.synced == set(KINDS), f"the invariant checker never listed {set(KINDS) - self.synced}: it was not watching"

    def wait_for_violation(self, match: str, timeout: float) -> list[str]:
        """Waits (on the watches and the ticker) until a violation containing `match` is recorded;
        returns those found, empty after `timeout`."""
        with self._changed:
            self._changed.wait_for(lambda: any(match in v for v in self.violations), timeout)
            return [v for v in self.violations if match in v]

    def take(self, match: str) -> list[str]:
        """Removes and returns the violations containing `match`: a test that provokes one on
        purpose asserts it was reported, and the rest must still hold. Once a take found some, violations
        containing `match` are not reported again: the checker's watches can see the provoking object a
        moment after the test has seen it go, and would report it anew."""
        with self._changed:
            found = [v for v in self.violations if match in v]
            self.violations[:] = [v for v in self.violations if match not in v]
            if found:
                self._taken.add(match)
            return found

    def lost_events(self, timeout: float = timeouts.WATCH_SYNC) -> list[str]:
        """Whether the watches kept up: lists every kind afresh and waits (on the watch events) until
        the checker holds each listed object at that resourceVersion or newer, or has seen it go, and
        holds nothing the listing should have had. Returns what is still missing, stale or extra after
        `timeout`; empty means nothing lost. The listing is a snapshot and the cluster moves on: an
        object deleted after it is missing from the watch rightly (a fresh read finds it gone), and
        one created after it is held rightly (its resourceVersion is past the listing's)."""
        listings, listed_at = {}, {}
        for rtype in WATCHED:
            listing = list_objects(self.api_client, rtype)
            listings[rtype] = {self._key(o): int(o["metadata"]["resourceVersion"]) for o in listing.get("items") or []}
            listed_at[rtype.kind] = int(listing["metadata"]["resourceVersion"])
        gone: set[tuple] = set()  # (kind, key) a fresh read found deleted: it stays so (generated names)
        read_at: dict[tuple, float] = {}  # (kind, key) -> when a fresh read last found it (read again after 1 s)

        def exists(rtype, k) -> bool:
            ref = (rtype.kind, k)
            if ref not in gone and time.monotonic() - read_at.get(ref, -1.0) > 1.0:
                if get_object(self.api_client, rtype, k[1], k[0]) is None:
                    gone.add(ref)
                else:
                    read_at[ref] = time.monotonic()
            return ref not in gone

        def behind() -> list[str]:
            out = []
            for rtype, listed in listings.items():
                kind = rtype.kind
                held = {k: int(o["metadata"]["resourceVersion"]) for k, o in self.state[kind].items()}
                out += [f"{kind} {k}: listed at {v}, watch has {held.get(k)}" for k, v in listed.items()
                        if held.get(k, -1) < v and (k in held or exists(rtype, k))]
                out += [f"{kind} {k}: held by the watch at {held[k]}, not listed at {listed_at[kind]}"
                        for k in held.keys() - listed.keys() if held[k] <= listed_at[kind]]
            return out

        with self._changed:
            self._changed.wait_for(lambda: not behind(), timeout)
            return behind()[:20]

    # -- watching (called by the ListWatches with self._changed held) ------------------------------
    def _listed(self, kind: str):
        def listed(_items: list[dict]) -> None:
            self.synced.add(kind)
            self._check()
            self._changed.notify_all()
        return listed

    def _changed_by(self, kind: str):
        def changed(etype: str, obj: dict) -> None:
            self.events += 1
            if etype == "DELETED" and kind == WORKLOAD.kind:
                self._forget(obj)
            if etype == "DELETED" and kind == NODE.kind:
                self._ready_nodes.discard(obj["metadata"].get("uid"))
            if etype == "DELETED" and kind in (POD.kind, RAYJOB.kind):
                self._first_seen.pop(obj["metadata"].get("uid"), None)
                self._suspended_since.pop(obj["metadata"].get("uid"), None)
            self._check()
            self._changed.notify_all()
        return changed

    def _forget(self, wl: dict) -> None:
        """A deleted Workload's memo entries go too: memory stays bounded by the live objects."""
        uid = wl["metadata"].get("uid")
        self._held_memo.pop(uid, None)
        self._ledger.forget(uid)

    @staticmethod
    def _key(obj: dict) -> tuple:
        meta = obj.get("metadata") or {}
        return meta.get("namespace"), meta.get("name")

    # -- the invariants ---------------------------------------------------------------------------
    def _violate(self, message: str) -> None:
        if message not in self.violations and not any(m in message for m in self._taken):  # every later event would report it again
            self.violations.append(message)

    def check(self) -> list[str]:
        """Checks the state as it is now (also one set by hand, with the checker never started);
        returns every violation found so far."""
        with self._changed:
            self._check()
            return list(self.violations)

    def _check(self) -> None:
        self._check_unsuspended()
        self._check_quota()
        self._check_admitted_once()
        self._check_pods()
        self._check_nodes()

    def _check_nodes(self) -> None:
        for (_, name), node in (self.state.get("Node") or {}).items():
            uid, ready = node["metadata"].get("uid"), condition(node, "Ready") or {}
            if ready.get("status") == "True":
                self._ready_nodes.add(uid)
            elif uid in self._ready_nodes:
                self._violate(f"node {name} went from Ready to Ready={ready.get('status')} "
                              f"({ready.get('reason')}: {ready.get('message')}): its kubelet stopped heartbeating")

    def _check_pods(self) -> None:
        if not self.state.get("Node"):
            return  # no nodes: nothing can be bound, pods are not the subject of this run
        now = self._clock()
        pods = self.state.get("Pod") or {}
        for (ns, name), pod in pods.items():
            meta = pod["metadata"]
            why = unbound(pod)  # harness.kueue.placement: the report's outcomes and Finish judge pods the same way
            if why is None:
                self._first_seen.pop(meta.get("uid"), None)
                continue
            since = self._first_seen.setdefault(meta["uid"], now)
            if now - since > self.pod_bound:
                self._violate(f"pod {ns}/{name} of an admitted workload (ClusterQueue {meta['labels'][CQ_LABEL]}) "
                              f"not bound after {self.pod_bound:.0f}s: {why}")
        clusters = {}
        for (ns, name), job in self.state["RayJob"].items():
            uid = job["metadata"]["uid"]
            if (job.get("spec") or {}).get("suspend"):
                since = self._suspended_since.setdefault(uid, now)
                rc = (job.get("status") or {}).get("rayClusterName")
                if rc:
                    clusters[(ns, rc)] = (f"{ns}/{name}", since)
            else:
                self._suspended_since.pop(uid, None)
        for (ns, name), pod in pods.items():
            rc = (pod["metadata"].get("labels") or {}).get(RAY_CLUSTER_LABEL)
            job = clusters.get((ns, rc))
            if job and now - job[1] > self.pod_bound:
                self._violate(f"pod {ns}/{name} of suspended RayJob {job[0]} still exists {self.pod_bound:.0f}s after the suspension")

    def _check_admitted_once(self) -> None:
        admitted_per_job: dict[str, list[str]] = defaultdict(list)
        for (ns, name), wl in self.state["Workload"].items():
            self._ledger.observe(wl)
            if not is_true(wl, "Admitted"):
                continue
            for ref in wl["metadata"].get("ownerReferences") or []:
                admitted_per_job[ref.get("uid")].append(f"{ns}/{name}")
            if excess := self._ledger.excess(wl):
                self._violate(excess)
        for owner, wls in admitted_per_job.items():
            if len(wls) > 1:
                self._violate(f"one job (uid {owner}) has {len(wls)} admitted Workloads at once: {sorted(wls)}")

    def _admitted_uids(self) -> set[str]:
        uids = set()
        for wl in self.state["Workload"].values():
            if is_true(wl, "Admitted"):
                uids |= {r.get("uid") for r in wl["metadata"].get("ownerReferences") or []}
        return uids

    def _check_unsuspended(self) -> None:
        now, admitted, open_now = self._clock(), self._admitted_uids(), set()
        for (ns, name), job in self.state["RayJob"].items():
            uid = job["metadata"]["uid"]
            if (job.get("spec") or {}).get("suspend") or uid in admitted or (job.get("status") or {}).get("jobDeploymentStatus") == REFUSED:
                continue
            open_now.add(uid)
            since = self._unadmitted_since.setdefault(uid, now)
            message = f"RayJob {ns}/{name} unsuspended without an admitted Workload for more than {self.suspend_bound:.0f}s"
            if now - since > self.suspend_bound and message not in self.violations \
                    and self._confirm_unsuspended_without_admission(ns, name, uid):
                self._violate(message)
        for uid in self._unadmitted_since.keys() - open_now:
            if now - self._unadmitted_since.pop(uid) <= self.suspend_bound:
                self.brief_unadmitted += 1

    def _confirm_unsuspended_without_admission(self, ns: str, name: str, uid: str) -> bool:
        try:
            job = get_object(self.api_client, RAYJOB, name, ns)
            wls = list_objects(self.api_client, WORKLOAD, ns).get("items") or []
        except Exception:  # noqa: BLE001 - unconfirmed (the apiserver is away); the next event checks again
            return False
        if job is None or job["spec"].get("suspend") or job["metadata"]["uid"] != uid:
            return False  # deleted or suspended meanwhile
        if (job.get("status") or {}).get("jobDeploymentStatus") == REFUSED:
            return False  # KubeRay refused its spec: nothing of it runs
        return not any(is_true(w, "Admitted") for w in owned_by(wls, uid))

    def _usage(self) -> dict[tuple, Decimal]:
        """Quota held per (ClusterQueue, flavor, resource), summed over Workloads with quota
        reserved. Each Workload's admission is written atomically and all Workloads come in one
        ordered watch stream, so this is consistent where ClusterQueue status (a cache view,
        each queue updated on its own) is not."""
        usage: dict[tuple, Decimal] = defaultdict(Decimal)
        for wl in self.state["Workload"].values():
            for key, qty in self._held(wl):
                usage[key] += qty
        return usage

    def _held(self, wl: dict) -> tuple:
        """((ClusterQueue, flavor, resource), quantity) pairs a Workload holds, parsed once per
        resourceVersion: every event re-sums all Workloads, and at scale (1000 RayJobs) parsing
        each Workload's quantities on every event would leave the watches behind."""
        meta = wl["metadata"]
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        memo = self._held_memo.get(uid)
        if memo and version and memo[0] == version:
            return memo[1]
        admission = (wl.get("status") or {}).get("admission")
        pairs = []
        # A Finished Workload keeps its admission and QuotaReserved=True, but Kueue no longer counts it.
        if admission and is_true(wl, "QuotaReserved") and not is_true(wl, "Finished"):
            for psa in admission.get("podSetAssignments") or []:
                flavors = psa.get("flavors") or {}
                for resource, qty in (psa.get("resourceUsage") or {}).items():
                    pairs.append(((admission.get("clusterQueue"), flavors.get(resource), resource), parse_quantity(qty)))
        if uid and version:
            self._held_memo[uid] = (version, tuple(pairs))
        return tuple(pairs)

    def _check_quota(self) -> None:
        limits: dict[tuple, tuple[Decimal, Decimal | None]] = {}
        cohort_of: dict[str, str | None] = {}
        cohort_nominal: dict[tuple, Decimal] = defaultdict(Decimal)
        for (_, name), cq in self.state["ClusterQueue"].items():
            spec = cq.get("spec") or {}
            cohort_of[name] = spec.get("cohortName")
            for group in spec.get("resourceGroups") or []:
                for f in group.get("flavors") or []:
                    for r in f.get("resources") or []:
                        nominal = parse_quantity(r.get("nominalQuota", 0))
                        borrow = parse_quantity(r["borrowingLimit"]) if "borrowingLimit" in r else None
                        limits[(name, f["name"], r["name"])] = (nominal, borrow)
                        if cohort_of[name]:
                            cohort_nominal[(cohort_of[name], f["name"], r["name"])] += nominal
        unbounded = self._parented  # (a Cohort deleted or cut from its parent leaves that usage admitted)
        for (_, name), cohort in (self.state.get("Cohort") or {}).items():
            spec = cohort.get("spec") or {}
            if spec.get("parentName"):
                unbounded.add(name)
            for group in spec.get("resourceGroups") or []:
                for f in group.get("flavors") or []:
                    for r in f.get("resources") or []:
                        cohort_nominal[(name, f["name"], r["name"])] += parse_quantity(r.get("nominalQuota", 0))
        cohort_usage: dict[tuple, Decimal] = defaultdict(Decimal)
        for (cq, flavor, resource), used in self._usage().items():
            if cq not in cohort_of:
                continue  # a queue this checker has not seen (yet)
            nominal, borrow = limits.get((cq, flavor, resource), (Decimal(0), Decimal(0)))
            cohort = cohort_of[cq]
            ceiling = nominal + (borrow if borrow is not None else (Decimal("Infinity") if cohort else Decimal(0)))
            if used > ceiling:
                self._violate(f"ClusterQueue {cq} holds {used} {resource} of flavor {flavor}, above nominal {nominal} + borrowingLimit {borrow}")
            if cohort:
                cohort_usage[(cohort, flavor, resource)] += used
        for key, used in cohort_usage.items():
            if used > cohort_nominal[key] and key[0] not in unbounded:
                self._violate(f"cohort {key[0]} holds {used} {key[2]} of flavor {key[1]}, above its nominal total {cohort_nominal[key]}")
