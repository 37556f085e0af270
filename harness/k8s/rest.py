"""Requests at a ResourceType's REST path through the client's ApiClient: no discovery round
trips, and objects stay plain dicts (turning megabytes of CRD schema into client models costs
seconds on a small machine). Failures raise the client's ApiException (an answer other than 2xx) or ApiUnreachable
(no answer: the apiserver is gone, also for the dynamic client of harness.k8s.client)."""
from __future__ import annotations

import json
import re
from typing import Iterable

from urllib3.exceptions import HTTPError

from kubernetes import client
from kubernetes.client.rest import RESTResponse

from harness.core import HarnessError, timeouts
from harness.k8s.kinds import NAMESPACE, ResourceType

RAW_APPLY_MANAGER = "aks-ray-kueue-local-cluster"  # the field manager of CRDs and webhook configurations


class ApiUnreachable(HarnessError):
    """A request got no answer (connection refused or reset, a stream cut, TLS or DNS): urllib3's error (MaxRetryError
    after its retries, ProtocolError), said in one line. The owner of the plane says which of its components died."""


def unreachable(api: client.ApiClient, err: HTTPError) -> ApiUnreachable:
    """`err`, urllib3's, as an ApiUnreachable naming the apiserver and the reason (`[Errno 111] Connection refused`)."""
    text = str(getattr(err, "reason", None) or err)
    reason = re.search(r"\[Errno -?\d+\][^'\")]*", text)
    return ApiUnreachable(f"the apiserver at {api.configuration.host} does not answer: "
                          f"{reason.group(0).strip() if reason else text.splitlines()[0] if text else type(err).__name__}")


def request(api: client.ApiClient, method: str, path: str, *, query: Iterable[tuple[str, object]] = (),
            body: dict | None = None, content_type: str | None = None,
            timeout: float | tuple[float, float] | None = timeouts.REQUEST) -> RESTResponse:
    """One request; the response is not read yet (a watch streams it). Non-2xx raises ApiException."""
    headers = {"Accept": "application/json", **({"Content-Type": content_type} if content_type else {})}
    method, url, headers, body, _ = api.param_serialize(method, path, query_params=list(query), header_params=headers,
                                                        body=body, auth_settings=["BearerToken"])
    try:
        resp = api.call_api(method, url, header_params=headers, body=body, _request_timeout=timeout)
    except HTTPError as err:
        raise unreachable(api, err) from None
    if not 200 <= resp.status < 300:
        resp.read()
        api.response_deserialize(resp, {})  # raises ApiException (status, reason, body) for this status
    return resp


def list_objects(api: client.ApiClient, rtype: ResourceType, namespace: str | None = None,
                 label_selector: str | None = None, timeout: float = timeouts.REQUEST) -> dict:
    """The List (`items`, `metadata.resourceVersion`) of a type, in `namespace` or across all."""
    query = [("labelSelector", label_selector)] if label_selector else []
    return json.loads(request(api, "GET", rtype.path(namespace), query=query, timeout=timeout).read())


def get_object(api: client.ApiClient, rtype: ResourceType, name: str, namespace: str | None = None) -> dict | None:
    try:
        return json.loads(request(api, "GET", rtype.path(namespace, name)).read())
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise


def server_side_apply(api: client.ApiClient, rtype: ResourceType, body: dict, manager: str = RAW_APPLY_MANAGER) -> dict:
    """PATCH with application/apply-patch+yaml (JSON is YAML), forcing conflicts; returns the object."""
    meta = body["metadata"]
    resp = request(api, "PATCH", rtype.path(meta.get("namespace"), meta["name"]),
                   query=[("fieldManager", manager), ("force", "true")], body=body,
                   content_type="application/apply-patch+yaml")
    return json.loads(resp.read())


def merge_patch(api: client.ApiClient, rtype: ResourceType, name: str, body: dict, namespace: str | None = None) -> dict:
    """PATCH with application/merge-patch+json (RFC 7386): sets only the fields in `body`."""
    resp = request(api, "PATCH", rtype.path(namespace, name), body=body, content_type="application/merge-patch+json")
    return json.loads(resp.read())


def ensure_namespace(api: client.ApiClient, name: str) -> None:
    """Creates namespace `name` unless it exists."""
    try:
        request(api, "POST", NAMESPACE.path(), body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except client.ApiException as err:
        if err.status != 409:
            raise
