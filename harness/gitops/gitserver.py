"""A local Git server speaking smart HTTP on 127.0.0.1, and working copies that push to it.

The server is `git http-backend` (git's own smart-HTTP CGI program) behind a small
http.server handler, so source-controller's go-git client talks to the same protocol
implementation a real Git host serves. Pushes go over HTTP too (receive-pack is enabled per
repository), exactly as a merge would reach the branch Flux follows.

    server = GitServer(workdir / "git", log_dir).start()
    server.create_repository("fleet")
    wc = WorkingCopy.clone(server.url("fleet"), workdir / "wc")
    wc.seed(REPO_ROOT, paths)            # this checkout's working tree as the first commit
    sha = wc.commit_and_push("switch to team-queues")
    server.stop()
"""
from __future__ import annotations

import http.client
import io
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from harness.core import HarnessError, say

BRANCH = "main"
AUTHOR = ("ray-on-aks e2e", "e2e@ray-on-aks.invalid")


class GitError(HarnessError, RuntimeError):
    """A git command failed; the message names the command, the directory and git's stderr."""


def git(*args: str, cwd: Path, input: bytes | None = None) -> str:
    # The user's and the system's git config stay out: commits and pushes must not depend on them.
    env = {**os.environ, "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1], "GIT_COMMITTER_NAME": AUTHOR[0],
           "GIT_COMMITTER_EMAIL": AUTHOR[1], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0"}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True)
    if proc.returncode != 0:
        raise GitError(f"`git {' '.join(args)}` failed in {cwd}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace")


def _exec_path() -> Path:
    """Where git keeps git-http-backend (not on PATH)."""
    if not shutil.which("git"):
        raise GitError("git is not installed: the local Git server runs `git http-backend`")
    return Path(git("--exec-path", cwd=Path.cwd()).strip())


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        self._cgi()

    def _cgi(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            # git sends chunked bodies only above http.postBuffer; WorkingCopy raises that limit.
            return self._reply(411, b"chunked request bodies are not supported; set git -c http.postBuffer=524288000\n")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        env = {
            "GIT_PROJECT_ROOT": str(self.server.root), "GIT_HTTP_EXPORT_ALL": "1", "PATH": os.environ.get("PATH", ""),
            "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": self.command,
            "PATH_INFO": url.path, "QUERY_STRING": url.query, "REMOTE_ADDR": self.client_address[0],
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]  # http-backend inflates gzip itself
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        proc = subprocess.run([str(self.server.backend)], input=body, env=env, capture_output=True)
        if proc.stderr:
            self.server.log(f"http-backend {self.command} {self.path}: {proc.stderr.decode(errors='replace').strip()}")
        out = io.BytesIO(proc.stdout)
        headers = http.client.parse_headers(out)  # a CGI response is a header block, a blank line, the body
        payload = out.read()
        status = int((headers.get("Status") or "200").split()[0])
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("status", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _reply(self, status: int, text: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, fmt: str, *args) -> None:
        self.server.log(f"{self.client_address[0]} {fmt % args}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, log_path: Path):
        super().__init__(("127.0.0.1", 0), _Handler)  # port 0: the kernel picks, nothing can race us
        self.root, self.backend = root, _exec_path() / "git-http-backend"
        self._log, self._log_lock = log_path.open("a"), threading.Lock()

    def log(self, line: str) -> None:
        with self._log_lock:
            self._log.write(line + "\n")
            self._log.flush()


class GitServer:
    def __init__(self, root: Path, log_dir: Path):
        self.root = Path(root)
        self.log_path = Path(log_dir) / "git-server.log"
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "GitServer":
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._server = _Server(self.root, self.log_path)
        self._thread = threading.Thread(target=self._server.serve_forever, name="git-server", daemon=True)
        self._thread.start()
        say("git", f"smart-HTTP server on http://127.0.0.1:{self.port} serving {self.root} (log {self.log_path})")
        return self

    @property
    def port(self) -> int:
        assert self._server, "GitServer not started"
        return self._server.server_address[1]

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}.git"

    def create_repository(self, name: str) -> Path:
        bare = self.root / f"{name}.git"
        bare.mkdir(parents=True)
        git("init", "--bare", "--initial-branch", BRANCH, cwd=bare)
        git("config", "http.receivepack", "true", cwd=bare)  # anonymous push: loopback only, test data only
        return bare

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server._log.close()
            self._server = None

    def __enter__(self) -> "GitServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class WorkingCopy:
    """A clone that tests edit, commit and push, like a developer merging a pull request."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @classmethod
    def clone(cls, url: str, path: Path) -> "WorkingCopy":
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "--quiet", url, str(path), cwd=path.parent)
        wc = cls(path)
        git("checkout", "--quiet", "-B", BRANCH, cwd=path)
        git("config", "http.postBuffer", "524288000", cwd=path)  # one Content-Length body, never chunked
        return wc

    def seed(self, source: Path, paths: tuple[str, ...], message: str = "repository working tree") -> str:
        """Copies `paths` of `source` (files or directories) into the clone and pushes them as one commit."""
        for rel in paths:
            src, dest = Path(source) / rel, self.path / rel
            if src.is_dir():
                shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            elif src.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
        return self.commit_and_push(message)

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()

    def write(self, rel: str, text: str) -> None:
        dest = self.path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)

    def commit_and_push(self, message: str) -> str:
        """Commits everything changed and pushes to the server; returns the new commit's SHA."""
        git("add", "--all", cwd=self.path)
        git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.path)
        git("push", "--quiet", "origin", f"HEAD:refs/heads/{BRANCH}", cwd=self.path)
        return self.head()

    def restore(self, revision: str) -> None:
        """Makes the working tree exactly `revision`'s (files added since are removed); not committed."""
        git("read-tree", "--reset", "-u", revision, cwd=self.path)

    def changed(self) -> bool:
        return bool(git("status", "--porcelain", cwd=self.path).strip())

    def head(self) -> str:
        return git("rev-parse", "HEAD", cwd=self.path).strip()
