"""A workaround, on its own until Kueue needs it no more: Kueue v0.17 reads the metrics serving
cert from a hard-coded path whenever internal cert management is off, and exits if the files
are missing, even with metrics disabled (cmd/kueue/main.go: metricsCertPath). There is no flag
or config field for it, so the harness writes a cert there (it runs as root)."""
from __future__ import annotations

import time
from pathlib import Path

from cryptography import x509

from harness.cluster.certs import KeyPair
from harness.cluster.operators import ClusterError
from harness.core import locked

KUEUE_METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
STILL_VALID = 86400  # seconds a pair already there must stay valid to be kept


def ensure_kueue_metrics_cert(pair: KeyPair, directory: Path = KUEUE_METRICS_CERT_DIR) -> None:
    """Writes `pair` as tls.crt/tls.key into `directory` unless a pair valid for another day is there."""
    crt, key = directory / "tls.crt", directory / "tls.key"
    try:
        # One machine-wide pair shared by every local cluster: the lock keeps clusters starting
        # at the same time from interleaving their crt and key writes (a mismatched pair).
        with locked(directory / ".lock"):
            try:  # keep a valid pair another local cluster may be watching; metrics are not served anyway
                cert = x509.load_pem_x509_certificate(crt.read_bytes())
                if key.exists() and cert.not_valid_after_utc.timestamp() > time.time() + STILL_VALID:
                    return
            except (OSError, ValueError):
                pass
            pair.write(directory, "tls")
    except OSError as err:
        raise ClusterError(
            f"Kueue v0.17 needs {crt} and {key} when internal cert management is off (hard-coded path, no flag), "
            f"and writing them failed: {err}. Run as root or create that directory writable for this user.") from None
