"""CustomResourceDefinitions from the pinned Go modules: their documents (parsed once and cached),
installed with server-side apply, and the wait until the apiserver serves them.

The CRDs are applied as the bases ship them, with conversion strategy None (Kueue's chart adds a
/convert webhook): v1beta2 is the storage version, so v1beta2 clients, which all of this
repository's are, need no conversion; a v1beta1 request would get unconverted fields.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml
from kubernetes import client

from harness.core import atomic_write, cache_root, timeouts
from harness.k8s.conditions import conditions, is_true
from harness.k8s.kinds import CRD
from harness.k8s.rest import server_side_apply
from harness.k8s.watch import wait_for


def crd_documents(directory: Path) -> list[dict]:
    """The CRDs of a module's CRD directory, parsed once and cached as JSON.

    Module directories in GOMODCACHE are immutable and versioned in their path, so the cache
    never goes stale; parsing the 4 MB of YAML takes seconds even with libyaml, JSON milliseconds.
    """
    digest = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    cache = cache_root() / "manifests" / f"crds-{digest}.json"
    try:
        return json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = []
    for path in sorted(directory.glob("*.yaml")):
        docs += [d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader) if d and d.get("kind") == CRD.kind]
    if not docs:
        raise FileNotFoundError(f"no CRDs under {directory}")
    atomic_write(cache, json.dumps(docs))  # parallel runs may race here
    return docs


def install_crds(api: client.ApiClient, crds: list[dict], timeout: float = timeouts.CRDS_ESTABLISHED) -> None:
    """Server-side apply of every CRD, then the wait until all are Established.

    One at a time: each new CRD makes the apiserver rebuild discovery and OpenAPI, and parallel
    appliers were slower (40 s against 15 s, measured on 2 cores)."""
    for crd in crds:
        server_side_apply(api, CRD, crd)
    wait_crds_established(api, {c["metadata"]["name"] for c in crds}, timeout)


def wait_crds_established(api: client.ApiClient, names: set[str], timeout: float = timeouts.CRDS_ESTABLISHED) -> None:
    """Watches CRDs until every one of `names` has Established=True and NamesAccepted=True;
    WaitTimeout names the ones that are not, with their conditions."""
    def established(crd: dict | None) -> bool:
        return is_true(crd, "Established") and is_true(crd, "NamesAccepted")

    def all_established(items: list[dict]) -> bool:
        by_name = {c["metadata"]["name"]: c for c in items}
        return all(established(by_name.get(n)) for n in names)

    def pending(crd: dict) -> str:
        name = crd["metadata"]["name"]
        return f"{name}: {json.dumps(conditions(crd))}" if name in names and not established(crd) else ""

    wait_for(api, CRD, all_established, f"{len(names)} CRDs Established and NamesAccepted", timeout=timeout, show=pending)
