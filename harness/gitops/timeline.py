"""A watch-fed record of what happened to some kinds of objects, in the order it was seen.

    timeline = Timeline(api_client, [KUSTOMIZATION, CLUSTER_QUEUE]).start()
    ...
    timeline.first(lambda e: e.kind == "ClusterQueue" and e.type == "ADDED")
    timeline.stop()

One thread per kind lists, then follows a watch from the list's resourceVersion (listing again
when the watch expires), so no event between two watches is lost; each event carries the
monotonic time it arrived and the object as it was then.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ApiException


@dataclass(frozen=True)
class Event:
    at: float  # time.monotonic() when the event arrived
    type: str  # ADDED, MODIFIED, DELETED, or LISTED (present when the watch (re)started)
    kind: str
    name: str
    obj: dict


class Timeline:
    def __init__(self, api_client: client.ApiClient, kinds: list[tuple[str, str]], namespace: str | None = None):
        self._dyn = DynamicClient(api_client)
        self._kinds = kinds
        self._namespace = namespace
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []

    def start(self) -> "Timeline":
        started = []
        for api_version, kind in self._kinds:
            ready = threading.Event()
            t = threading.Thread(target=self._follow, args=(api_version, kind, ready), name=f"timeline-{kind}", daemon=True)
            t.start()
            self._threads.append(t)
            started.append(ready)
        for ready in started:  # the first list is done: nothing from now on is missed
            ready.wait(30)
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(10)

    def events(self, test: Callable[[Event], bool] = lambda e: True) -> list[Event]:
        with self._lock:
            return [e for e in self._events if test(e)]

    def first(self, test: Callable[[Event], bool]) -> Event | None:
        found = self.events(test)
        return found[0] if found else None

    def _record(self, type_: str, kind: str, obj: dict) -> None:
        with self._lock:
            self._events.append(Event(time.monotonic(), type_, kind, obj["metadata"]["name"], obj))

    def _follow(self, api_version: str, kind: str, ready: threading.Event) -> None:
        res = self._dyn.resources.get(api_version=api_version, kind=kind)
        while not self._stop.is_set():
            try:
                listing = res.get(namespace=self._namespace)
                for item in listing.items:
                    self._record("LISTED", kind, item.to_dict())
                ready.set()
                version = listing.metadata.resourceVersion
                while not self._stop.is_set():
                    # Short server-side timeouts, so stop() is honoured within a few seconds.
                    for ev in self._dyn.watch(res, namespace=self._namespace, resource_version=version, timeout=3):
                        obj = ev["raw_object"]
                        if ev["type"] == "ERROR":  # e.g. 410 Gone inside the stream
                            raise ApiException(status=obj.get("code"), reason=obj.get("reason"))
                        version = obj["metadata"]["resourceVersion"]
                        if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            self._record(ev["type"], kind, obj)
                        if self._stop.is_set():
                            break
            except ApiException as err:
                if err.status != 410:  # 410 Gone: the version expired; list again
                    self.errors.append(f"{kind}: {err.status} {err.reason}")
                    self._stop.wait(1)
            except Exception as err:  # a broken connection: report it and list again
                self.errors.append(f"{kind}: {type(err).__name__}: {err}")
                self._stop.wait(1)
