"""Kubernetes quantities ("500m", "768Gi"), parsed by the official client's own parser, and
formatted for messages and reports.

Importing `kubernetes` runs its package __init__, which loads the whole generated API client
(most of a second, the largest cost of the static gate). The quantity parser is a
self-contained module of that package, so load just that file, once.
"""
from __future__ import annotations

import functools
import importlib.util
import sys
from decimal import Decimal

_NAME = "kubernetes.utils.quantity"


@functools.cache
def _load():
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    spec = importlib.util.find_spec("kubernetes")
    assert spec and spec.submodule_search_locations, "the kubernetes client package is not installed"
    path = f"{spec.submodule_search_locations[0]}/utils/quantity.py"
    mod_spec = importlib.util.spec_from_file_location("_k8s_quantity", path)
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


def parse_quantity(value) -> Decimal:
    """Raises ValueError for anything that is not a valid quantity (a YAML `true` too: the client's parser would read
    it as the int 1, the apiserver refuses a boolean)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is a boolean, not a quantity")
    return _load().parse_quantity(value)


def format_quantity(resource: str, qty: Decimal) -> str:
    """Bytes (memory, ephemeral-storage, storage, hugepages-*) in Gi with one decimal ("7.5Gi"), anything else as
    a plain number ("0.5", "8")."""
    if resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-"):
        gi = qty / 2**30
        return f"{gi.quantize(Decimal('0.1')).normalize():f}Gi"
    return f"{qty.normalize():f}"
