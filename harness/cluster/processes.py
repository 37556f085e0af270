"""Child processes of the local cluster: start, readiness, stop, and never leave one behind.

Every child gets its own log file and its own session (process group), so a Ctrl-C in the
terminal reaches only this Python process, which then stops the children in order. All
children started here are kept in a registry and stopped at interpreter exit and on
SIGTERM/SIGINT; on Linux they also get PR_SET_PDEATHSIG, so even a SIGKILLed parent takes
them down.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Iterable, Mapping

from harness.core import HarnessError, StopSignals, say, timeouts

STOP_TIMEOUT = timeouts.PROCESS_STOP  # seconds between SIGTERM and SIGKILL
TAIL_LINES = 40


class ProcessError(HarnessError, RuntimeError):
    """A child failed to start, exited early or never became ready; the message carries its log tail."""


# -- ports --------------------------------------------------------------------------------------
_handed_out: set[int] = set()
_ports_lock = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel reports free on `host` (bind to port 0).

    There is a window between closing this socket and the child binding it; ports handed out
    earlier in this process are never handed out again, so the several ports of one cluster
    cannot collide with each other.
    """
    with _ports_lock:
        for _ in range(50):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((host, 0))
                port = s.getsockname()[1]
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise ProcessError(f"no free port on {host} after 50 tries")


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # SO_REUSEADDR as Go servers set it: connections left in TIME_WAIT do not make a port
        # busy, but on Linux a socket still listening there does.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            s.listen(1)
        except OSError:
            return False
    return True


def port_is_listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


# -- processes ----------------------------------------------------------------------------------
try:  # loaded here, not in the child: after fork only async-signal-safe work is safe
    _LIBC = ctypes.CDLL("libc.so.6", use_errno=True) if sys.platform.startswith("linux") else None
except OSError:
    _LIBC = None


def _pdeathsig() -> None:
    """Runs in the child between fork and exec: SIGKILL it when the parent dies.

    SIGKILL, not SIGTERM: when the harness dies every component is signalled at once, and a
    graceful shutdown then waits on the others (Kueue's cert rotator and kube-apiserver's
    in-flight watches each held the other up for controller-runtime's 30 s grace period).
    Nothing of a dead harness's cluster is worth a clean shutdown; the orderly path
    (stop_in_reverse, SIGTERM then SIGKILL) is for a live one. Linux ties this to the thread
    that forked, so children are started from the caller's thread (never from short-lived
    helper threads).
    """
    _LIBC.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG = 1


def session_popen(argv: list[str], **popen_args) -> subprocess.Popen:
    """A child in its own session (process group: a terminal's Ctrl-C reaches only its parent, which stops it in
    order) that the kernel SIGKILLs when the calling thread's process dies (PR_SET_PDEATHSIG)."""
    return subprocess.Popen(argv, start_new_session=True, preexec_fn=_pdeathsig if _LIBC is not None else None, **popen_args)


class Process:
    """One child process with its own log file and process group."""

    def __init__(self, name: str, argv: list[str | os.PathLike], log_dir: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log_path = Path(log_dir) / f"{name}.log"
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd
        self.popen: subprocess.Popen | None = None

    def start(self) -> "Process":
        if not Path(self.argv[0]).is_file():
            raise ProcessError(f"{self.name}: binary {self.argv[0]} does not exist (build it with `python -m harness.toolchain.builds`)")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"### {time.strftime('%H:%M:%S')} started: {' '.join(self.argv)}\n".encode())
            log.flush()
            self.popen = session_popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                       cwd=self.cwd)
        _registry.add(self)
        return self

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll() if self.popen else None

    def group_alive(self) -> bool:
        """True while any process of the child's group exists (the child may have forked)."""
        if self.popen is None:
            return False
        self.popen.poll()  # reap the leader, else it lingers as a zombie that counts as alive
        try:
            os.killpg(self.popen.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM to the whole group, SIGKILL after `timeout`; idempotent."""
        self._end(signal.SIGTERM, timeout)

    def kill(self, sig: int = signal.SIGKILL, timeout: float = STOP_TIMEOUT) -> None:
        """A crash, not a shutdown: `sig` (default SIGKILL) to the group, then reap the child."""
        self._end(sig, timeout)

    def _end(self, sig: int, timeout: float) -> None:
        """`sig` to the group, SIGKILL if the child outlives `timeout`; stragglers in the group
        (children of the child) get no grace period."""
        if self.popen is None:
            return
        try:
            if self.group_alive():
                self._signal(sig)
                try:
                    self.popen.wait(timeout)
                except subprocess.TimeoutExpired:
                    say("cluster", f"{self.name} did not stop within {timeout:.0f}s of {signal.Signals(sig).name}; sending SIGKILL")
                    self._signal(signal.SIGKILL)
                    self.popen.wait(timeouts.PROCESS_REAP)
                if self.group_alive():
                    self._signal(signal.SIGKILL)
        finally:
            _registry.discard(self)

    def restart(self, *, kill: bool = False, while_down: Callable[[], object] | None = None) -> "Process":
        """Stops (or kills) the child and starts the same command again, appending to its log.
        `while_down` runs in between (a fault test letting the cluster move on without it); the
        child is started again even if that fails, so teardown finds a whole cluster."""
        self.kill() if kill else self.stop()
        try:
            if while_down:
                while_down()
        finally:
            self.start()
        return self

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def log_tail(self, lines: int = TAIL_LINES) -> str:
        try:
            with self.log_path.open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                text = f.read().decode(errors="replace")
        except FileNotFoundError:
            return "(no log file)"
        return "\n".join(text.splitlines()[-lines:])

    def describe_failure(self, what: str) -> str:
        state = "running" if self.alive() else f"exited with code {self.returncode}"
        return f"{self.name} ({state}): {what}\n--- last lines of {self.log_path} ---\n{self.log_tail()}"

    def __repr__(self) -> str:
        return f"Process({self.name!r}, pid={self.pid})"


class Startable:
    """Something that starts several parts (processes, servers): a start that fails or is
    interrupted stops whatever it had started before the error propagates; a context manager.
    Subclasses implement _start() and an idempotent stop()."""

    def start(self):
        try:
            self._start()
        except BaseException:
            self.stop()  # never leave half of it running
            raise
        return self

    def _start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# -- readiness ----------------------------------------------------------------------------------
def stop_in_reverse(processes: list["Process"]) -> list[str]:
    """Stops processes last-started first; returns one message per process that failed to stop."""
    errors = []
    for proc in reversed(processes):
        try:
            proc.stop()
        except Exception as err:
            errors.append(f"{proc.name}: {err}")
    return errors


def wait_until(check: Callable[[], tuple[bool, str]], timeout: float, describe: str,
               watch: Iterable[Process] = (), interval: float = 0.1) -> float:
    """Polls `check` (-> (ready, what was seen)) until ready; returns the seconds it took.

    Fails at once if a watched process exits, and on timeout; both errors carry the last
    state seen and the log tail of the watched processes.
    """
    watch = list(watch)
    start = time.monotonic()
    deadline = start + timeout
    last = "(not checked yet)"
    while True:
        try:
            ready, last = check()
        except Exception as err:  # a refused connection is a state, not a failure
            ready, last = False, f"{type(err).__name__}: {err}"
        if ready:
            return time.monotonic() - start
        for proc in watch:
            if not proc.alive():
                raise ProcessError(proc.describe_failure(f"exited while waiting for {describe}; last state seen: {last}"))
        if time.monotonic() >= deadline:
            tails = "\n".join(p.describe_failure("log tail") for p in watch)
            raise ProcessError(f"timed out after {timeout:.0f}s waiting for {describe}; last state seen: {last}\n{tails}")
        time.sleep(interval)


def https_context(ca_file: Path | None = None, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    """Verifies against `ca_file` when given, else trusts anything (loopback self-signed servers)."""
    if ca_file:
        ctx = ssl.create_default_context(cafile=str(ca_file))
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


def http_check(url: str, context: ssl.SSLContext | None = None, timeout: float = timeouts.HTTP_PROBE) -> Callable[[], tuple[bool, str]]:
    """A `wait_until` check: ready on HTTP 200; the state is the status and start of the body."""

    def check() -> tuple[bool, str]:
        try:
            with urllib.request.urlopen(url, context=context, timeout=timeout) as resp:
                body = resp.read(2000).decode(errors="replace")
                return resp.status == 200, f"GET {url} -> {resp.status} {body.strip()[:500]}"
        except urllib.error.HTTPError as err:
            body = err.read(2000).decode(errors="replace")
            return False, f"GET {url} -> {err.code} {body.strip()[:1500]}"

    return check


# -- registry: nothing outlives the harness -----------------------------------------------------
class _Registry:
    def __init__(self):
        self._procs: list[Process] = []
        self._lock = threading.Lock()
        self._installed = False

    def add(self, proc: Process) -> None:
        with self._lock:
            self._procs.append(proc)
            if not self._installed:
                self._install()

    def discard(self, proc: Process) -> None:
        with self._lock:
            if proc in self._procs:
                self._procs.remove(proc)

    def running(self) -> list[Process]:
        with self._lock:
            return list(self._procs)

    def stop_all(self) -> None:
        for proc in reversed(self.running()):  # the last started depends on the earlier ones
            try:
                proc.stop()
            except Exception as err:  # keep stopping the others
                say("cluster", f"stopping {proc.name} failed: {err}")

    def _install(self) -> None:
        self._installed = True
        atexit.register(self.stop_all)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread; atexit and PDEATHSIG still apply
        # The default action would kill Python without running atexit or finally blocks: the first SIGTERM/SIGHUP
        # exits through them instead (SystemExit), a later one (make sends SIGTERM on to its children after a group
        # kill) is ignored, so it does not interrupt that teardown.
        defaults = tuple(sig for sig in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(sig) in (signal.SIG_DFL, None))
        if defaults:
            StopSignals(lambda name: SystemExit(128 + signal.Signals[name]), signals=defaults).install()
        # SIGINT keeps Python's default (KeyboardInterrupt), which unwinds through the
        # callers' finally/with blocks and then atexit; pytest relies on that too.


_registry = _Registry()


def running() -> list[Process]:
    """Children started through this module and not stopped yet."""
    return _registry.running()


def stop_all() -> None:
    _registry.stop_all()
