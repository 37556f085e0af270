"""Findings of the static gate and their text form (the reports are in harness/gate/formats.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import total_ordering


SEVERITIES = ("error", "warning")


@total_ordering
@dataclass(frozen=True)
class Finding:
    file: str  # repository-relative source file
    line: int | None  # 1-based, where the YAML parser gives one
    resource: str  # Kind/name (namespace/name for namespaced objects), or "" for a file
    rule: str  # stable rule id, e.g. "localqueue-clusterqueue"
    message: str
    hint: str  # how to fix it
    context: str = ""  # which build, cluster or sample the finding came from
    severity: str = "error"  # "error" fails the gate (exit 1); "warning" is reported and passes
    # Resource ids of the objects the finding presumes the cluster accepted: when the apiserver or Kueue's webhook
    # rejects one, that refusal is the cause and the finding is folded under it (harness.gate.folding). Not reported.
    presumes: tuple[str, ...] = field(default=(), compare=False, repr=False)
    # Resource ids of the objects whose absence the finding reports as the cause (the deleted workload ServiceAccount): a
    # finding that presumes one of them is a follow-on and is folded under it (harness.gate.folding). Not reported.
    absent: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def sort_key(self) -> tuple:
        """File, then line (a finding without one first), then the rest: any two findings compare."""
        return (self.file, self.line or 0, self.resource, self.rule, self.message, self.hint, self.context)

    def __lt__(self, other: "Finding") -> bool:
        return self.sort_key() < other.sort_key() if isinstance(other, Finding) else NotImplemented

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def text(self) -> str:
        """Two lines: what repository content puts in it (a file name, a value in a message) cannot start a line of its own,
        where a CI runner would read it as a workflow command (::error ...)."""
        where = f" [{self.context}]" if self.context else ""
        resource = f" {self.resource}" if self.resource else ""
        level = " warning" if self.severity == "warning" else ""
        return (one_line(f"{self.location()}:{level}{resource} {self.rule}: {self.message}{where}") + "\n    fix: "
                + one_line(self.hint))


_CLUSTER = re.compile(r"cluster ([^\s:,;\]]+)")


def _clusters(context: str) -> list[str]:
    """The cluster names a (merged) context starts its parts with, in order, once each."""
    return list(dict.fromkeys(m.group(1) for part in context.split("; ") if (m := _CLUSTER.match(part))))


def _unnamed(message: str, clusters: list[str]) -> str:
    """`message` with the names of `clusters` written as a placeholder (\0)."""
    for name in clusters:
        message = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "\0", message)
    return message


def keep_once(unique: dict, f: Finding) -> bool:
    """Adds `f` to `unique` (keyed by where it is and what it says, the name of its cluster aside) unless it is there; a
    repeat from another context (the same sample, or the same value, on another cluster) adds its context to the kept
    one's, and the kept message names every cluster where it names one. True when `f` was new."""
    template = _unnamed(f.message, _clusters(f.context))
    hint = _unnamed(f.hint, _clusters(f.context)) if template != f.message else None  # (a fix for each cluster's own file stays apart)
    key = (f.file, f.line, f.resource, f.rule, template, hint)
    kept = unique.get(key)
    if kept is None:
        unique[key] = f
        return True
    if f.context and f.context not in kept.context.split("; "):
        context = f"{kept.context}; {f.context}" if kept.context else f.context
        names = ", ".join(_clusters(context))
        unique[key] = replace(kept, context=context, message=template.replace("\0", names),
                              hint=hint.replace("\0", names) if hint is not None else kept.hint)
    return False


def distinct(found: list[Finding]) -> int:
    """How many findings `found` are once repeats from other contexts are merged as `keep_once` merges them."""
    unique: dict = {}
    for f in found:
        keep_once(unique, f)
    return len(unique)


def one_line(text: str, keep: str = "\t") -> str:
    """`text` with its line breaks written as \\n (and other control characters as escapes); the characters in `keep`
    stay as they are (a report format that escapes line breaks its own way keeps them)."""
    return "".join(c if c.isprintable() or c in keep else c.encode("unicode_escape").decode() for c in text)
