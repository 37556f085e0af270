"""The seed etcd: a cached etcd data directory that already holds the CRDs.

Installing 15 CRDs (4 MB of schema) costs the apiserver ~25 CPU-seconds, 15-20 s on 2 cores,
on every start. The CRDs are static for a given pin, so they are installed once, with
server-side apply, into a seed cluster whose etcd data is cached under
~/.cache/aks-ray-kueue/seeds and copied into each new cluster; starting from it takes ~2 s
more than an empty etcd, copying it 0.1 s.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from harness.cluster.controlplane import ControlPlane
from harness.cluster.operators import ClusterError
from harness.core import cache_lock, cache_root, publish_dir, say, timeouts
from harness.k8s import WaitTimeout, install_crds


def seed_dir(crds: list[dict], binaries: dict[str, Path]) -> Path:
    """Where the seed for these CRDs and these control-plane builds is cached."""
    key = hashlib.sha256(json.dumps([crds, sorted(map(str, binaries.values()))], sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / "seeds" / f"etcd-crds-{key}"


def seed_etcd(crds: list[dict], binaries: dict[str, Path], etcd_data: Path, log_dir: Path,
              start_timeout: float = timeouts.CLUSTER_START) -> None:
    """Copies the seed into `etcd_data` (a new cluster's etcd --data-dir), building it first
    if this is the first run for these pins; parallel first runs build one seed."""
    seed = seed_dir(crds, binaries)
    if not (seed / "member").is_dir():
        with cache_lock(seed.name):
            if not (seed / "member").is_dir():
                build_seed(crds, binaries, seed, log_dir, start_timeout)
    shutil.copytree(seed / "member", etcd_data / "member")


def build_seed(crds: list[dict], binaries: dict[str, Path], seed: Path, log_dir: Path, start_timeout: float) -> None:
    say("cluster", f"first run for these pins: installing {len(crds)} CRDs into a seed etcd, cached in {seed}")
    seed.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=seed.parent))
    try:
        cp = ControlPlane(work, log_dir=log_dir, binaries=binaries, start_timeout=start_timeout).start_apiserver()
        try:
            api = cp.api_client()
            try:
                install_crds(api, crds, timeouts.CRDS_ESTABLISHED)
            except WaitTimeout as err:
                raise ClusterError(f"the seed etcd's CRDs: {err}") from None
            api.close()
        finally:
            cp.stop()  # SIGTERM: etcd closes its database cleanly before the copy
        publish_dir(work / "etcd", seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
