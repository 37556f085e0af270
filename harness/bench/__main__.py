"""python -m harness.bench validate|cluster|flux|scale [options]: one entry point for every benchmark."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    what = argv[0] if argv else ""
    if what in ("validate", "cluster"):
        from harness.bench.validate import main as run
        return run(argv)
    if what == "flux":
        from harness.bench.flux import main as run
    elif what == "scale":
        from harness.bench.scale import main as run
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
