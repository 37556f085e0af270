"""The one base class of the harness's own errors.

A HarnessError is a failure the harness can explain: its message names what failed (a file, a
tool, a process, a ref) and, where there is one, the fix. Every CLI catches it and prints the
message without a traceback (exit 2: could not run); anything else is a bug and keeps its
traceback.
"""
from __future__ import annotations

import sys


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""


def report(prog: str, err: BaseException, prefix: str = "") -> int:
    """Prints `prog: [prefix]message` to stderr and returns 2, the CLIs' could-not-run status."""
    print(f"{prog}: {prefix}{err}", file=sys.stderr)
    return 2
