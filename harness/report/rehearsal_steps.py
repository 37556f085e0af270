"""The steps of `make rehearse` as child processes, and how a rehearsal stops.

Each step (a tool build, the gate, the scenario steps, a pytest suite) runs in its own session
(harness.cluster.session_popen: a terminal's Ctrl-C reaches only the rehearsal, and the kernel
kills the step if the rehearsal dies), its output in a log and, each line marked with its side, on
the terminal. `Steps.stop()` ends the rehearsal: no step starts any more, and every running one
gets SIGINT once (pytest then tears down its clusters and reports "interrupted", exit 2), SIGKILL
after timeouts.RUN_STOP. A side whose step did not run to its end (stopped, killed by a signal,
or pytest's exit 2, "interrupted") stops there and saves nothing.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.cluster import session_popen
from harness.core import HarnessError, REPO_ROOT, say, timeouts

PYTEST_INTERRUPTED = 2  # pytest's exit code "test execution was interrupted by the user" (pytest docs, "Exit codes")


class RehearsalError(HarnessError, RuntimeError):
    pass


class StepInterrupted(RehearsalError):
    """A step did not run to its end: its side is not finished and is saved as nothing."""


class Steps:
    """The running steps of one rehearsal (both sides)."""

    def __init__(self, stop_after: float = timeouts.RUN_STOP):
        self.stopping = threading.Event()
        self.stop_after = stop_after
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._terminal = threading.Lock()  # two sides print at once: whole lines, each marked with its side

    def run(self, cmd: list[str], env: dict[str, str], log: Path, label: str) -> tuple[int, float]:
        """Runs one step; (exit code, seconds). StepInterrupted once the rehearsal stops."""
        if self.stopping.is_set():
            raise StepInterrupted(f"{label}: stopped before `{' '.join(cmd[-3:])}`")
        say("rehearse", f"[{label}] {' '.join(cmd)}")
        log.parent.mkdir(parents=True, exist_ok=True)
        t = time.monotonic()
        with log.open("w") as fh:
            with self._lock:  # no step starts once stop() has taken its list of running ones
                if self.stopping.is_set():
                    raise StepInterrupted(f"{label}: stopped before `{' '.join(cmd[-3:])}`")
                proc = session_popen(cmd, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
                self._running.add(proc)
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    fh.write(line)
                    with self._terminal:
                        sys.stdout.write(f"[{label}] {line}")
                        sys.stdout.flush()
                rc = proc.wait()
            except BaseException:  # KeyboardInterrupt in the thread that runs it: the step is stopped before unwinding
                self._end([proc])
                raise
            finally:
                with self._lock:
                    self._running.discard(proc)
        return rc, time.monotonic() - t

    def ended(self, label: str, step: str, rc: int, log: Path, *, pytest: bool = False) -> None:
        """StepInterrupted unless `step` ran to its end: the rehearsal is stopping, the step was killed by a
        signal (rc < 0), or pytest says it was interrupted (rc 2)."""
        why = ("the rehearsal is stopping" if self.stopping.is_set()
               else f"killed by {signal.Signals(-rc).name}" if rc < 0
               else "pytest was interrupted (exit 2)" if pytest and rc == PYTEST_INTERRUPTED else "")
        if why:
            raise StepInterrupted(f"{label}: {step} did not run to its end ({why}; {log}); nothing saved for {label}")

    def stop(self) -> None:
        """No further step starts; the running ones get SIGINT, SIGKILL after `stop_after` seconds."""
        with self._lock:
            self.stopping.set()
            running = list(self._running)
        if running:
            say("rehearse", f"stopping {len(running)} running step(s) (SIGKILL after {self.stop_after:.0f}s)")
        self._end(running)

    def _end(self, procs: list[subprocess.Popen]) -> None:
        for proc in procs:
            _signal_group(proc, signal.SIGINT)
        deadline = time.monotonic() + self.stop_after
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeouts.PROCESS_REAP)
            _signal_group(proc, signal.SIGKILL)  # what the step left in its group (a `go build` under the build step)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
