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
    """One readable line of what a wait shows of an object it gave up on: `Kind namespace/name: Type=Status (Reason: message); ...`,
    or, for an object without conditions, its spec.suspend and the plain values of its status (a RayJob's jobDeploymentStatus)."""
    meta = obj.get("metadata") or {}
    name = "/".join(filter(None, (meta.get("namespace"), meta.get("name"))))
    found = [f"{c.get('type')}={c.get('status')}" + (f" ({': '.join(filter(None, (c.get('reason'), _short(c.get('message')))))})"
                                                     if c.get("reason") or c.get("message") else "") for c in conditions(obj)]
    if not found:
        spec, status = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}, obj.get("status") or {}
        plain = {**({"suspend": spec["suspend"]} if "suspend" in spec else {}),
                 **{k: v for k, v in status.items() if isinstance(v, (str, int, float, bool)) and v != ""}}
        found = [f"{k}={_short(str(v))}" for k, v in list(plain.items())[:6]]
    return f"{obj.get('kind')} {name}: " + ("; ".join(found) or "no status yet")


def _short(text: str | None, limit: int = 200) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
