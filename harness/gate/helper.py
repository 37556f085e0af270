"""The gate's Go helpers that answer requests concurrently: tools/fluxbuild, the gate's main Go process
(it renders (render.py), validates (schema_check.py) and answers placement questions (matching.py)),
and tools/kubecheck (the apiserver's own validation of built-in objects, of the pods KubeRay would create
and of their namespace's admission, schema_check.py), a process apart because Kubernetes' and Kueue's feature gates cannot share one. One process of each
serves every caller in this Python process; started on first use (building it once per source
version), ended at exit."""
from __future__ import annotations

import atexit
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from harness import toolchain as tools
from harness.core import MISSING, Memo
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


_MEMOS: dict[str, Memo | None] = {}


def memo(name: str = "fluxbuild") -> Memo | None:
    """The answers the helper `name` as built now gave before (harness.core.memo; its identity is its build's source
    hash); None when it is not built yet."""
    with _LOCK:
        if name not in _MEMOS:
            binary = tools.local_binary(name)
            _MEMOS[name] = Memo(name, binary.parent.name.rsplit("-", 1)[-1]) if binary is not None else None
        return _MEMOS[name]


def warm(name: str = "fluxbuild") -> bool:
    """Whether the helper as built now answered before: its answers are then likely kept, so what only prepares answers
    (loading its validators, starting it ahead) is left until a request needs it."""
    found = memo(name)
    return found is not None and found.warm()


def submit_kept(name: str, op: str, error: type, **fields: Any) -> Future:
    """`helper(name).submit(op, error, **fields)` for a request whose answer depends on its fields only (a pure one):
    answered from the answers kept before when the same request was made, else asked and kept."""
    kept = memo(name)
    key = kept.key(op, fields) if kept is not None else None
    if (found := kept.get(key) if kept is not None else MISSING) is not MISSING:
        done: Future = Future()
        done.set_result(found)
        return done
    future = helper(name).submit(op, error, **fields)
    if kept is not None:
        future.add_done_callback(lambda f: f.exception() is None and kept.put(key, f.result()))
    return future


def submit_each(name: str, op: str, error: type, each: dict[str, list], **fields: Any) -> Callable[[], list]:
    """A pure request whose answer is a list with one entry per item, each depending on `fields` and that item's entries of
    `each` (parallel lists: {"objects": [...], "related": [...]}) only: each item's answer kept on its own, so that only the
    items not asked before are sent. The returned function waits for the answers, in order."""
    count = len(next(iter(each.values()), []))
    kept = memo(name)
    keys = [kept.key(op, fields, {k: v[i] for k, v in each.items()}) if kept is not None else None for i in range(count)]
    answers = [kept.get(k) if kept is not None else MISSING for k in keys]
    missing = [i for i, a in enumerate(answers) if a is MISSING]
    future = helper(name).submit(op, error, **{k: [v[i] for i in missing] for k, v in each.items()}, **fields) if missing else None

    def results() -> list:
        if future is not None:
            for i, answer in zip(missing, future.result()):
                answers[i] = answer
                if kept is not None:
                    kept.put(keys[i], answer)
        return answers
    return results
