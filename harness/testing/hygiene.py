"""What a harness run leaves on the machine, for the tests of the harness itself: runs started as
child processes in their own session with their output followed line by line, the processes
they spawned, and whether those are gone and their ports free after the run ended."""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from pathlib import Path

import psutil

from harness.cluster import port_is_free
from harness.core import REPO_ROOT


class RunFailed(AssertionError):
    pass


class Child:
    """A harness run in its own session, its output followed line by line (waits are on lines)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None):
        self.argv = argv
        self.popen = subprocess.Popen(argv, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                      env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        self.seen: dict[int, psutil.Process] = {}
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def output(self) -> str:
        with self._cond:
            return "\n".join(self.lines)

    def wait_line(self, pattern: str, timeout: float) -> re.Match:
        """The first output line matching `pattern`; fails with the output so far on timeout or exit."""
        rx = re.compile(pattern)
        with self._cond:
            ok = self._cond.wait_for(lambda: any(rx.search(l) for l in self.lines) or self.popen.poll() is not None,
                                     timeout)
            match = next((m for l in self.lines if (m := rx.search(l))), None)
            seen = len(self.lines)
        if match:
            return match
        why = "exited with %s" % self.popen.returncode if ok else f"no such line within {timeout:.0f}s"
        raise RunFailed(f"{' '.join(self.argv[:4])}...: waiting for /{pattern}/: {why}; output ({seen} lines):\n{self.output[-4000:]}")

    def descendants(self) -> list[psutil.Process]:
        """The run's processes now; every one seen is remembered, also once reparented to init."""
        try:
            procs = psutil.Process(self.popen.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            procs = []
        self.seen.update({p.pid: p for p in procs})
        return procs

    def signal(self, sig: int) -> None:
        self.popen.send_signal(sig)

    def signal_group(self, sig: int) -> None:
        """`sig` to the run's whole process group (its own session), as a terminal's Ctrl-C, `timeout`, a CI cancel or
        `docker stop` sends it; under make the harness then gets SIGTERM twice (make sends it on to its children)."""
        os.killpg(self.popen.pid, sig)

    def wait(self, timeout: float) -> int:
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"still running {timeout:.0f}s after the signal; output:\n{self.output[-4000:]}")
        self._reader.join(10)
        return rc

    def kill_all(self) -> None:
        """Last resort of the fixture, so that a failing test does not leak its child's cluster."""
        self.descendants()
        if self.popen.poll() is None:
            self.popen.kill()
        for p in self.seen.values():
            try:
                if p.is_running():  # is_running() also checks the pid was not reused
                    p.kill()
            except psutil.NoSuchProcess:
                pass
        self.popen.wait(10)


def listening_ports(procs: list[psutil.Process]) -> set[int]:
    ports = set()
    for p in procs:
        try:
            ports |= {c.laddr.port for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return ports


def cluster_records(root: Path) -> list[dict]:
    """cluster.json of every LocalCluster started under `root` (written when it was ready)."""
    return [json.loads(p.read_text()) for p in sorted(root.rglob("cluster.json"))]


def leftovers(procs: list[psutil.Process], ports: set[int], timeout: float = 30) -> list[str]:
    """What of `procs` is still alive after `timeout` (waited for, not slept) and which of `ports` are bound."""
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    out = [f"pid {p.pid} ({_name(p)}) alive" for p in alive if _running(p)]
    out += [f"port {port} bound" for port in sorted(ports) if not port_is_free(port)]
    return out


def _running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _name(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.NoSuchProcess:
        return "?"


def processes_under(root: Path) -> list[str]:
    """Processes whose working directory or command line lies under `root`: every component a
    LocalCluster starts runs in its workdir with its kubeconfig there, also after its parent died."""
    root_s, out = str(Path(root).resolve()), []
    for p in psutil.process_iter(["pid", "name", "cwd", "cmdline"]):
        info = p.info
        if info["pid"] == os.getpid():
            continue
        cwd, cmdline = info.get("cwd") or "", info.get("cmdline") or []
        if cwd.startswith(root_s) or any(root_s in arg for arg in cmdline):
            if _running(p):
                out.append(f"pid {info['pid']} ({info['name']}) cwd={cwd}")
    return out
