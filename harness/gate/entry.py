"""The console script ray-kueue-validate (scripts/validate): the gate's Go helpers start first, so that
their start-up (each loads a large binary and initialises the Kubernetes packages it links) runs on
the other core while Python imports the gate; then harness.gate.validate's command line runs."""
from __future__ import annotations

from harness.gate.helper import prestart


def cli() -> None:
    prestart("fluxbuild", "kubecheck")
    from harness.gate.validate import cli as validate_cli  # the imports the helpers' start-up overlaps

    validate_cli()
