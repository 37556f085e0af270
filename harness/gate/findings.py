"""Findings of the static gate and their text, JSON and JUnit XML forms."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import total_ordering
from pathlib import Path

from junit_xml import TestCase, TestSuite, to_xml_report_string

from harness.core import HarnessError


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
        where = f" [{self.context}]" if self.context else ""
        resource = f" {self.resource}" if self.resource else ""
        level = " warning" if self.severity == "warning" else ""
        return f"{self.location()}:{level}{resource} {self.rule}: {self.message}{where}\n    fix: {self.hint}"


def to_json(findings: list[Finding]) -> str:
    errors = sum(f.is_error for f in findings)
    return json.dumps({"findings": [asdict(f) for f in findings], "count": len(findings),
                       "errors": errors, "warnings": len(findings) - errors}, indent=2)


def to_junit(findings: list[Finding], checks: list[str]) -> str:
    """One test case per check that ran; a check with errors fails with all of its findings, one
    with only warnings passes and carries them as its output."""
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, []).append(f)
    cases = []
    for check in sorted(set(checks) | set(by_rule)):
        case = TestCase(name=check, classname="static-gate")
        found = by_rule.get(check, [])
        if any(f.is_error for f in found):
            case.add_failure_info(message=f"{len(found)} finding(s)", output="\n".join(f.text() for f in found))
        elif found:
            case.stdout = "\n".join(f.text() for f in found)
        cases.append(case)
    return to_xml_report_string([TestSuite("static-gate", cases)])


class ReportError(HarnessError, OSError):
    """A report file could not be written (a directory, an uncreatable path, no permission)."""


def write_reports(findings: list[Finding], checks: list[str], json_path: Path | None, junit_path: Path | None) -> None:
    for path, render in ((json_path, to_json), (junit_path, lambda f: to_junit(f, checks))):
        if path:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render(findings))
            except OSError as err:
                raise ReportError(f"cannot write {path}: {err.strerror or err}") from None
