"""The console script ray-kueue-validate (scripts/validate): the gate's Go helpers start first, so that
their start-up (each loads a large binary and initialises the Kubernetes packages it links) runs on
the other core while Python imports the gate; then harness.gate.validate's command line runs."""
from __future__ import annotations

import sys

from harness.core import HarnessError
from harness.gate.helper import prestart


def cli() -> None:
    try:
        prestart("fluxbuild", "kubecheck")
        from harness.gate.validate import cli as validate_cli  # the imports the helpers' start-up overlaps
    except HarnessError as e:  # a setting its modules read (versions.yaml, $RAY_KUEUE_VERSIONS): the gate cannot run
        sys.stderr.write(f"validate: {e}\n")
        sys.exit(2)
    validate_cli()
