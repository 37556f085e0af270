"""Go helpers that answer JSON request lines (tools/tfeval one at a time; tools/fluxbuild, the gate's
render/check/match helper, concurrently): started once per run, their stderr kept in a file (never a
pipe nobody reads while the helper blocks), and their failure raised with the tail of what they printed.
The helpers speak UTF-8 (Go's strings, encoding/json) whatever the locale: every pipe and the stderr file are opened
with encoding="utf-8" (the locale's encoding, Python's default for text=True, is ASCII under LC_ALL=C without UTF-8 mode)."""
from __future__ import annotations

import json
import re
import subprocess
import tempfile
import threading
from concurrent.futures import Future
from typing import Any, Callable

from harness.core import HarnessError


class LineProcessError(HarnessError, RuntimeError):
    pass


def _popen(argv: list[str], stderr, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A helper's process: request lines on its stdin, answer lines on its stdout, both UTF-8. A path Python read
    from the command line or the file system with a non-UTF-8 file system encoding holds its bytes as lone
    surrogates (PEP 383): surrogateescape writes them back as those bytes, the path the helper opens."""
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                            encoding="utf-8", errors="surrogateescape", env=env)


def _line(payload: Any) -> str:
    """One request line (non-ASCII text as itself, so that a path's escaped bytes reach the helper as bytes)."""
    return json.dumps(payload, default=str, ensure_ascii=False) + "\n"


def _stderr_file():
    """The file a helper's stderr goes to (read back for its failure; an undecodable byte is replaced)."""
    return tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")


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
            self._stderr = _stderr_file()
            self._proc = _popen(self._argv(), self._stderr, self._env)
        return self

    def send(self, payload: Any) -> None:
        """One request line that gets no answer of its own (e.g. hints read ahead)."""
        self.start()
        try:
            self._proc.stdin.write(_line(payload))
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

    def close(self) -> None:
        proc, self._proc = self._proc, None
        _end(proc)

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


class RequestProcess:
    """A Go helper that answers requests concurrently: each request line carries an `id`, and its
    answer line, {"id", "answer"} or {"id", "error"}, may come back in any order. One reader thread
    hands each answer to the caller waiting for it; a helper that exits fails every waiting caller
    with the tail of its stderr, and the next request starts it again."""

    def __init__(self, what: str, argv: Callable[[], list[str]]):
        self.what, self._argv = what, argv
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[Future, type[HarnessError]]] = {}
        self._next_id = 0

    def start(self) -> "RequestProcess":
        """Starts the helper unless it runs (idempotent)."""
        with self._lock:
            self._start_locked()
        return self

    def running(self) -> bool:
        """Whether its process is started and has not exited."""
        with self._lock:
            return self._proc is not None and self._proc.poll() is None

    def _start_locked(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._stderr = _stderr_file()
            self._proc = _popen(self._argv(), self._stderr)
            self._pending = {}  # this process's waiting callers, by request id
            threading.Thread(target=self._read, args=(self._proc, self._stderr, self._pending), daemon=True,
                             name=f"{self.what}-answers").start()
        return self._proc

    def submit(self, op: str, error: type[HarnessError], **fields: Any) -> Future:
        """Sends one request; its answer (or `error`) comes through the returned future."""
        future: Future = Future()
        with self._lock:
            proc = self._start_locked()
            self._next_id += 1
            self._pending[self._next_id] = (future, error)
            try:
                proc.stdin.write(_line({"id": self._next_id, "op": op, **fields}))
                proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass  # it exited: the reader fails this request with the helper's stderr
        return future

    def call(self, op: str, error: type[HarnessError], **fields: Any) -> Any:
        """One request and its answer."""
        return self.submit(op, error, **fields).result()

    def _read(self, proc: subprocess.Popen, stderr, pending: dict) -> None:
        broken = ""  # why this thread stopped reading before the helper's stdout ended
        try:
            self._answer(proc, pending)
        except Exception as err:  # (an answer it cannot read): never a thread that dies with callers left waiting
            broken = f"its answers could not be read ({type(err).__name__}: {err}); "
            proc.kill()
        proc.wait()
        stderr.seek(0)
        tail = stderr.read().strip()[-4000:]
        with self._lock:
            waiting = list(pending.values())
            pending.clear()
            if self._proc is proc:
                self._proc = None
        for future, error in waiting:
            future.set_exception(error(f"{self.what} failed (exit {proc.returncode}): {broken}{tail}"))

    def _answer(self, proc: subprocess.Popen, pending: dict) -> None:
        """Each answer line to the caller waiting for it, until the helper's stdout ends."""
        for line in proc.stdout:
            try:
                try:
                    reply = json.loads(line)
                except RecursionError:  # an answer nested deeper than Python reads: its caller fails, the others go on
                    found = re.match(r'\{"id":\s*(\d+)', line)
                    reply = {"id": int(found.group(1)) if found else None, "error": "its answer is nested too deeply to read"}
                with self._lock:
                    future, error = pending.pop(reply["id"])
            except (ValueError, KeyError, TypeError):
                continue  # not an answer line; a caller waiting for one is failed at exit
            if reply.get("error"):
                future.set_exception(error(f"{self.what}: {reply['error']}"))
            else:
                future.set_result(reply.get("answer"))

    def close(self, wait: bool = True) -> None:
        """Ends the helper once it has answered what it was asked: its stdin closes, and it exits when
        done (`wait=False`: without waiting for that, at the caller's exit)."""
        with self._lock:
            proc, self._proc = self._proc, None
        _end(proc, wait)


def _end(proc: subprocess.Popen | None, wait: bool = True) -> None:
    """Closes a helper's stdin, its signal to finish and exit; waits for that (killing it after 10 s) if asked."""
    if proc is None:
        return
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    if wait:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
