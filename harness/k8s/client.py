"""A small layer over the kubernetes client's DynamicClient: server-side apply, reads, and
bounded, watch-driven waits (harness.k8s.watch) that report the last state seen when they time out."""
from __future__ import annotations

import itertools
import tempfile
from typing import Callable, Iterable

from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError
from urllib3.exceptions import HTTPError

from harness.core import timeouts
from harness.k8s.kinds import ResourceType
from harness.k8s.conditions import describe_conditions
from harness.k8s.rest import unreachable
from harness.k8s.watch import summary, wait_for

FIELD_MANAGER = "ray-on-aks-harness"

# The DynamicClient caches discovery in a file named after the server's URL, shared by every
# process; local clusters reuse loopback ports, so a new cluster on an old port would inherit the
# old one's APIs (e.g. Flux kinds it does not serve) and get 404s. Each Kube discovers afresh, in a
# file of this process's own directory (removed when the process exits).
_DISCOVERY_DIR = tempfile.TemporaryDirectory(prefix="ray-kueue-discovery-")
_DISCOVERY_IDS = itertools.count()


class _Dynamic(DynamicClient):
    """The DynamicClient whose requests (discovery too) raise ApiUnreachable when the apiserver does not answer."""

    def request(self, method, path, body=None, **params):
        try:
            return super().request(method, path, body=body, **params)
        except HTTPError as err:
            raise unreachable(self.client, err) from None


class Kube:
    def __init__(self, api_client: client.ApiClient):
        self.api_client = api_client
        self.dyn = _Dynamic(api_client, cache_file=f"{_DISCOVERY_DIR.name}/{next(_DISCOVERY_IDS)}.json")

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

    def create(self, obj: dict, dry_run: bool = False, strict: bool = False) -> dict:
        """Create; `dry_run` runs admission and validation only, `strict` rejects unknown and
        duplicate fields (fieldValidation=Strict, what kubectl and server-side apply do)."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = (obj.get("metadata") or {}).get("namespace") if res.namespaced else None
        params = ([("dryRun", "All")] if dry_run else []) + ([("fieldValidation", "Strict")] if strict else [])
        kwargs = {"query_params": params} if params else {}
        return res.create(body=obj, namespace=ns, **kwargs).to_dict()

    def merge_patch(self, api_version: str, kind: str, name: str, namespace: str | None, body: dict) -> dict:
        """A JSON merge patch of the object (a user's edit: admission webhooks see it as an update;
        a None value removes the key)."""
        return self.resource(api_version, kind).patch(body=body, name=name, namespace=namespace,
                                                      content_type="application/merge-patch+json").to_dict()

    def patch_status(self, api_version: str, kind: str, name: str, namespace: str | None, status: dict) -> dict:
        """Merge-patches the status subresource (what a controller writes, not a user)."""
        res = self.resource(api_version, kind)
        return res.status.patch(body={"status": status}, name=name, namespace=namespace,
                                content_type="application/merge-patch+json").to_dict()

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
    def resource_type(self, api_version: str, kind: str) -> ResourceType:
        """The ResourceType of (api_version, kind), plural and scope from discovery."""
        res = self.resource(api_version, kind)
        return ResourceType(api_version, kind, res.name, res.namespaced)

    def wait_for(
        self,
        api_version: str,
        kind: str,
        predicate: Callable[[list[dict]], object],
        describe: str,
        namespace: str | None = None,
        timeout: float = timeouts.DECISION,
        label_selector: str | None = None,
        show: Callable[[dict], str] = describe_conditions,
    ):
        """Waits until predicate(current objects of this kind) is truthy and returns its value
        (harness.k8s.watch.wait_for: list, then watch; each event re-evaluates the predicate
        against the up-to-date set of objects; WaitTimeout carries `show` of the last state seen)."""
        return wait_for(self.api_client, self.resource_type(api_version, kind), predicate, describe,
                        namespace=namespace, timeout=timeout, label_selector=label_selector, show=show)


def apply_order(objs: list[dict]) -> list[dict]:
    """Namespaces and cluster-scoped objects first, so namespaced ones have somewhere to go."""
    rank = {"Namespace": 0, "CustomResourceDefinition": 0, "ResourceFlavor": 1, "WorkloadPriorityClass": 1, "ClusterQueue": 2}
    return sorted(objs, key=lambda o: rank.get(o["kind"], 3))


def owned_by(objs: Iterable[dict], owner_uid: str) -> list[dict]:
    return [o for o in objs if any(r.get("uid") == owner_uid for r in (o.get("metadata") or {}).get("ownerReferences") or [])]
