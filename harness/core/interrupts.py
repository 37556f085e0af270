"""Ending a run on SIGINT, SIGTERM or SIGHUP the way Ctrl-C does, once.

The first of these signals raises KeyboardInterrupt(<signal name>) in the main thread, so the
run's `finally` blocks stop what it started. Every later one is only recorded: it must not cut
that teardown short. A terminal's Ctrl-C reaches the whole process group, `timeout`, a cancelled
CI job or a closing tmux session signal the group, and GNU make then sends SIGTERM to its child
once more (src/commands.c fatal_error_signal), so a run under make sees the signal twice.
Without a handler SIGTERM kills Python outright, and no `finally` (temporary directories, etcd
data) runs at all.
"""
from __future__ import annotations

import signal
import threading
from typing import Callable

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupts:
    """install() sets the handler (main thread only); `requested` lists the signals received, by name."""

    def __init__(self, on_first: Callable[[str], None] | None = None, on_later: Callable[[str], None] | None = None,
                 exception: Callable[[signal.Signals], BaseException] = lambda sig: KeyboardInterrupt(sig.name)):
        self.requested: list[str] = []
        self._on_first, self._on_later, self._exception = on_first, on_later, exception

    def install(self, signals: tuple[int, ...] = SIGNALS) -> "Interrupts":
        if threading.current_thread() is threading.main_thread():
            for sig in signals:  # SIGINT too: a shell starts background jobs with SIGINT ignored, and Python keeps that
                signal.signal(sig, self.handler)
        return self

    def handler(self, signum, _frame) -> None:
        name = signal.Signals(signum).name
        self.requested.append(name)
        if len(self.requested) == 1:
            if self._on_first:
                self._on_first(name)
            raise self._exception(signal.Signals(signum))
        if self._on_later:
            self._on_later(name)

    def check(self) -> None:
        """The first signal's exception (KeyboardInterrupt) if a signal came: an exception a handler raises while CPython runs a finalizer (a
        socket's __del__) is printed and dropped, so a run also checks between its steps."""
        if self.requested:
            raise self._exception(signal.Signals[self.requested[0]])
