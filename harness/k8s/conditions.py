"""Status conditions (`status.conditions[]`) of any object, as plain dicts: the one place they
are looked up."""
from __future__ import annotations


def conditions(obj: dict | None) -> list[dict]:
    """The object's conditions, [] when it has none (or is None)."""
    return ((obj or {}).get("status") or {}).get("conditions") or []


def condition(obj: dict | None, ctype: str) -> dict | None:
    """The condition of type `ctype`, or None."""
    return next((c for c in conditions(obj) if c.get("type") == ctype), None)


def is_true(obj: dict | None, ctype: str) -> bool:
    return (condition(obj, ctype) or {}).get("status") == "True"


def is_false(obj: dict | None, ctype: str) -> bool:
    """Explicitly False (a missing condition is neither True nor False)."""
    return (condition(obj, ctype) or {}).get("status") == "False"


def describe_conditions(obj: dict) -> str:
    """`Kind name: [(type, status, reason, message), ...]`, what a wait shows of an object it gave up on."""
    found = [(c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in conditions(obj)]
    return f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}: {found}"
