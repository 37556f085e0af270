"""tools/fluxbuild, the gate's one Go process: it renders (render.py), validates (schema_check.py)
and answers placement questions (matching.py) for every caller in this Python process, requests
running concurrently in it. Started on first use (building it once per source version), ended at exit."""
from __future__ import annotations

import atexit
import threading

from harness import toolchain as tools

_LOCK = threading.Lock()
_HELPER: tools.RequestProcess | None = None


def helper() -> tools.RequestProcess:
    global _HELPER
    with _LOCK:
        if _HELPER is None:
            _HELPER = tools.RequestProcess("fluxbuild", lambda: [str(tools.ensure("fluxbuild")["fluxbuild"].path())])
            # At exit it is not waited for: once its stdin closes it removes its copies and exits on its
            # own, and tearing down its memory would otherwise add to every gate run.
            atexit.register(_HELPER.close, wait=False)
        return _HELPER
