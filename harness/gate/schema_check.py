"""Validation of rendered objects as the cluster would validate them on create, offline.

tools/kubecheck runs the pinned kube-apiserver's own code for custom resources (strict decoding,
pruning, defaulting, the OpenAPI schema, x-kubernetes-validations CEL rules, metadata) and Kueue's
validating webhooks at the pinned version, and kubeconform's validator on the offline schemas for
built-in kinds (`harness.gate.schemas`). It is started before rendering (`Checker.start`) so that it
loads the CRDs while fluxbuild renders, and is handed the objects once they are known.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness import toolchain as tools
from harness.core import HarnessError, versions
from harness.gate import schemas

KUBERNETES_VERSION = versions.module("kubernetes")[1].removeprefix("v")

# kubecheck's stages, in the order the apiserver runs them, and the rule each is reported under.
STAGE_RULES = {
    "unknown": "schema-unknown-kind",  # no such apiVersion/kind served
    "decode": "schema",  # strict decoding: unknown or duplicate fields
    "schema": "schema",  # built-in kinds: kubeconform, strict
    "validation": "api-validation",  # the apiserver's validation of a custom resource (schema, CEL, metadata)
    "webhook": "kueue-webhook",  # Kueue's validating webhook
}


class CheckError(HarnessError, RuntimeError):
    pass


@dataclass(frozen=True)
class Problem:
    """One rejection: the stage that rejected the object and the field errors it gave."""
    stage: str
    errors: tuple[dict, ...]  # {"field", "type", "detail", "message"}

    @property
    def rule(self) -> str:
        return STAGE_RULES[self.stage]


def kubeconform_args(schema_dir: Path) -> list[str]:
    """The flags of the reference pipeline (`make bench-validate`) and of kubecheck's built-in check."""
    return [
        "-strict",
        "-kubernetes-version", KUBERNETES_VERSION,
        "-schema-location", str(schema_dir) + "/{{ .ResourceKind }}{{ .KindSuffix }}.json",
    ]


class Checker:
    """One kubecheck process per gate run: `start()` early, `expect(kinds)` as soon as the kinds
    are known (their validators are built while the caller renders), `check(objects)` once."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._expected = False

    def start(self) -> "Checker":
        binary = tools.ensure("kubecheck")["kubecheck"].path()
        self._proc = subprocess.Popen([str(binary), str(schemas.schema_dir()), KUBERNETES_VERSION],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return self

    def expect(self, kinds: set[tuple[str, str]]) -> None:
        """The (apiVersion, kind) pairs the objects will have, to prepare their validators."""
        if self._proc is None:
            self.start()
        if not self._expected:
            self._expected = True
            self._proc.stdin.write(json.dumps(sorted(kinds)) + "\n")
            self._proc.stdin.flush()

    def check(self, objects: list[dict]) -> list[Problem | None]:
        """One result per object, in order: None when the cluster would accept it."""
        self.expect(set())
        proc, self._proc = self._proc, None
        unique: dict[str, int] = {}
        for obj in objects:
            unique.setdefault(json.dumps(obj, sort_keys=True, default=str), len(unique))
        try:
            out, err = proc.communicate(json.dumps([json.loads(k) for k in unique]))
        except BrokenPipeError:  # it exited early; its stderr says why
            out, err = "", proc.stderr.read()
            proc.wait()
        if proc.returncode != 0:
            raise CheckError(f"kubecheck failed (exit {proc.returncode}): {err.strip()[-2000:]}")
        try:
            results = json.loads(out)
        except json.JSONDecodeError:
            raise CheckError(f"kubecheck gave no JSON report: {err.strip()[-2000:]}") from None
        problems = [Problem(r["stage"], tuple(r["errors"])) if r["stage"] else None for r in results]
        return [problems[unique[json.dumps(obj, sort_keys=True, default=str)]] for obj in objects]

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.communicate()
            self._proc = None


def validate(objects: list[dict]) -> list[Problem | None]:
    """Checks `objects` in a kubecheck process of their own."""
    return Checker().start().check(objects)
