"""The seed etcd: a cached etcd data directory that already holds the CRDs.

Installing 15 CRDs (4 MB of schema) costs the apiserver ~25 CPU-seconds, 15-20 s on 2 cores,
on every start. The CRDs are static for a given pin, so they are installed once, with
server-side apply, into a seed cluster whose etcd data is cached under
~/.cache/aks-ray-kueue/seeds and copied into each new cluster; starting from it takes ~2 s
more than an empty etcd, copying it 0.1 s.
"""
from __future__ import annotations

import errno
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
    try:
        shutil.copytree(seed / "member", etcd_data / "member")
    except OSError as err:  # shutil.Error too: a list of (src, dst, why), one per file that failed
        raise ClusterError(copy_failure(err, seed / "member", etcd_data)) from None


def copy_failure(err: OSError, member: Path, etcd_data: Path) -> str:
    """One line for a seed copy that failed: for a full filesystem, where, how much room a cluster's etcd needs and the
    fix (TMPDIR, or the cluster's work directory); else the first file's error."""
    why = str(err.args[0][0][2]) if isinstance(err, shutil.Error) and err.args and err.args[0] else str(err)
    if getattr(err, "errno", None) != errno.ENOSPC and f"[Errno {errno.ENOSPC}]" not in why:
        return f"cannot copy the seed etcd into {etcd_data}: {why}"
    shutil.rmtree(etcd_data / "member", ignore_errors=True)  # the part copied: the room it took is free again
    need = sum(f.stat().st_size for f in member.rglob("*") if f.is_file()) / 2**20 + 10  # its files, the logs, etcd's growth
    where = etcd_data.parent
    free = shutil.disk_usage(where).free / 2**20 if where.exists() else 0
    tmp = Path(tempfile.gettempdir())
    fix = (f"free space there or set TMPDIR to a larger filesystem (it is {tmp})" if where.resolve().is_relative_to(tmp.resolve())
           else "free space there or pass a work directory on a larger filesystem (make cluster WORKDIR=DIR)")
    return (f"no space left in {where} ({free:.0f} MB free): a cluster's etcd needs about {need:.0f} MB "
            f"(its write-ahead log is preallocated at 64 MB); {fix}")


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
