"""A Go helper that answers one JSON line per JSON request line (fluxbuild serve, kubecheck,
kubecheck match): started once per run, its stderr kept in a file (never a pipe nobody reads while
the helper blocks), and its failure raised with the tail of what it printed."""
from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from typing import Any, Callable

from harness.core import HarnessError


class LineProcessError(HarnessError, RuntimeError):
    pass


class LineProcess:
    """`argv()` gives the command (resolved on start, so building the tool happens then)."""

    def __init__(self, what: str, argv: Callable[[], list[str]], error: type[HarnessError] = LineProcessError,
                 env: dict[str, str] | None = None):
        self.what, self._argv, self._error, self._env = what, argv, error, env
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._lock = threading.Lock()

    def start(self) -> "LineProcess":
        """Starts the helper unless it runs (idempotent; a helper that exited is started again)."""
        if self._proc is None or self._proc.poll() is not None:
            self._stderr = tempfile.TemporaryFile(mode="w+")
            self._proc = subprocess.Popen(self._argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, text=True, env=self._env)
        return self

    def send(self, payload: Any) -> None:
        """One request line that gets no answer of its own (e.g. hints read ahead)."""
        self.start()
        try:
            self._proc.stdin.write(json.dumps(payload, default=str) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            self._fail()

    def request(self, payload: Any) -> Any:
        """One request line, one answer line."""
        with self._lock:
            self.send(payload)
            line = self._proc.stdout.readline()
            if not line:
                self._fail()
            return json.loads(line)

    def finish(self, payload: Any) -> Any:
        """The last request: stdin is closed after it and the whole output is the answer."""
        self.start()
        proc, self._proc = self._proc, None
        try:
            out, _ = proc.communicate(json.dumps(payload, default=str))
        except BrokenPipeError:  # it exited early; its stderr says why
            out = ""
            proc.wait()
        if proc.returncode != 0:
            self._fail(proc)
        try:
            return json.loads(out)
        except json.JSONDecodeError:
            self._fail(proc, "gave no JSON answer")

    def close(self) -> None:
        if self._proc is not None:
            proc, self._proc = self._proc, None
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _fail(self, proc: subprocess.Popen | None = None, how: str | None = None):
        proc = proc or self._proc
        self._proc = None
        if proc is not None and proc.poll() is None:
            proc.kill()
        if proc is not None:
            proc.wait()
        self._stderr.seek(0)
        reason = how or (f"failed (exit {proc.returncode})" if proc is not None else "failed")
        raise self._error(f"{self.what} {reason}: {self._stderr.read().strip()[-4000:]}")
