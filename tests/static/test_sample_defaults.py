"""A value of workloads/defaults.yaml that the fields it fills refuse: one finding at defaults.yaml's line, for every
sample (on every cluster) that takes the default, as the same value in a samples entry's `vars` is one at the entry."""
from __future__ import annotations

import re

import pytest

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static


def test_a_wrong_typed_default_is_one_finding_at_defaults_yaml(repo_copy):
    defaults = repo_copy / "workloads/defaults.yaml"
    defaults.write_text(defaults.read_text().replace('NUM_WORKERS: "4"', "NUM_WORKERS: [4]"))
    line = defaults.read_text().splitlines().index("NUM_WORKERS: [4]") + 1
    for samples in (repo_copy / "clusters").glob("*/samples.yaml"):  # every entry takes the default
        samples.write_text(re.sub(r"\s*vars: \{NUM_WORKERS: \"\d+\"\}", "", samples.read_text()))
    found = validate_repository(repo_copy).findings
    assert [(f.rule, f.file, f.line) for f in found] == [("api-validation", "workloads/defaults.yaml", line)], "\n".join(f.text() for f in found)
    assert "dev-westus3" in found[0].context and "prod-eastus2" in found[0].context, found[0].text()
    assert "NUM_WORKERS in workloads/defaults.yaml" in found[0].hint, found[0].text()
