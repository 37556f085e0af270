"""The admission ledger behind the invariant checker's "no workload admitted twice": per Workload,
the distinct Admitted=True transitions the watch saw, against the evictions between them.

A Workload may be admitted again only after an eviction. The evictions are counted two ways and the
larger is taken: the Evicted=True transitions the watch itself saw (every write of a Workload is a
watch event, so none is missed unless the stream broke and was listed again), and the highest
count Kueue ever wrote in status.schedulingStats.evictions. Kueue's own counter alone is not enough:
its scheduler writes the admission with a loose server-side apply from the queue's copy of the
Workload (scheduler.go `admit`, `PatchAdmissionStatus` with `WithLooseOnApply`), and that copy can
predate the last eviction, so an apply can set the counter back. A re-admission that neither saw is
a violation, and its message carries the Workload's recent history as the watch saw it."""
from __future__ import annotations

from collections import defaultdict, deque

from harness.k8s import condition

KEEP = 10  # history entries per Workload in a violation message


def _evictions_counted(wl: dict) -> int:
    stats = (wl.get("status") or {}).get("schedulingStats") or {}
    return sum(int(e.get("count", 0)) for e in stats.get("evictions") or [])


def _state(wl: dict) -> str:
    """One line of history: the resourceVersion and the admission state Kueue wrote in it."""
    parts = []
    for ctype in ("QuotaReserved", "Admitted", "Evicted", "Finished"):
        c = condition(wl, ctype)
        if c:
            parts.append(f"{ctype}={c.get('status')}({c.get('reason')}@{c.get('lastTransitionTime')})")
    return f"rv {wl['metadata'].get('resourceVersion')}: {' '.join(parts) or 'no conditions'} evictions={_evictions_counted(wl)}"


class AdmissionLedger:
    def __init__(self) -> None:
        self._admitted: dict[str, set[str]] = defaultdict(set)  # uid -> Admitted=True transition times
        self._evicted: dict[str, set[str]] = defaultdict(set)  # uid -> Evicted=True transition times
        self._counted: dict[str, int] = {}  # uid -> highest eviction count Kueue wrote
        self._history: dict[str, deque] = {}
        self._version: dict[str, str] = {}  # uid -> the resourceVersion last observed
        self._reported: dict[str, int] = {}  # uid -> admissions when its violation was reported
        self.counts_set_back = 0  # versions in which Kueue wrote a lower eviction count than before

    def observe(self, wl: dict) -> None:
        """Takes one version of a Workload (each version once; a version seen again costs nothing)."""
        uid, version = wl["metadata"].get("uid"), wl["metadata"].get("resourceVersion")
        if version is not None and self._version.get(uid) == version:
            return
        self._version[uid] = version
        for ctype, seen in (("Admitted", self._admitted), ("Evicted", self._evicted)):
            c = condition(wl, ctype)
            if c and c.get("status") == "True":
                seen[uid].add(c.get("lastTransitionTime", ""))
        counted = _evictions_counted(wl)
        if counted < self._counted.get(uid, 0):
            self.counts_set_back += 1
        self._counted[uid] = max(self._counted.get(uid, 0), counted)
        history = self._history.setdefault(uid, deque(maxlen=KEEP))
        line = _state(wl)
        if not history or history[-1].split(": ", 1)[1] != line.split(": ", 1)[1]:
            history.append(line)

    def forget(self, uid: str) -> None:
        """A deleted Workload leaves the ledger: memory stays bounded by the live objects."""
        for book in (self._admitted, self._evicted, self._counted, self._history, self._version, self._reported):
            book.pop(uid, None)

    def excess(self, wl: dict) -> str | None:
        """The violation, when this Workload was admitted more often than once plus its evictions
        (once per admission count: its history grows with every event)."""
        uid = wl["metadata"].get("uid")
        admitted = len(self._admitted.get(uid, ()))
        evictions = max(len(self._evicted.get(uid, ())), self._counted.get(uid, 0))
        if admitted <= 1 + evictions or self._reported.get(uid) == admitted:
            return None
        self._reported[uid] = admitted
        meta = wl["metadata"]
        history = "; ".join(self._history.get(uid, ()))
        return (f"Workload {meta.get('namespace')}/{meta.get('name')} admitted {admitted} times with {evictions} evictions "
                f"(history as watched: {history})")
