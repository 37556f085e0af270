"""`make cluster [CLUSTER=<name>]` (scripts/cluster): a local replica of one of clusters/, for a
person, until Ctrl-C.

    python -m harness.cluster [--cluster NAME] [--workdir DIR]

Starts the plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, Kueue,
KubeRay), creates the cluster's nodes from its Terraform pools (terraform/clusters/NAME.tfvars),
applies its queue layer as Flux renders it (the objects of its Flux Kustomizations that this plane
serves; the Flux and Helm objects themselves are left out: no Flux controllers run here), and
prints `KUBECONFIG=<path>` once ready. SIGINT, SIGTERM and SIGHUP stop every process in order and
keep the logs; the etcd data (~70 MB a run) is removed once every process has stopped. Exit 1 when a
component dies, 2 when the start fails (a HarnessError, printed without a traceback), also for a
name that is no cluster of clusters/, which is checked before anything is built or started.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kubernetes.client import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from harness.cluster.local_cluster import ClusterError, LocalCluster
from harness.cluster.nodes import add_nodes
from harness.gate import cluster_dirs, is_flux_kustomization, render_repository
from harness.k8s import Kube, apply_order
from harness.core import REPO_ROOT, HarnessError, StopSignals, say, unwritable_dir

ALIVE_CHECK = 1.0  # seconds between checks that every component still runs
DEFAULT_CLUSTER = "prod-eastus2"


def check_name(name: str, root: Path = REPO_ROOT) -> None:
    """ClusterError unless `name` is a cluster of clusters/ as the gate finds them (a kustomization file under any
    name kustomize reads, or a cluster that Flux's generator builds)."""
    have = [d.name for d in cluster_dirs(root)]
    if name not in have:
        raise ClusterError(f"no cluster {name!r} in clusters/ (have: {', '.join(have) or 'none'})")


def replicate(cluster: LocalCluster, name: str) -> None:
    """The nodes and the queue layer of clusters/<name> on the started local cluster."""
    check_name(name)
    kube = Kube(cluster.api_client())
    add_nodes(kube, REPO_ROOT, name)
    rendered = next(c for c in render_repository(REPO_ROOT)[1] if c.name == name)  # rendered as the gate renders it
    failed = [b.id for b in rendered.flux if b.error]
    if rendered.entry.error or failed:
        raise ClusterError(f"clusters/{name} does not render ({rendered.entry.error or ', '.join(failed)}): run `make validate`")
    applied, left_out = 0, set()
    for obj in apply_order([o for b in rendered.flux for o in b.objects if not is_flux_kustomization(o)]):
        try:
            kube.resource(obj["apiVersion"], obj["kind"])
        except ResourceNotFoundError:
            left_out.add(f"{obj['apiVersion']} {obj['kind']}")
            continue
        kube.apply(obj)
        applied += 1
    say("cluster", f"{name}: applied {applied} objects of its Flux layers"
                   + (f"; left out (no such API here): {', '.join(sorted(left_out))}" if left_out else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cluster",
                                     description="Run the local cluster (etcd, kube-apiserver, kube-controller-manager, "
                                                 "kube-scheduler, KWOK, Kueue, KubeRay) until Ctrl-C.")
    parser.add_argument("--workdir", type=Path, help="where certificates, data, the kubeconfig and logs go "
                                                     "(default: a new directory under build/cluster)")
    parser.add_argument("--cluster", default=DEFAULT_CLUSTER,
                        help=f"which clusters/<name> to replicate: its node pools and queue layer (default: {DEFAULT_CLUSTER}, "
                             "the team-queues production cluster)")
    args = parser.parse_args(argv)
    try:
        check_name(args.cluster)
    except ClusterError as err:
        say("cluster", f"failed: {err}")
        return 2
    runs = args.workdir or REPO_ROOT / "build" / "cluster"
    unwritable = unwritable_dir(runs, "pass a directory you can write: make cluster WORKDIR=DIR (scripts/cluster --workdir DIR)")
    if unwritable:
        say("cluster", f"failed: {unwritable}")
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="run-", dir=runs))

    # SIGINT/SIGTERM/SIGHUP interrupt whatever runs (also a start in progress) like Ctrl-C does, so the finally block
    # below tears down in order; SIGINT too, since a shell starts background jobs with SIGINT ignored and Python keeps
    # that. Only the first raises (a group kill under make delivers SIGTERM twice), and the teardown runs shielded. The
    # request is also remembered: an exception a signal handler raises while the interpreter runs a finalizer (a
    # socket's __del__ during a readiness probe) is printed and dropped by CPython, and the start would then run on;
    # the checks after each step stop it there instead.
    stop = StopSignals(on_first=lambda _name: say("cluster", "stopping")).install()  # said before a start in progress stops
    unless_requested = stop.check
    cluster = LocalCluster(workdir)
    try:
        cluster.start()
        unless_requested()
        replicate(cluster, args.cluster)
        unless_requested()
        print(f"KUBECONFIG={cluster.kubeconfig}", flush=True)
        say("cluster", f"up; logs in {cluster.log_dir}; Ctrl-C to stop")
        while True:
            time.sleep(ALIVE_CHECK)
            unless_requested()
            dead = [p for p in cluster.all_processes() if not p.alive()]
            if dead:
                say("cluster", dead[0].describe_failure("exited unexpectedly; stopping the cluster"))
                return 1
    except KeyboardInterrupt:
        return 0
    except (HarnessError, ApiException, OSError) as err:  # ProcessError, ClusterError, WaitTimeout, a workdir it cannot write
        say("cluster", f"failed: {err}")
        return 2
    finally:
        stop.shield()
        try:
            cluster.stop()
        except ClusterError as err:  # reported; the exit code already says how the run ended
            say("cluster", str(err))
        else:
            drop_etcd_data(cluster)
        if cluster.log_dir.is_dir():
            say("cluster", f"logs kept in {cluster.log_dir}")


def drop_etcd_data(cluster: LocalCluster) -> None:
    """Removes the stopped cluster's etcd data directory (~70 MB; nothing reads it again) once no process of the
    cluster is alive, keeping its logs, certificates and kubeconfig."""
    if not any(p.group_alive() for p in cluster.all_processes()):
        shutil.rmtree(cluster.workdir / "etcd", ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
