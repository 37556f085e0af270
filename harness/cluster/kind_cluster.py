"""A kind cluster for the `kind` backend, driven with the pinned kind and kubectl builds.

`kind_plan(workdir)` decides everything the backend runs, without building or running
anything: the kind and kubectl binaries (the tool cache, built from the pinned modules),
the node image (versions.yaml `kind.node_image`, by digest), a cluster name of its own per
run, and the kubeconfig and logs in the run's work directory, which may not be inside the
checkout. `KindCluster(plan)` runs it: builds the tools (only then), creates the cluster,
checks the server runs the pinned Kubernetes line, and deletes it again. The static tests
check the plan on machines without Docker; the CI `kind` job runs it.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness import toolchain as tools
from harness.core import HarnessError, say, timeouts, versions

NAME_PREFIX = "ray-kueue"
# kind's own rule for cluster names (pkg/internal/apis/config/validate.go), and our length cap:
# the name becomes the node container's name and a kubeconfig context.
NAME_RE = re.compile(r"^[a-z0-9.-]{1,40}$")
IMAGE_RE = re.compile(r"^kindest/node:v(?P<version>\d+\.\d+\.\d+)@sha256:[0-9a-f]{64}$")


class KindError(HarnessError, RuntimeError):
    """A kind plan that may not run (bad pin, work directory in the checkout) or a failed step."""


def run_name(pid: int | None = None, token: str | None = None) -> str:
    """The cluster's name for this run: the process id and a random suffix, so two runs (two
    checkouts, a crashed run's leftover) never reuse or delete each other's cluster."""
    return f"{NAME_PREFIX}-{os.getpid() if pid is None else pid}-{token or secrets.token_hex(3)}"


def node_image() -> tuple[str, str]:
    """(image, Kubernetes version) of the pinned kind node image; refuses a tag without digest."""
    image = str(versions.entry("kind")["node_image"])
    match = IMAGE_RE.match(image)
    if not match:
        raise KindError(f"versions.yaml kind.node_image {image!r} is not kindest/node:vX.Y.Z@sha256:<digest> "
                        "(take it, digest included, from the pinned kind release's notes)")
    line = str(versions.entry("kubernetes")["production"])
    if not match["version"].startswith(line + "."):
        raise KindError(f"versions.yaml kind.node_image runs Kubernetes {match['version']}, not the pinned {line} line")
    return image, "v" + match["version"]


@dataclass(frozen=True)
class KindPlan:
    """The commands and files of one kind cluster; nothing here has run yet."""
    name: str
    workdir: Path
    kind: Path
    kubectl: Path
    image: str
    node_version: str     # what the node image runs, e.g. v1.35.8
    kubectl_version: str  # what the kubectl build reports, the pinned kubernetes module's version

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"

    def env(self) -> dict[str, str]:
        """Environment of every kind and kubectl command: only this cluster's kubeconfig."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def create_command(self) -> list[str]:
        return [str(self.kind), "create", "cluster", "--name", self.name, "--image", self.image,
                "--kubeconfig", str(self.kubeconfig), "--wait", f"{timeouts.KIND_CREATE:.0f}s"]

    def delete_command(self) -> list[str]:
        return [str(self.kind), "delete", "cluster", "--name", self.name, "--kubeconfig", str(self.kubeconfig)]

    def export_logs_command(self) -> list[str]:
        return [str(self.kind), "export", "logs", str(self.log_dir), "--name", self.name]

    def kubectl_command(self, *args: str) -> list[str]:
        return [str(self.kubectl), "--kubeconfig", str(self.kubeconfig), *args]


def kind_plan(workdir: Path, name: str | None = None) -> KindPlan:
    """The plan of a kind cluster whose files live in `workdir` (outside the checkout)."""
    workdir = workdir.resolve()
    repo = versions.REPO_ROOT.resolve()
    if workdir == repo or repo in workdir.parents:
        raise KindError(f"kind work directory {workdir} is inside the checkout {repo}; use a temporary directory")
    name = name or run_name()
    if not NAME_RE.match(name):
        raise KindError(f"kind cluster name {name!r} does not match {NAME_RE.pattern}")
    image, node_version = node_image()
    return KindPlan(name=name, workdir=workdir, kind=tools.tool("kind").path("kind"),
                    kubectl=tools.tool("kubectl").path("kubectl"), image=image, node_version=node_version,
                    kubectl_version=tools.tool("kubectl").version)


class KindCluster:
    """Runs a KindPlan: create (building kind and kubectl first), kubectl, delete."""

    def __init__(self, plan: KindPlan):
        self.plan = plan

    @property
    def kubeconfig(self) -> Path:
        return self.plan.kubeconfig

    def _run(self, cmd: list[str], what: str, input: str | None = None, timeout: float | None = None) -> str:
        proc = subprocess.run(cmd, cwd=self.plan.workdir, env=self.plan.env(), input=input, capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0:
            raise KindError(f"{what}: `{' '.join(cmd)}` failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc.stdout

    def kubectl(self, *args: str, input: str | None = None, timeout: float = timeouts.KIND_KUBECTL) -> str:
        return self._run(self.plan.kubectl_command(*args), f"kubectl {args[0] if args else ''}", input=input, timeout=timeout)

    def create(self) -> None:
        tools.ensure(*tools.KIND_TOOLS)
        self.plan.workdir.mkdir(parents=True, exist_ok=True)
        self.check_kubectl()
        say("kind", f"creating cluster {self.plan.name} ({self.plan.image})")
        try:
            self._run(self.plan.create_command(), f"kind create cluster {self.plan.name}",
                      timeout=timeouts.KIND_CREATE + timeouts.KIND_KUBECTL)
            self.check_server()
        except BaseException:
            try:
                self.delete(export_logs=True)
            except (KindError, subprocess.TimeoutExpired) as err:  # the create failure is the one to report
                say("kind", f"could not delete {self.plan.name} after a failed start: {err}")
            raise

    def check_kubectl(self) -> None:
        """The kubectl build reports the pinned Kubernetes version (its ldflags set it)."""
        out = subprocess.run([str(self.plan.kubectl), "version", "--client", "-o", "json"], cwd=self.plan.workdir,
                             env=self.plan.env(), capture_output=True, text=True, check=False, timeout=timeouts.KIND_KUBECTL)
        got = (json.loads(out.stdout or "{}").get("clientVersion") or {}).get("gitVersion")
        if got != self.plan.kubectl_version:
            raise KindError(f"{self.plan.kubectl} reports {got!r}, not the pinned {self.plan.kubectl_version}: {out.stderr.strip()}")

    def check_server(self) -> None:
        """The cluster runs the node image's Kubernetes, i.e. the pinned line (not kind's default)."""
        got = json.loads(self.kubectl("version", "-o", "json")).get("serverVersion", {}).get("gitVersion")
        if got != self.plan.node_version:
            raise KindError(f"kind cluster {self.plan.name} runs Kubernetes {got}, not {self.plan.node_version} ({self.plan.image})")

    def delete(self, export_logs: bool = False) -> None:
        """Deletes the cluster; with export_logs, first keeps its node logs in the plan's log_dir."""
        if export_logs:
            try:
                subprocess.run(self.plan.export_logs_command(), cwd=self.plan.workdir, env=self.plan.env(),
                               capture_output=True, timeout=timeouts.KIND_KUBECTL)
            except subprocess.TimeoutExpired:
                say("kind", f"exporting the logs of {self.plan.name} timed out")
        self._run(self.plan.delete_command(), f"kind delete cluster {self.plan.name}", timeout=timeouts.KIND_KUBECTL)
