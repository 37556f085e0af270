"""The default values of a chart the gate renders (its values.yaml), read once per run for every rule that asks."""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

from harness.gate.sources import as_map, parse_yaml


@functools.lru_cache(maxsize=None)
def chart_defaults(chart: str) -> dict | None:
    """A chart directory's values.yaml (libyaml's loader: the Kueue chart's is long); None when it cannot be read.
    Shared, not to be changed."""
    try:
        return as_map(parse_yaml((Path(chart) / "values.yaml").read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError):
        return None
