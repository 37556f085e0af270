"""Validation of rendered objects as the cluster would validate them on create, offline.

tools/kubecheck runs the pinned kube-apiserver's own code for custom resources (strict decoding,
pruning, defaulting, the OpenAPI schema, x-kubernetes-validations CEL rules, metadata) and Kueue's
validating webhooks at the pinned version, then KubeRay's own RayJob validation (what its controller
checks before it acts), and kubeconform's validator on the offline schemas for
built-in kinds (`harness.gate.schemas`). It is started before rendering (`Checker.start`) so that it
loads the CRDs while fluxbuild renders, and is handed the objects once they are known.
"""
from __future__ import annotations

import json
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
    "controller": "kuberay-validation",  # what KubeRay's RayJob controller validates before it acts
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

    def __init__(self, extra_crds: tuple[Path, ...] = ()) -> None:
        """`extra_crds`: CRD YAML files of the checked repository (the configuration's `crds`), known besides the pinned ones."""
        self._helper = tools.LineProcess(
            "kubecheck", lambda: [str(tools.ensure("kubecheck")["kubecheck"].path()), str(schemas.schema_dir(extra_crds)), KUBERNETES_VERSION],
            CheckError)
        self._expected = False

    def start(self) -> "Checker":
        self._helper.start()
        return self

    def expect(self, kinds: set[tuple[str, str]]) -> None:
        """The (apiVersion, kind) pairs the objects will have, to prepare their validators."""
        if not self._expected:
            self._expected = True
            self._helper.send(sorted(kinds))

    def check(self, objects: list[dict]) -> list[Problem | None]:
        """One result per object, in order: None when the cluster would accept it."""
        self.expect(set())
        unique: dict[str, int] = {}
        for obj in objects:
            unique.setdefault(json.dumps(obj, sort_keys=True, default=str), len(unique))
        results = self._helper.finish([json.loads(k) for k in unique])
        self._expected = False
        problems = [Problem(r["stage"], tuple(r["errors"])) if r["stage"] else None for r in results]
        return [problems[unique[json.dumps(obj, sort_keys=True, default=str)]] for obj in objects]

    def close(self) -> None:
        self._helper.close()


def validate(objects: list[dict]) -> list[Problem | None]:
    """Checks `objects` in a kubecheck process of their own."""
    return Checker().start().check(objects)
