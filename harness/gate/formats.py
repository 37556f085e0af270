"""The static gate's report formats: JSON, JUnit XML, GitHub Actions workflow commands and SARIF
2.1.0 (the text form is Finding.text()), and where each report goes (`FORMAT[=DEST]`, `-` for
stdout).

The JSON report follows harness/schemas-for-data/validate.schema.json; the README's "Reports"
section describes it and the SARIF run.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote
from typing import TextIO

from harness.core import HarnessError, tell
from harness.gate.findings import Finding, one_line

FORMATS = ("text", "json", "junit", "github", "sarif")
STDOUT = "-"
STDERR = "<stderr>"  # where the text report goes when another report has stdout (never parsed from a spec)
TOOL = "ray-kueue-validate"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"  # the uriBaseId of every location: the root of the repository that was validated


class ReportError(HarnessError, OSError):
    """A report file could not be written (a directory, an uncreatable path, no permission)."""


class FormatError(HarnessError, ValueError):
    """A --format value that names no format, or two reports sent to one destination."""


@dataclass(frozen=True)
class Output:
    """One report: its format and where it goes (a path, STDOUT or STDERR). `implied`: the text report the gate adds
    beside the reports asked for when none of them is text; it moves to stderr when stdout is closed, and, as nobody
    asked for it, a stream that cannot take it leaves it out without changing the exit code."""

    format: str
    dest: str = STDOUT
    implied: bool = False

    @classmethod
    def parse(cls, spec: str) -> "Output":
        """`json`, `json=-` or `json=build/gate.json`."""
        name, sep, dest = spec.partition("=")
        if name not in FORMATS:
            raise FormatError(f"unknown format {name!r} (choose from {', '.join(FORMATS)})")
        if sep and not dest:
            raise FormatError(f"{spec!r}: no destination after '=' (a path, or - for stdout)")
        return cls(name, dest or STDOUT)


def plan_outputs(outputs: list[Output]) -> list[Output]:
    """The reports to write: those asked for, plus the text report when none was asked for, on
    stdout unless another report has it (then on stderr, so that stdout stays parseable).
    Two reports to one destination are refused."""
    seen: dict[str, str] = {}
    for out in outputs:
        # /dev/stdout and /dev/fd/1 are stdout too (when it is not redirected, they resolve to its terminal or pipe)
        key = STDOUT if out.dest in (STDOUT, "/dev/stdout", "/dev/fd/1") else str(Path(out.dest).resolve())
        if key in seen:
            where = "stdout" if out.dest == STDOUT else out.dest
            raise FormatError(f"both {seen[key]} and {out.format} would be written to {where}; give one a file (FORMAT=PATH)")
        seen[key] = out.format
    if not any(o.format == "text" for o in outputs):
        outputs = [Output("text", STDERR if STDOUT in seen else STDOUT, implied=bool(outputs)), *outputs]
    return outputs


def to_json(findings: list[Finding], disabled: list[str] = (), suppressed: int = 0) -> str:
    """`disabled`: per `disable` entry of the gate's configuration, what it turned off and why; `suppressed`: the
    findings those entries kept out of the report."""
    errors = sum(f.is_error for f in findings)
    return json.dumps({"findings": [{k: v for k, v in asdict(f).items() if k not in ("presumes", "absent")} for f in findings], "count": len(findings),
                       "errors": errors, "warnings": len(findings) - errors, "disabled": list(disabled), "suppressed": suppressed},
                      indent=2)


def to_junit(findings: list[Finding], checks: list[str], disabled: list[str] = ()) -> str:
    """One test case per check that ran; a check with errors fails with all of its findings, one
    with only warnings passes and carries them as its output. Each `disable` entry of the gate's
    configuration is a skipped case saying what it turned off and why."""
    from junit_xml import TestCase, TestSuite, to_xml_report_string  # xml.dom: only a JUnit report pays its import

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
    for i, entry in enumerate(disabled, 1):
        case = TestCase(name=f"disabled-{i}", classname="static-gate")
        case.add_skipped_info(message=entry)
        cases.append(case)
    return to_xml_report_string([TestSuite("static-gate", cases)])


def _escape_data(text: str) -> str:
    """A workflow command's message, escaped as @actions/core escapes it (toolkit's command.ts)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """A workflow command's property value (file, title): also ':' and ','."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _summary(f: Finding) -> str:
    resource = f"{f.resource}: " if f.resource else ""
    where = f" [{f.context}]" if f.context else ""
    return f"{resource}{f.message}{where}"


def to_github(findings: list[Finding]) -> str:
    """One workflow command per finding: `::error` or `::warning` with the file, the line and the
    rule as its title; GitHub shows them as annotations on the pull request's files."""
    lines = []
    for f in findings:
        props = [f"file={_escape_property(f.file)}"]
        if f.line:
            props.append(f"line={f.line}")
        props.append(f"title={_escape_property(f.rule)}")
        command = "error" if f.is_error else "warning"
        message = _escape_data(one_line(f"{_summary(f)}\nfix: {f.hint}", keep="\t\r\n"))  # an ESC made visible, as in the text report
        lines.append(f"::{command} {','.join(props)}::{message}")
    return "".join(line + "\n" for line in lines)


def to_sarif(findings: list[Finding], rules: dict[str, str], version: str, disabled: list[str] = ()) -> str:
    """One SARIF 2.1.0 run: every rule the gate has (short description from its rule table, help
    from the hints its findings gave), one result per finding at its repository-relative file and line;
    each `disable` entry of the gate's configuration is a tool configuration notification of the invocation."""
    hints: dict[str, list[str]] = {}
    for f in findings:
        if f.hint not in hints.setdefault(f.rule, []):
            hints[f.rule].append(f.hint)
    ids = sorted(set(rules) | set(hints))
    index = {rule: i for i, rule in enumerate(ids)}
    descriptors = []
    for rule in ids:
        descriptor = {"id": rule, "name": rule, "shortDescription": {"text": rules.get(rule, rule)}}
        if hints.get(rule):
            descriptor["help"] = {"text": "\n".join(hints[rule])}
        descriptors.append(descriptor)
    results = []
    for f in findings:
        physical: dict = {"artifactLocation": {"uri": quote(f.file), "uriBaseId": SRCROOT}}  # a relative URI reference (RFC 3986)
        if f.line:
            physical["region"] = {"startLine": f.line}
        location: dict = {"physicalLocation": physical}
        if f.resource:
            location["logicalLocations"] = [{"fullyQualifiedName": f.resource, "kind": "resource"}]
        result = {"ruleId": f.rule, "ruleIndex": index[f.rule], "level": "error" if f.is_error else "warning",
                  "message": {"text": f"{_summary(f)}\nfix: {f.hint}"}, "locations": [location]}
        if f.context:
            result["properties"] = {"context": f.context}
        results.append(result)
    run = {"tool": {"driver": {"name": TOOL, "version": version, "semanticVersion": version, "rules": descriptors}},
           "columnKind": "unicodeCodePoints", "results": results}
    if disabled:
        run["invocations"] = [{"executionSuccessful": True, "toolConfigurationNotifications": [
            {"level": "note", "message": {"text": entry}} for entry in disabled]}]
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)


def write_outputs(reports: list[tuple[Output, str]], stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
    """Each rendered report to its destination, every one tried: the streams first, then the files. ReportError (after
    all were tried) names the first that could not be written: a closed stream (Python's sys.stdout or sys.stderr is
    then None), a full disk, a closed pipe, a directory, an uncreatable path, no permission."""
    streams = {STDOUT: stdout or sys.stdout, STDERR: stderr or sys.stderr}
    failed: list[ReportError] = []
    taken = {out.dest for out, _ in reports if not out.implied}
    for out, text in reports:
        dest = out.dest
        if out.implied and streams.get(dest) is None:  # the text report nobody asked for: on the other stream if free
            dest = next((d for d in (STDOUT, STDERR) if streams[d] is not None and d not in taken), dest)
        if dest in streams:
            try:
                write_stream(streams[dest], text, f"the {out.format} report", "stdout" if dest == STDOUT else "stderr")
            except ReportError as err:
                failed += [] if out.implied else [err]
    for out, text in reports:
        if out.dest in streams:
            continue
        path = Path(out.dest)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
        except OSError as err:
            failed.append(ReportError(f"cannot write {path}: {err.strerror or err}"))
    if failed:
        raise failed[0]


def emit(text: str, what: str) -> int:
    """`text` asked for on stdout (--list-rules, --version): the exit code, 2 (said on stderr) when it cannot be written."""
    try:
        write_stream(sys.stdout, text, what, "stdout")
    except ReportError as err:
        tell(f"validate: {err}")
        return 2
    return 0


def write_stream(stream: TextIO | None, text: str, what: str, where: str) -> None:
    """`text` (a line end added) to a standard stream, flushed, as UTF-8 whatever the locale (the reports are UTF-8
    documents; a path's bytes Python holds as surrogates are written as those bytes). ReportError when the stream is
    closed or cannot be written."""
    text = text if not text or text.endswith("\n") else text + "\n"
    if stream is None:
        raise ReportError(f"cannot write {what} to {where}: it is closed")
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:  # a text stream without bytes below it (io.StringIO)
            stream.write(text)
        else:
            stream.flush()
            buffer.write(text.encode("utf-8", "surrogateescape"))
            buffer.flush()
        stream.flush()
    except (OSError, ValueError) as err:  # a full disk or a closed pipe behind the redirection; ValueError: closed file
        raise ReportError(f"cannot write {what} to {where}: {getattr(err, 'strerror', None) or err}") from None
