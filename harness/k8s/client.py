"""A small layer over the kubernetes client's DynamicClient: server-side apply, and bounded,
watch-driven waits that report the last state seen when they time out."""
from __future__ import annotations

import json
import time
from typing import Callable, Iterable

from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ApiException, NotFoundError

FIELD_MANAGER = "ray-on-aks-harness"


class WaitTimeout(AssertionError):
    """A wait ran out of time; the message carries the last state of every object seen."""


def _name(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}/{meta.get('namespace') + '/' if meta.get('namespace') else ''}{meta.get('name')}"


def summary(obj: dict) -> str:
    """The parts of an object that explain Kueue decisions, for timeout messages and logs."""
    keep = {"metadata": {k: obj.get("metadata", {}).get(k) for k in ("name", "namespace", "labels", "resourceVersion")}}
    for key in ("spec", "status"):
        if key in obj:
            keep[key] = obj[key]
    if obj.get("kind") == "RayJob":  # the full rayClusterSpec drowns the interesting fields
        keep["spec"] = {k: obj.get("spec", {}).get(k) for k in ("suspend", "shutdownAfterJobFinishes")}
    return json.dumps(keep, indent=1, default=str)[:4000]


class Kube:
    def __init__(self, api_client: client.ApiClient):
        self.api_client = api_client
        self.dyn = DynamicClient(api_client)

    def resource(self, api_version: str, kind: str):
        return self.dyn.resources.get(api_version=api_version, kind=kind)

    # -- writes ------------------------------------------------------------------------------
    def apply(self, obj: dict, dry_run: bool = False, manager: str = FIELD_MANAGER) -> dict:
        """Server-side apply (force, like a controller that owns its fields)."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = (obj.get("metadata") or {}).get("namespace") if res.namespaced else None
        kwargs = {"dry_run": "All"} if dry_run else {}
        out = res.server_side_apply(body=obj, name=obj["metadata"]["name"], namespace=ns, field_manager=manager,
                                    force_conflicts=True, **kwargs)
        return out.to_dict()

    def create(self, obj: dict, dry_run: bool = False) -> dict:
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = (obj.get("metadata") or {}).get("namespace") if res.namespaced else None
        kwargs = {"query_params": [("dryRun", "All")]} if dry_run else {}
        return res.create(body=obj, namespace=ns, **kwargs).to_dict()

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, missing_ok: bool = True) -> None:
        try:
            self.resource(api_version, kind).delete(name=name, namespace=namespace, propagation_policy="Background")
        except NotFoundError:
            if not missing_ok:
                raise

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.resource(api_version, kind).get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None

    def list(self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        out = self.resource(api_version, kind).get(namespace=namespace, label_selector=label_selector).to_dict()
        return out.get("items") or []

    # -- waits -------------------------------------------------------------------------------
    def wait_for(
        self,
        api_version: str,
        kind: str,
        predicate: Callable[[list[dict]], object],
        describe: str,
        namespace: str | None = None,
        timeout: float = 60,
        label_selector: str | None = None,
    ):
        """Waits until predicate(current objects of this kind) is truthy and returns its value.

        Lists once, then follows a watch (re-listing only if the watch breaks); each event
        re-evaluates the predicate against the up-to-date set of objects.
        """
        res = self.resource(api_version, kind)
        deadline = time.monotonic() + timeout
        state: dict[str, dict] = {}
        while True:
            listing = res.get(namespace=namespace, label_selector=label_selector)
            state = {_name(o): o for o in (i.to_dict() for i in listing.items)}
            value = predicate(list(state.values()))
            if value:
                return value
            version = listing.metadata.resourceVersion
            try:
                for event in self.dyn.watch(res, namespace=namespace, label_selector=label_selector,
                                            resource_version=version, timeout=max(1, int(deadline - time.monotonic()))):
                    obj = event["raw_object"]
                    if event["type"] == "DELETED":
                        state.pop(_name(obj), None)
                    elif event["type"] in ("ADDED", "MODIFIED"):
                        state[_name(obj)] = obj
                    value = predicate(list(state.values()))
                    if value:
                        return value
                    if time.monotonic() >= deadline:
                        break
            except ApiException as err:  # 410 Gone and friends: list again
                if err.status != 410:
                    raise
            if time.monotonic() >= deadline:
                seen = "\n".join(summary(o) for o in state.values()) or "(no objects)"
                raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {describe}; last state of {kind} objects:\n{seen}")


def apply_order(objs: list[dict]) -> list[dict]:
    """Namespaces and cluster-scoped objects first, so namespaced ones have somewhere to go."""
    rank = {"Namespace": 0, "CustomResourceDefinition": 0, "ResourceFlavor": 1, "WorkloadPriorityClass": 1, "ClusterQueue": 2}
    return sorted(objs, key=lambda o: rank.get(o["kind"], 3))


def condition(obj: dict | None, ctype: str) -> dict | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def is_true(obj: dict | None, ctype: str) -> bool:
    c = condition(obj, ctype)
    return bool(c and c.get("status") == "True")


def owned_by(objs: Iterable[dict], owner_uid: str) -> list[dict]:
    return [o for o in objs if any(r.get("uid") == owner_uid for r in (o.get("metadata") or {}).get("ownerReferences") or [])]
