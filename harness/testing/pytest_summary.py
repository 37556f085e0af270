"""A short table at the end of a pytest run, for people: passed / failed / skipped per area (the
test's marker: static, integration, flux, faults, ...; else its test directory) and the slowest
setup and call steps. Registered in tests/conftest.py (pytest_plugins)."""
from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

import pytest

AREA_MARKERS = ("static", "integration", "flux", "faults", "harness", "scale")
SLOWEST = 5
COLUMNS = ("passed", "failed", "error", "skipped")


def area_of(nodeid: str, keywords) -> str:
    for marker in AREA_MARKERS:
        if marker in keywords:
            return marker
    parts = PurePosixPath(nodeid.split("::", 1)[0]).parts
    return ("/".join(parts[:-1]) or parts[0]) if parts else "?"


class Summary:
    def __init__(self):
        self.areas: dict[str, str] = {}  # nodeid -> area, filled at collection
        self.counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COLUMNS, 0))
        self.seconds: dict[str, float] = defaultdict(float)
        self.steps: list[tuple[float, str, str]] = []  # (duration, when, nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        for item in items:
            self.areas[item.nodeid] = area_of(item.nodeid, item.keywords)

    def pytest_runtest_logreport(self, report):
        area = self.areas.get(report.nodeid) or area_of(report.nodeid, report.keywords)
        self.seconds[area] += report.duration
        if report.when in ("setup", "call"):
            self.steps.append((report.duration, report.when, report.nodeid))
        # One outcome per test: a failed setup or teardown is an error, a skip is reported at setup.
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = "error" if report.when == "setup" and report.failed else report.outcome
            self.counts[area][outcome] += 1
        elif report.when == "teardown" and report.failed:
            self.counts[area]["error"] += 1

    def pytest_terminal_summary(self, terminalreporter):
        if not self.counts:
            return
        tr = terminalreporter
        width = max(len("area"), *(len(a) for a in self.counts))
        tr.section("summary by area")
        tr.write_line(f"{'area':<{width}}  " + "  ".join(f"{c:>7}" for c in COLUMNS) + "     time")
        totals = dict.fromkeys(COLUMNS, 0)
        for area in sorted(self.counts):
            row = self.counts[area]
            for c in COLUMNS:
                totals[c] += row[c]
            tr.write_line(f"{area:<{width}}  " + "  ".join(f"{row[c]:>7}" for c in COLUMNS) + f"  {self.seconds[area]:6.1f}s",
                          red=bool(row["failed"] or row["error"]))
        tr.write_line(f"{'total':<{width}}  " + "  ".join(f"{totals[c]:>7}" for c in COLUMNS)
                      + f"  {sum(self.seconds.values()):6.1f}s", bold=True)
        tr.write_line("")
        tr.write_line(f"slowest {min(SLOWEST, len(self.steps))} steps:")
        for duration, when, nodeid in sorted(self.steps, reverse=True)[:SLOWEST]:
            tr.write_line(f"  {duration:7.2f}s  {when:<5}  {nodeid}")


def pytest_configure(config):
    config.pluginmanager.register(Summary(), "aks-ray-kueue-summary")
