"""The gate's Go helpers that answer requests concurrently: tools/fluxbuild, the gate's main Go process
(it renders (render.py), validates (schema_check.py) and answers placement questions (matching.py)),
and tools/kubecheck (the apiserver's own validation of built-in objects, of the pods KubeRay would create
and of their namespace's admission, schema_check.py), a process apart because Kubernetes' and Kueue's feature gates cannot share one. One process of each
serves every caller in this Python process; started on first use (building it once per source
version), ended at exit."""
from __future__ import annotations

import atexit
import threading
from pathlib import Path

from harness import toolchain as tools
from harness.gate import SKIP_DIRS

_LOCK = threading.Lock()
_HELPERS: dict[str, tools.RequestProcess] = {}


def helper(name: str = "fluxbuild", args: tuple[str, ...] = ()) -> tools.RequestProcess:
    """The helper `name` of this process (started on first use, with `args` when this call creates it)."""
    with _LOCK:
        if name not in _HELPERS:
            _HELPERS[name] = process = tools.RequestProcess(name, lambda: [str(tools.ensure(name)[name].path()), *args])
            # At exit it is not waited for: once its stdin closes it removes its copies and exits on its
            # own, and tearing down its memory would otherwise add to every gate run.
            atexit.register(process.close, wait=False)
        return _HELPERS[name]


def prestart(*names: str, prerender: Path | None = None) -> None:
    """Starts the helpers among `names` whose binaries are built already (never builds one: a command
    that ends before it needs them, like --help, must not wait for a build), found without the build recipes. With
    `prerender`, fluxbuild builds that repository's plain kustomization directories at once, for the render request that
    follows once the gate has loaded (tools/fluxbuild prerender.go)."""
    for name in names:
        if tools.local_binary(name) is None:
            continue
        args = ("--prerender", str(prerender), *(a for d in sorted(SKIP_DIRS) for a in ("--skip-dir", d))) \
            if name == "fluxbuild" and prerender is not None else ()
        helper(name, args).start()
