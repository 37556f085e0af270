"""Building blocks every layer uses: pinned versions, the cache and atomic writes,
progress lines, Kubernetes quantities, named timeouts.

Nothing here imports another harness package or the kubernetes client's API modules.
"""
from harness.core import releases, timeouts, versions
from harness.core.errors import HarnessError
from harness.core.errors import report as report_error
from harness.core.files import atomic_write, cache_lock, cache_root, locked, publish_dir
from harness.core.progress import Ticker, say
from harness.core.quantity import format_quantity, parse_quantity
from harness.core.versions import REPO_ROOT

__all__ = ["REPO_ROOT", "HarnessError", "Ticker", "atomic_write", "cache_lock", "cache_root", "format_quantity", "locked", "parse_quantity", "releases",
           "publish_dir", "report_error", "say", "timeouts", "versions"]
