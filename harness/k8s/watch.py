"""The one list-then-watch loop of the harness (the only module that opens Kubernetes watches).

    lw = ListWatch(api_client, WORKLOAD, namespace="ray", on_event=seen)
    lw.run(until=lambda: ..., deadline=time.monotonic() + 60)    # in this thread, or
    lw.start("invariants-Workload"); ...; lw.stop()              # in a thread of its own

It lists, then watches from the list's resourceVersion, and watches on from the last version
seen (bookmarks included) when a watch request ends. It lists again after 410 Gone (`expired`),
and after a broken stream, a refused connection or an apiserver that answers 404/5xx while it
restarts (`reconnects`, with the reason in `errors`); an object that vanished meanwhile is
delivered as DELETED. Errors that no retry heals (400, 401, 403, 422) are raised. `state`
holds every object as last seen, keyed by (namespace, name), for the caller and for timeout
messages; `wait_for` is the bounded wait on it that reports that state when it runs out.
"""
from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Callable

from kubernetes import client, watch

from harness.core import HarnessError, timeouts
from harness.k8s.conditions import describe_conditions
from harness.k8s.kinds import ResourceType
from harness.k8s.rest import list_objects, request

FATAL = {400, 401, 403, 405, 406, 415, 422}  # what listing again cannot heal
MAX_ERRORS = 20
MAX_SHOWN = 20  # objects a timeout message shows, one line each
END = object()  # the watch request's window ended

Key = tuple  # (namespace or None, name)


class WaitTimeout(HarnessError, AssertionError):
    """A wait ran out of time; the message carries the last state of every object seen."""


def key(obj: dict) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace"), meta.get("name")


def summary(obj: dict) -> str:
    """The parts of an object that explain Kueue decisions, as JSON, for assertion messages and logs (a timeout shows describe_conditions)."""
    keep = {"metadata": {k: obj.get("metadata", {}).get(k) for k in ("name", "namespace", "labels", "resourceVersion")}}
    for part in ("spec", "status"):
        if part in obj:
            keep[part] = obj[part]
    if obj.get("kind") == "RayJob":  # the full rayClusterSpec drowns the interesting fields
        keep["spec"] = {k: obj.get("spec", {}).get(k) for k in ("suspend", "shutdownAfterJobFinishes")}
    return json.dumps(keep, indent=1, default=str)[:4000]


class ListWatch:
    """List-then-watch of one resource type; callbacks run with `lock` held, after `state` changed.

    on_event(type, obj): ADDED, MODIFIED or DELETED from the watch, or DELETED for an object
    gone between a broken watch and the next listing. on_list(items): after every listing.
    """

    def __init__(self, api: client.ApiClient, rtype: ResourceType, *, namespace: str | None = None,
                 label_selector: str | None = None, on_event: Callable[[str, dict], None] | None = None,
                 on_list: Callable[[list[dict]], None] | None = None, lock=None,
                 window: float = timeouts.WATCH_WINDOW, retry: float = timeouts.WATCH_RETRY):
        self.api, self.rtype, self.namespace, self.label_selector = api, rtype, namespace, label_selector
        self.on_event, self.on_list = on_event, on_list
        self.lock = lock if lock is not None else threading.Lock()
        self.window, self.retry = window, retry
        self.state: dict[Key, dict] = {}
        self.reconnects = 0  # listings after a broken stream or a failed request
        self.expired = 0     # listings after 410 Gone
        self.errors: list[str] = []  # why streams broke, newest last
        self.failure: BaseException | None = None  # what ended a background loop
        self.synced = threading.Event()  # set once the first listing is in
        self.thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._watch = watch.Watch()
        self._response = None  # the open watch response, shut down by stop()
        self._response_lock = threading.Lock()

    # -- running ----------------------------------------------------------------------------------
    def run(self, until: Callable[[], object] | None = None, deadline: float | None = None):
        """Follows the type until `until()` is truthy (returns its value), stop(), or the
        time.monotonic() `deadline` (returns None). Only failed requests and broken streams are
        retried; an exception of a callback or of `until` is raised."""
        version = None  # None: list (again) before watching
        while not self._stopped.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                return None
            if version is None:
                try:
                    listing = list_objects(self.api, self.rtype, self.namespace, self.label_selector)
                except Exception as err:  # noqa: BLE001 - _failed sorts it: list again, or raise
                    self._failed(err, deadline)
                    continue
                version = self._take(listing)
                if until and (value := until()):
                    return value
                continue
            with contextlib.closing(self._stream(version, deadline)) as stream:
                while True:
                    try:
                        event = next(stream, END)
                    except Exception as err:  # noqa: BLE001
                        version = self._failed(err, deadline)
                        break
                    if event is END:
                        break  # the window ended: watch on from `version`
                    if not isinstance(event, dict):
                        continue  # a line that is no event (the client yields None for those)
                    version = self._apply(event) or version
                    if until and (value := until()):
                        return value
                    if self._stopped.is_set():
                        return None
        return None

    def _failed(self, err: Exception, deadline: float | None) -> None:
        """A request failed or a stream broke: count it and pause (None: list again), or raise."""
        if self._stopped.is_set():
            return None
        if isinstance(err, client.ApiException) and err.status == 410:
            self.expired += 1
            return None
        if isinstance(err, client.ApiException) and err.status in FATAL:
            raise err
        self._broken(err)
        self._stopped.wait(self.retry if deadline is None else min(self.retry, max(0.0, deadline - time.monotonic())))
        return None

    def start(self, name: str | None = None) -> "ListWatch":
        """run() in a daemon thread; a fatal error ends it and stays in `failure`."""
        def loop():
            try:
                self.run()
            except BaseException as err:  # noqa: BLE001 - kept for the owner to report
                self.failure = err
                self._note(err)
        self.thread = threading.Thread(target=loop, name=name or f"watch-{self.rtype.kind}", daemon=True)
        self.thread.start()
        return self

    def stop(self, join: float = timeouts.THREAD_JOIN) -> None:
        """Ends the loop: the open watch request is shut down, so a blocked read returns at once."""
        self._stopped.set()
        self._watch.stop()
        with self._response_lock:
            if self._response is not None:
                try:
                    self._response.shutdown()
                except (ValueError, RuntimeError, OSError):
                    pass  # already closed or released: nothing blocks on it
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(join)

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    # -- one listing, one watch -------------------------------------------------------------------
    def _take(self, listing: dict) -> str:
        items = listing.get("items") or []
        for obj in items:  # list items of built-in types come without them
            obj.setdefault("apiVersion", self.rtype.api_version)
            obj.setdefault("kind", self.rtype.kind)
        with self.lock:
            fresh = {key(o): o for o in items}
            gone = [o for k, o in self.state.items() if k not in fresh]
            self.state.clear()
            self.state.update(fresh)
            if self.on_event:
                for obj in gone:  # deleted while no watch was open
                    self.on_event("DELETED", obj)
            if self.on_list:
                self.on_list(items)
        self.synced.set()
        return listing["metadata"]["resourceVersion"]

    def _stream(self, version: str, deadline: float | None):
        window = self.window if deadline is None else min(self.window, deadline - time.monotonic())
        if window > 0:
            yield from self._watch.stream(self._watch_request, resource_version=version, timeout_seconds=max(1, int(window)))

    def _watch_request(self, **kw):
        # Watch.stream calls this with watch=True, _preload_content=False and the arguments above.
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("resourceVersion", kw["resource_version"]),
                 ("timeoutSeconds", kw["timeout_seconds"])]
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        resp = request(self.api, "GET", self.rtype.path(self.namespace), query=query,
                       timeout=(timeouts.REQUEST, kw["timeout_seconds"] + timeouts.REQUEST)).response
        with self._response_lock:
            self._response = resp
        if self._stopped.is_set():
            resp.close()
        return resp

    def _apply(self, event: dict) -> str | None:
        etype, obj = event["type"], event["object"]
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            return version  # BOOKMARK: only the version moves on
        with self.lock:
            if etype == "DELETED":
                self.state.pop(key(obj), None)
            else:
                self.state[key(obj)] = obj
            if self.on_event:
                self.on_event(etype, obj)
        return version

    def _broken(self, err: BaseException) -> None:
        self.reconnects += 1
        self._note(err)

    def _note(self, err: BaseException) -> None:
        status = f" {err.status} {err.reason}" if isinstance(err, client.ApiException) else ""
        self.errors.append(f"{self.rtype.kind}: {type(err).__name__}{status}: {str(err)[:200]}")
        del self.errors[:-MAX_ERRORS]


def wait_for(api: client.ApiClient, rtype: ResourceType, predicate: Callable[[list[dict]], object], describe: str, *,
             namespace: str | None = None, timeout: float = timeouts.DECISION, label_selector: str | None = None,
             show: Callable[[dict], str] = describe_conditions):
    """Waits until predicate(current objects of the type) is truthy and returns its value; raises
    WaitTimeout with `show` (default: one line of conditions) of the objects last seen, at most
    MAX_SHOWN of them (and why streams broke, if they did)."""
    lw = ListWatch(api, rtype, namespace=namespace, label_selector=label_selector)
    value = lw.run(until=lambda: predicate(list(lw.state.values())), deadline=time.monotonic() + timeout)
    if value:
        return value
    shown = [line for line in (show(o) for o in lw.state.values()) if line]
    more = f"\n(and {len(shown) - MAX_SHOWN} more)" if len(shown) > MAX_SHOWN else ""
    seen = "\n".join(shown[:MAX_SHOWN]) + more or "(no objects)"
    broken = f"\nthe watch broke {lw.reconnects} times; last errors: {lw.errors[-3:]}" if lw.reconnects else ""
    raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {describe}; last state of {rtype.kind} objects:\n{seen}{broken}")
