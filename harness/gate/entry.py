"""The console script ray-kueue-validate (scripts/validate): the gate's Go helpers start first, so that
their start-up (each loads a large binary and initialises the Kubernetes packages it links) and fluxbuild's build of the
plain kustomization directories run on the other core while Python imports the gate; the Flux rounds of the render
start next (render.ahead), while the rules are imported; then harness.gate.validate's command line runs."""
from __future__ import annotations

import sys
from pathlib import Path

from harness.core import HarnessError
from harness.gate.helper import prestart


def cli() -> None:
    try:
        root = _repository(sys.argv[1:])
        prestart("fluxbuild", "kubecheck", prerender=root)
        from harness.gate import render
        ahead = render.ahead(root)  # the Flux rounds render while the rules are imported
        from harness.gate.validate import cli as validate_cli  # the imports the helpers' start-up overlaps
    except HarnessError as e:  # a setting its modules read (versions.yaml, $RAY_KUEUE_VERSIONS): the gate cannot run
        sys.stderr.write(f"validate: {e}\n")
        sys.exit(2)
    validate_cli(ahead)


def _repository(args: list[str]) -> Path:
    """The repository the command line most likely names, for the helper to start building before the gate has parsed
    it: the first argument that is an existing directory (report paths are files), else the default, the working
    directory. A wrong guess costs a build nobody asks for, never a result: the helper answers only a request for the
    same repository."""
    return next((Path(a).resolve() for a in args if not a.startswith("-") and Path(a).is_dir()), Path(".").resolve())
