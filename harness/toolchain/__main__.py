"""python -m harness.toolchain [--list] [NAME ...]: build or list the cached tools."""
import sys

from harness.toolchain.builds import main

if __name__ == "__main__":
    sys.exit(main())
