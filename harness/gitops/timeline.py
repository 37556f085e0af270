"""A watch-fed record of what happened to some kinds of objects, in the order it was seen.

    timeline = Timeline(api_client, [KUSTOMIZATION, CLUSTER_QUEUE]).start()
    ...
    timeline.first(lambda e: e.kind == "ClusterQueue" and e.type == "ADDED")
    timeline.stop()

One harness.k8s.ListWatch per kind (its own thread): it lists, then watches from the list's
resourceVersion and on from the last version seen, listing again only when the watch breaks,
so no event between two watches is lost; each event carries the monotonic time it arrived and
the object as it was then.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from kubernetes import client

from harness.core import timeouts
from harness.k8s import ListWatch, ResourceType


@dataclass(frozen=True)
class Event:
    at: float  # time.monotonic() when the event arrived
    type: str  # ADDED, MODIFIED, DELETED, or LISTED (present when the watch (re)started)
    kind: str
    name: str
    obj: dict


class Timeline:
    def __init__(self, api_client: client.ApiClient, kinds: list[ResourceType], namespace: str | None = None):
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._watches = [ListWatch(api_client, rtype, namespace=namespace, lock=self._lock,
                                   on_list=self._lister(rtype.kind), on_event=self._recorder(rtype.kind))
                         for rtype in kinds]

    @property
    def errors(self) -> list[str]:
        """Why a watch broke or failed, if one did."""
        return [e for w in self._watches for e in w.errors]

    def start(self) -> "Timeline":
        for w in self._watches:
            w.start(f"timeline-{w.rtype.kind}")
        for w in self._watches:  # the first list is done: nothing from now on is missed
            w.synced.wait(timeouts.WATCH_SYNC)
        return self

    def stop(self) -> None:
        for w in self._watches:
            w.stop()

    def events(self, test: Callable[[Event], bool] = lambda e: True) -> list[Event]:
        with self._lock:
            return [e for e in self._events if test(e)]

    def first(self, test: Callable[[Event], bool]) -> Event | None:
        found = self.events(test)
        return found[0] if found else None

    # Called by the ListWatches with self._lock held.
    def _lister(self, kind: str) -> Callable[[list[dict]], None]:
        def listed(items: list[dict]) -> None:
            now = time.monotonic()
            self._events += [Event(now, "LISTED", kind, obj["metadata"]["name"], obj) for obj in items]
        return listed

    def _recorder(self, kind: str) -> Callable[[str, dict], None]:
        def record(type_: str, obj: dict) -> None:
            self._events.append(Event(time.monotonic(), type_, kind, obj["metadata"]["name"], obj))
        return record
