"""Flux on the local cluster: the real source-controller and kustomize-controller as local
processes, reconciling this repository from the local Git server into a LocalCluster.

    with LocalCluster(workdir) as cluster, Fleet(cluster, workdir / "fleet") as fleet:
        fleet.bootstrap()                    # push this working tree, GitRepository + root Kustomization
        fleet.wait_ready(fleet.revision)     # every Flux Kustomization Ready at that commit
        fleet.wc.write(...); fleet.push("raise team-a's GPUs")

What differs from a cluster that `flux bootstrap` or the AKS Flux extension sets up, and why:
- the controllers run as processes with the admin kubeconfig ($KUBECONFIG; they have no
  --kubeconfig flag), leader election off, every listener on 127.0.0.1 and a free port;
- the artifact server of source-controller advertises 127.0.0.1:<port>, so kustomize-controller
  downloads artifacts the way it does in a cluster, only without the Service in between;
- the CRDs come from the pinned controllers' modules (config/crd/bases), as in `make install`;
- GitRepository and root Kustomization `flux-system` (what bootstrap writes into
  clusters/<name>/flux-system/gotk-sync.yaml) are created here, pointing at the local Git
  server and clusters/local/entry; the GitRepository polls every GIT_INTERVAL instead of 1m.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from harness import toolchain as tools
from harness.cluster import LocalCluster, Process, Startable, free_port, http_check, stop_in_reverse, wait_until
from harness.core import HarnessError, REPO_ROOT, say, timeouts
from harness.gitops.gitserver import GitServer, WorkingCopy
from harness.k8s import (GIT_REPOSITORY, KUSTOMIZATION, Kube, WaitTimeout, crd_documents, ensure_namespace, install_crds,
                         is_false, is_true)

NAMESPACE = "flux-system"
ROOT = "flux-system"  # GitRepository and root Kustomization, named as flux bootstrap names them
ENTRY_PATH = "./clusters/local/entry"
CLUSTER_VARS = REPO_ROOT / "clusters/local/cluster-vars.example.yaml"
GIT_INTERVAL = "5s"   # how often source-controller polls the branch; production: 1m
ROOT_INTERVAL = "10m"
# What of this checkout goes into the fleet repository: everything Flux reads.
FLEET_PATHS = ("base", "overlays", "components", "clusters", "flux", "workloads")

SKU_COMPONENT = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"  # the quotas clusters/local runs with
NODES_OF = "prod-eastus2"  # the cluster whose Terraform pools (Standard_ND96amsr_A100_v4) back those quotas: the fleet's nodes

FIELD_MANAGER = "kustomize-controller"  # the controllers' server-side apply manager name


class FluxError(HarnessError, RuntimeError):
    """Flux could not be started or did not converge; the message says what was seen last."""


def flux_crds() -> list[dict]:
    return (crd_documents(tools.module_dir("flux.source-controller") / "config/crd/bases")
            + crd_documents(tools.module_dir("flux.kustomize-controller") / "config/crd/bases"))


class FluxControllers(Startable):
    """source-controller and kustomize-controller against one LocalCluster."""

    def __init__(self, cluster: LocalCluster, workdir: Path):
        self.cluster = cluster
        self.workdir = Path(workdir).resolve()
        self.log_dir = cluster.log_dir
        self.processes: list[Process] = []
        self.ports: dict[str, int] = {}

    def _start(self) -> None:
        built = tools.ensure(*tools.FLUX_TOOLS)
        crds = flux_crds()
        say("flux", f"installing {len(crds)} Flux CRDs from the controllers' modules")
        api = self.cluster.api_client()
        try:
            install_crds(api, crds)
            ensure_namespace(api, NAMESPACE)
        except WaitTimeout as err:
            raise FluxError(f"the Flux CRDs: {err}") from None
        finally:
            api.close()

        for name in ("storage", "source-metrics", "source-health", "kustomize-metrics", "kustomize-health"):
            self.ports[name] = free_port()
        storage = self.workdir / "artifacts"
        storage.mkdir(parents=True, exist_ok=True)  # source-controller refuses a missing --storage-path
        env = {"KUBECONFIG": str(self.cluster.kubeconfig), "RUNTIME_NAMESPACE": NAMESPACE}
        common = ["--log-encoding=console", "--log-level=debug", "--watch-all-namespaces=true"]
        say("flux", f"starting source-controller (artifacts on 127.0.0.1:{self.ports['storage']}) and kustomize-controller")
        self.processes.append(Process("source-controller", [
            built["source-controller"].path(), *common,
            f"--storage-path={storage}",
            f"--storage-addr=127.0.0.1:{self.ports['storage']}",
            f"--storage-adv-addr=127.0.0.1:{self.ports['storage']}",
            f"--metrics-addr=127.0.0.1:{self.ports['source-metrics']}",
            f"--health-addr=127.0.0.1:{self.ports['source-health']}",
        ], self.log_dir, env=env, cwd=self.workdir).start())
        self.processes.append(Process("kustomize-controller", [
            built["kustomize-controller"].path(), *common,
            "--no-remote-bases=true",  # as the multi-tenancy lock-down: everything comes from the fleet repo
            "--requeue-dependency=2s",  # default 30s: how soon `queues` notices infra-controllers is Ready
            f"--metrics-addr=127.0.0.1:{self.ports['kustomize-metrics']}",
            f"--health-addr=127.0.0.1:{self.ports['kustomize-health']}",
        ], self.log_dir, env=env, cwd=self.workdir).start())
        for proc, port in zip(self.processes, ("source-health", "kustomize-health")):
            wait_until(http_check(f"http://127.0.0.1:{self.ports[port]}/readyz"), timeouts.CONTROLLER_READY,
                       f"{proc.name} /readyz", watch=self.processes)

    def stop(self) -> None:
        errors = stop_in_reverse(self.processes)
        if errors:
            raise FluxError("stopping the Flux controllers failed: " + "; ".join(errors))

    def alive(self) -> bool:
        """Both controllers started and still running."""
        return bool(self.processes) and all(p.alive() for p in self.processes)

    def dead(self) -> list[str]:
        """What each controller that has exited said last (its log tail)."""
        return [p.describe_failure("exited") for p in self.processes if not p.alive()]


class Fleet(Startable):
    """A fleet repository on the local Git server, reconciled by Flux into the cluster."""

    def __init__(self, cluster: LocalCluster, workdir: Path):
        self.cluster = cluster
        self.workdir = Path(workdir).resolve()
        self.controllers = FluxControllers(cluster, self.workdir)
        self.server = GitServer(self.workdir / "git", cluster.log_dir)
        self.wc: WorkingCopy | None = None
        self.kube: Kube | None = None
        self.revision = ""

    def _start(self) -> None:
        self.server.start()
        self.controllers.start()
        self.kube = Kube(self.cluster.api_client())  # after the Flux CRDs, so discovery knows them

    def stop(self) -> None:
        try:
            self.controllers.stop()
        finally:
            self.server.stop()
            if self.kube:
                self.kube.api_client.close()

    # -- the Git side -------------------------------------------------------------------------
    def bootstrap(self, source: Path = REPO_ROOT) -> str:
        """Pushes `source`'s configuration as the first commit and points Flux at it."""
        self.server.create_repository("fleet")
        self.wc = WorkingCopy.clone(self.server.url("fleet"), self.workdir / "wc")
        self.revision = self.wc.seed(source, FLEET_PATHS, "fleet: this repository's working tree")
        for obj in bootstrap_objects(self.server.url("fleet")):
            self.kube.apply(obj)
        return self.revision

    def push(self, message: str) -> str:
        self.revision = self.wc.commit_and_push(message)
        return self.revision

    # -- the cluster side ---------------------------------------------------------------------
    def kustomizations(self) -> list[dict]:
        return self.kube.list(*KUSTOMIZATION, namespace=NAMESPACE)

    def wait_ready(self, revision: str, names: tuple[str, ...] = (ROOT, "infra-controllers", "queues"),
                   timeout: float = timeouts.FLUX_RECONCILE) -> list[dict]:
        """Until every named Kustomization is Ready with lastAppliedRevision at `revision`."""
        def done(items):
            by_name = {i["metadata"]["name"]: i for i in items}
            ok = all(n in by_name and applied_revision(by_name[n]) == revision and is_true(by_name[n], "Ready") for n in names)
            return [by_name[n] for n in names] if ok else None

        return self._wait(done, f"Kustomizations {', '.join(names)} Ready at {revision[:12]}", timeout)

    def wait_failed(self, name: str, revision: str, timeout: float = timeouts.FLUX_RECONCILE) -> dict:
        """Until Kustomization `name` has attempted `revision` and reports Ready=False."""
        def failed(items):
            ks = next((i for i in items if i["metadata"]["name"] == name), None)
            attempted = ((ks or {}).get("status") or {}).get("lastAttemptedRevision", "")
            return ks if is_false(ks, "Ready") and attempted.endswith(revision) else None

        return self._wait(failed, f"Kustomization {name} Ready=False at {revision[:12]}", timeout)

    def _wait(self, predicate, describe: str, timeout: float):
        try:
            return self.kube.wait_for(*KUSTOMIZATION, predicate, describe, NAMESPACE, timeout)
        except WaitTimeout as err:
            dead = self.controllers.dead()
            raise FluxError(f"{err}\n{chr(10).join(dead)}" if dead else str(err)) from None


def set_whole_pool_quota(wc: WorkingCopy, cpu: str, memory: str) -> None:
    """Edits the SKU component's patch for the whole-pool queue (single-queue) in a working copy."""
    doc = yaml.safe_load(wc.read(SKU_COMPONENT))
    patch = next(p for p in doc["patches"] if "whole-pool" in p["target"]["labelSelector"])
    ops = yaml.safe_load(patch["patch"])
    cpu_op, memory_op = ops[0], ops[1]  # the file's order: group 0's resources 0 (cpu) and 1 (memory)
    if not (cpu_op["path"].endswith("resourceGroups/0/flavors/0/resources/0/nominalQuota")
            and memory_op["path"].endswith("resourceGroups/0/flavors/0/resources/1/nominalQuota")):
        raise FluxError(f"{SKU_COMPONENT}: the whole-pool patch no longer starts with the cpu and memory quotas: {ops[:2]}")
    cpu_op["value"], memory_op["value"] = cpu, memory
    patch["patch"] = yaml.safe_dump(ops, default_flow_style=None)
    wc.write(SKU_COMPONENT, yaml.safe_dump(doc, sort_keys=False))


def applied_revision(ks: dict) -> str:
    """The commit SHA of a Kustomization's lastAppliedRevision (`main@sha1:<sha>`)."""
    rev = ((ks.get("status") or {}).get("lastAppliedRevision") or "")
    return rev.rsplit(":", 1)[-1]


def bootstrap_objects(url: str) -> list[dict]:
    """What `flux bootstrap` would put in gotk-sync.yaml, for the local Git server, plus the
    ConfigMap cluster-vars that Terraform writes in production."""
    cluster_vars = yaml.safe_load(CLUSTER_VARS.read_text())
    return [
        cluster_vars,
        {"apiVersion": GIT_REPOSITORY.api_version, "kind": GIT_REPOSITORY.kind,
         "metadata": {"name": ROOT, "namespace": NAMESPACE},
         "spec": {"interval": GIT_INTERVAL, "url": url, "ref": {"branch": "main"}, "timeout": "20s"}},
        {"apiVersion": KUSTOMIZATION.api_version, "kind": KUSTOMIZATION.kind,
         "metadata": {"name": ROOT, "namespace": NAMESPACE},
         "spec": {"interval": ROOT_INTERVAL, "path": ENTRY_PATH, "prune": True, "timeout": "1m",
                  "sourceRef": {"kind": "GitRepository", "name": ROOT}}},
    ]


# -- comparing the offline rendering with what kustomize-controller applied --------------------
FLUX_LABELS = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")


def inventory_id(obj: dict) -> str:
    """An object's id in a Kustomization's status.inventory: <namespace>_<name>_<group>_<Kind>."""
    group = obj["apiVersion"].rpartition("/")[0]
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}_{meta['name']}_{group}_{obj['kind']}"


def rendered_paths(obj: dict) -> set[tuple[str, ...]]:
    """The field paths an applied manifest sets (lists are atomic leaves, as in these CRDs and
    for kustomize-controller's apply); metadata.name/namespace identify, they are not fields."""
    paths: set[tuple[str, ...]] = set()

    def walk(value, path):
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(v, path + (k,))
        else:
            paths.add(path)

    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status")}
    body["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("name", "namespace")}
    walk(body, ())
    return {p for p in paths if p != ("metadata",)}


def managed_paths(live: dict, manager: str = FIELD_MANAGER) -> set[tuple[str, ...]]:
    """The field paths `manager` owns through server-side apply (managedFields fieldsV1),
    with list items collapsed into their list."""
    paths: set[tuple[str, ...]] = set()

    def walk(fields: dict, path):
        children = {k: v for k, v in fields.items() if k != "."}
        if any(not k.startswith("f:") for k in children):  # k:{..}, v:.., i:N: a list's items
            paths.add(path)
            return
        if not children:
            paths.add(path)
        for k, v in children.items():
            walk(v or {}, path + (k[2:],))

    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == manager and entry.get("operation") == "Apply" and not entry.get("subresource"):
            walk(entry.get("fieldsV1") or {}, ())
    return paths


def value_at(obj: dict, path: tuple[str, ...]):
    for key in path:
        obj = (obj or {}).get(key) if isinstance(obj, dict) else None
    return obj
