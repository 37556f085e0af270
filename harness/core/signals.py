"""Stop signals that end a run once: the first SIGINT/SIGTERM/SIGHUP raises, the later ones are noted and ignored.

A stop signal often arrives twice: a group kill (`timeout`, a CI cancel, `docker stop`, a closing terminal) reaches
the harness and `make`, and GNU make sends SIGTERM on to its children when it gets one itself (`src/commands.c`,
`fatal_error_signal`). A handler that raised on every signal would raise the second time inside the teardown the first
started (a child's `wait`, the etcd data removal), leaving data behind and ending in a traceback. So the teardown that
follows the first signal runs shielded, and so does a teardown after any other ending (`shield()`).
"""
from __future__ import annotations

import signal
import threading
from typing import Callable

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """Handlers for `signals` that raise `exc(name)` at the first one, unless shielded; `requested` lists every one
    received (the first is also remembered when CPython drops an exception raised inside a finalizer: `check()`)."""

    def __init__(self, exc: Callable[[str], BaseException] = KeyboardInterrupt,
                 on_first: Callable[[str], None] | None = None, signals: tuple[int, ...] = STOP_SIGNALS,
                 on_later: Callable[[str], None] | None = None):
        self.exc, self.on_first, self.on_later, self.signals = exc, on_first, on_later, signals
        self.requested: list[str] = []
        self.shielded = False

    def install(self) -> "StopSignals":
        """Sets the handlers (in the main thread only: Python sets signal handlers nowhere else)."""
        if threading.current_thread() is threading.main_thread():
            for sig in self.signals:  # SIGINT too: a shell starts background jobs with SIGINT ignored, and Python keeps that
                signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame) -> None:
        name = signal.Signals(signum).name
        first = not self.requested
        self.requested.append(name)
        if first and not self.shielded:
            if self.on_first:
                self.on_first(name)
            raise self.exc(name)
        if not first and self.on_later:
            self.on_later(name)

    def check(self) -> None:
        """Raises as the first signal did, if one came and was lost (raised inside a finalizer)."""
        if self.requested and not self.shielded:
            raise self.exc(self.requested[0])

    def shield(self) -> None:
        """From now on no signal raises (the teardown runs to its end); they are still recorded."""
        self.shielded = True
