"""`make cluster` (scripts/cluster): the local cluster for a person, until Ctrl-C.

    python -m harness.cluster [--workdir DIR]

Prints `KUBECONFIG=<path>` once everything is ready; SIGINT, SIGTERM and SIGHUP stop every
process in order and keep the logs; exit 1 when a component dies or the start fails.
"""
from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

from kubernetes.client import ApiException

from harness.cluster.local_cluster import ClusterError, LocalCluster
from harness.core import REPO_ROOT, HarnessError, say

ALIVE_CHECK = 1.0  # seconds between checks that every component still runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cluster",
                                     description="Run the local cluster (etcd, kube-apiserver, kube-controller-manager, "
                                                 "Kueue, KubeRay) until Ctrl-C.")
    parser.add_argument("--workdir", type=Path, help="where certificates, data, the kubeconfig and logs go "
                                                     "(default: a new directory under build/cluster)")
    args = parser.parse_args(argv)
    if args.workdir:
        workdir = args.workdir
    else:
        (REPO_ROOT / "build" / "cluster").mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="run-", dir=REPO_ROOT / "build" / "cluster"))

    # SIGINT/SIGTERM/SIGHUP interrupt whatever runs (also a start in progress) like Ctrl-C does,
    # so the finally block below tears down in order.
    def interrupt(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # SIGINT too: a shell starts background jobs with SIGINT ignored, and Python keeps that.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    cluster = LocalCluster(workdir)
    try:
        cluster.start()
        print(f"KUBECONFIG={cluster.kubeconfig}", flush=True)
        say("cluster", f"up; logs in {cluster.log_dir}; Ctrl-C to stop")
        while True:
            time.sleep(ALIVE_CHECK)
            dead = [p for p in cluster.all_processes() if not p.alive()]
            if dead:
                say("cluster", dead[0].describe_failure("exited unexpectedly; stopping the cluster"))
                return 1
    except KeyboardInterrupt:
        say("cluster", "stopping")
        return 0
    except (HarnessError, ApiException, OSError) as err:  # ProcessError, ClusterError, WaitTimeout, a workdir it cannot write
        say("cluster", f"failed: {err}")
        return 1
    finally:
        try:
            cluster.stop()
        except ClusterError as err:  # reported; the exit code already says how the run ended
            say("cluster", str(err))


if __name__ == "__main__":
    sys.exit(main())
