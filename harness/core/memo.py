"""Answers kept on disk by what they were computed from: a pure computation's answer (a Go helper's verdict on an object,
Helm's render of a chart with given values, jsonschema's verdict on versions.yaml) is stored under
cache_root()/memo/<name>-<identity>/ by the SHA-256 of its inputs' canonical JSON, and read back by the next run that asks
the same question. `identity` names the code that answers (a tool build's source hash, a module's text), so an answer of
other code is never read back. Only answers are kept, never failures; a cache that cannot be written keeps nothing,
silently (the answer is computed again next time)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from harness.core.files import CacheError, atomic_write, cache_root

MISSING = object()
NAMES_KEPT = 3  # identities kept per name (the current tool build's and the two before it, as harness.toolchain keeps builds)


class Memo:
    def __init__(self, name: str, identity: str, kept: int = 4096):
        """`kept`: the newest answers kept; older ones are removed when a run adds answers."""
        self.name, self.kept = name, kept
        try:
            self.dir: Path | None = cache_root() / "memo" / f"{name}-{identity}"
        except CacheError:
            self.dir = None
        self._pruned = False

    def key(self, *inputs: Any) -> str | None:
        """The key of an answer computed from `inputs` (JSON-able; dict keys sorted); None when they cannot be keyed."""
        try:
            text = json.dumps(inputs, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):  # keys of several types (a YAML int key beside strings)
            return None
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()

    def warm(self) -> bool:
        """Whether answers of this code were kept before (a run that finds them all need not start what computes them)."""
        if self.dir is None:
            return False
        try:
            with os.scandir(self.dir) as entries:
                return any(entries)
        except OSError:
            return False

    def get(self, key: str | None) -> Any:
        """The answer kept under `key`, else MISSING."""
        if key is None or self.dir is None:
            return MISSING
        try:
            with open(self.dir / key[:2] / key, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return MISSING

    def put(self, key: str | None, answer: Any) -> None:
        if key is None or self.dir is None:
            return
        try:
            atomic_write(self.dir / key[:2] / key, json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
            if not self._pruned:
                self._pruned = True
                self._prune()
        except (OSError, TypeError, ValueError):
            pass  # a read-only cache, an answer that is no JSON: computed again next time

    def _prune(self) -> None:
        """Once per process that adds answers: the oldest beyond `kept`, and the directories of older identities."""
        files = [p for sub in self.dir.iterdir() if sub.is_dir() for p in sub.iterdir()]
        if len(files) > self.kept:
            for old in sorted(files, key=lambda p: p.stat().st_mtime)[:len(files) - self.kept]:
                old.unlink(missing_ok=True)
        others = sorted(self.dir.parent.glob(f"{self.name}-*"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in [p for p in others if p != self.dir][NAMES_KEPT - 1:]:
            shutil.rmtree(old, ignore_errors=True)
