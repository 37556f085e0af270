"""Building blocks every layer uses: pinned versions, the cache and atomic writes,
progress lines, Kubernetes quantities, named timeouts.

Nothing here imports another harness package or the kubernetes client's API modules. The public names
load their module on first use (PEP 562), so that a light caller (the gate's entry point, which starts its
Go helper before the rest loads) pays only for what it uses.
"""
from __future__ import annotations

import importlib

# Public name -> (module of this package, its name there); None: the module itself.
_EXPORTS = {
    "releases": ("releases", None), "timeouts": ("timeouts", None), "versions": ("versions", None),
    "pin_file": ("pin_file", None), "yaml_nodes": ("yaml_nodes", None),
    "HarnessError": ("errors", "HarnessError"), "report_error": ("errors", "report"),
    "atomic_write": ("files", "atomic_write"), "copy_config": ("files", "copy_config"), "CONFIG_PATHS": ("files", "CONFIG_PATHS"), "Memo": ("memo", "Memo"), "MISSING": ("memo", "MISSING"), "cache_lock": ("files", "cache_lock"), "cache_root": ("files", "cache_root"),
    "locked": ("files", "locked"), "publish_dir": ("files", "publish_dir"), "unwritable_dir": ("files", "unwritable_dir"),
    "xdg_cache_home": ("files", "xdg_cache_home"), "export_tree": ("gittree", "export_tree"), "TreeError": ("gittree", "TreeError"),
    "Ticker": ("progress", "Ticker"), "say": ("progress", "say"), "tell": ("progress", "tell"),
    "format_quantity": ("quantity", "format_quantity"), "parse_quantity": ("quantity", "parse_quantity"),
    "REPO_ROOT": ("versions", "REPO_ROOT"), "StopSignals": ("signals", "StopSignals"),
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    loaded = importlib.import_module(f"{__name__}.{module}")
    value = loaded if attr is None else getattr(loaded, attr)
    globals()[name] = value  # looked up once
    return value
