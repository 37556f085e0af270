"""Runs a harness command as an ordinary user, as GitHub's hosted runners and most laptops do.

As an unprivileged user the command runs as that user, with HOME, the XDG cache and TMPDIR in
a sandbox. As root (this project's CI machine) it runs as `nobody` in a private mount
namespace: a tmpfs hides root's home, into which only the Python install and the Go module
cache are bind-mounted read-only, and the tool builds are bind-mounted into the sandbox's XDG
cache. So the user can read the tools and write only to the sandbox, the checkout's build/ and
world-writable places; `stray_files` then lists what the run left in world-writable places
outside the sandbox.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.core import cache_root

NOBODY = 65534
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def go_mod_cache() -> Path:
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


class Sandbox:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ray-kueue-unprivileged-", dir="/tmp"))
        self.as_root = os.geteuid() == 0
        self.uid = NOBODY if self.as_root else os.geteuid()
        self.home, self.cache, self.tmp = self.root / "home", self.root / "cache", self.root / "tmp"
        self.work = self.root / "work"  # for the run's --workdir
        for d in (self.home, self.cache / cache_root().name / "bin", self.tmp, self.work, self.root / "hostroot",
                  self.root / "gocache"):
            d.mkdir(parents=True)
        os.chmod(self.root, 0o755)
        if self.as_root:
            for d in (self.home, self.cache, self.tmp, self.work, self.root / "gocache"):
                for p in (d, *d.rglob("*")):
                    os.chown(p, NOBODY, NOBODY)

    def env(self) -> dict[str, str]:
        """An ordinary user keeps its own HOME and XDG cache; `nobody` gets the sandbox's (the
        tool builds bind-mounted in, the seed etcd and parsed CRDs made again, as that user)."""
        if not self.as_root:
            return {"TMPDIR": str(self.tmp)}
        return {"HOME": str(self.home), "XDG_CACHE_HOME": str(self.cache), "TMPDIR": str(self.tmp),
                "GOMODCACHE": str(go_mod_cache()), "GOCACHE": str(self.root / "gocache"), "GOPROXY": "off",
                # the read-only module cache was checked against the checksum database when the host's go fetched it;
                # `nobody` has no GOPATH/pkg/sumdb of its own, and with tiles missing go would ask sum.golang.org
                "GOSUMDB": "off"}

    def argv(self, argv: list[str]) -> list[str]:
        """`argv` wrapped so that it runs as the sandbox's user (unchanged when not root)."""
        if not self.as_root:
            return argv
        home, host = Path.home(), self.root / "hostroot"
        python_home = Path(sys.base_prefix).resolve()
        binds = [(p, p) for p in (python_home, go_mod_cache()) if p.is_relative_to(home)]
        binds.append((cache_root() / "bin", self.cache / cache_root().name / "bin"))
        script = [f"mount --bind {shlex.quote(str(home))} {shlex.quote(str(host))}",
                  f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(home))}"]
        for src, dst in binds:
            src_now = host / src.relative_to(home) if src.is_relative_to(home) else src
            script += [f"mkdir -p {shlex.quote(str(dst))}",
                       f"mount --bind -o ro {shlex.quote(str(src_now))} {shlex.quote(str(dst))}"]
        script.append("exec setpriv --reuid=%d --regid=%d --clear-groups -- %s" % (NOBODY, NOBODY, shlex.join(argv)))
        return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", "; ".join(script)]

    def snapshot(self) -> set[str]:
        """What the run's user owns in world-writable places outside the sandbox now."""
        return set(self._owned())

    def stray_files(self, before: set[str]) -> list[str]:
        """What the run's user came to own in world-writable places outside the sandbox since `before`."""
        return sorted(set(self._owned()) - before)

    def _owned(self) -> list[str]:
        out = []
        for top in WORLD_WRITABLE:
            for dirpath, dirnames, filenames in os.walk(top, onerror=lambda _e: None):
                if Path(dirpath) == self.root or Path(dirpath).is_relative_to(self.root):
                    dirnames[:] = []
                    continue
                for name in dirnames + filenames:
                    p = Path(dirpath) / name
                    try:
                        if p.lstat().st_uid == self.uid:
                            out.append(str(p))
                    except OSError:
                        pass
        return out

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
