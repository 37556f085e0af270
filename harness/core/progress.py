"""Progress and status lines for long steps, written to stderr so they survive pytest capture."""
from __future__ import annotations

import sys
import time


def say(component: str, message: str) -> None:
    tell(f"[{component}] {message}")


def tell(line: str) -> None:
    """One line for the user on stderr; on stdout when stderr is closed (Python's sys.stderr is then None), nowhere
    when both are or the write fails: a message never ends a run nor changes its exit code."""
    stream = sys.stderr or sys.stdout
    try:
        stream.write(line + "\n")
        stream.flush()
    except (AttributeError, OSError, ValueError):  # None, a full disk, a closed pipe or file
        pass


class Ticker:
    """Prints a line at most every `every` seconds while a long step makes progress."""

    def __init__(self, component: str, every: float = 15.0):
        self.component, self.every = component, every
        self.started = self.last = time.monotonic()

    def tick(self, message: str) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            say(self.component, f"{message} ({now - self.started:.0f}s)")

    def elapsed(self) -> float:
        return time.monotonic() - self.started
