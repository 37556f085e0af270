"""The apiserver's verdict on an object, by server-side dry-run create: what the parity tests hold the gate to."""
from __future__ import annotations

import json

from kubernetes.dynamic.exceptions import ApiException


def server_verdict(kube, obj: dict, strict: bool = True) -> str | None:
    """None when the apiserver (with Kueue's webhooks) accepts `obj` on create, else its message and causes.
    `strict`: unknown fields are refused (fieldValidation=Strict), as the gate's checks refuse them."""
    try:
        kube.create(obj, dry_run=True, strict=strict)
        return None
    except ApiException as err:
        body = json.loads(err.body) if err.body else {}
        causes = [f"{c.get('field')}: {c.get('message')}" for c in (body.get("details") or {}).get("causes") or []]
        return " | ".join([body.get("message", str(err)), *causes])
