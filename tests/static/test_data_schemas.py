"""The repository's own data files follow their JSON Schemas (harness/schemas-for-data):
versions.yaml, harness/gate/sku.yaml, the report's report.json, the gate's JSON report and the
gate's configuration (the examples in docs/)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from harness.core.versions import REPO_ROOT

pytestmark = pytest.mark.static

SCHEMAS = REPO_ROOT / "harness" / "schemas-for-data"
DOCUMENTS = {
    "versions": REPO_ROOT / "versions.yaml",
    "sku": REPO_ROOT / "harness" / "gate" / "sku.yaml",
    "report": REPO_ROOT / "docs" / "example-report" / "report.json",
    "validate": REPO_ROOT / "docs" / "example-gate-report" / "validate.json",
    "gate-config": REPO_ROOT / "docs" / "gate-config.example.yaml",
}


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _load(path: Path):
    return json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())


def _errors(name: str, doc) -> list[str]:
    return [f"{e.json_path}: {e.message}" for e in sorted(_validator(name).iter_errors(doc), key=lambda e: e.json_path)]


def test_every_schema_has_a_document():
    assert {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")} == set(DOCUMENTS)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_document_follows_its_schema(name):
    errors = _errors(name, _load(DOCUMENTS[name]))
    assert not errors, f"{DOCUMENTS[name].relative_to(REPO_ROOT)} (schema {name}.schema.json):\n" + "\n".join(errors)


def _broken(name: str, doc):
    """One mistake each schema must catch, the kind a hand edit makes."""
    doc = copy.deepcopy(doc)
    if name == "versions":
        doc["kueue"]["version"] = "0.17.1"            # no leading v: not a module version
        doc["flux"]["source-controller"].pop("skew")  # a replace nobody explained
        doc["kind"]["node_image"] = "kindest/node:v1.35.8"  # a tag without its digest
        doc["kuberay"]["candidates"][0].pop("chart")  # a candidate without the chart that ships it
    elif name == "sku":
        sku = next(s for s in doc["skus"].values() if s["gpus"])
        sku.pop("gpu")                                # a GPU size without its GPU model
        sku["allocatable"]["memory"] = "1.9 TB"      # not a quantity
    elif name == "gate-config":
        doc["disable"][0].pop("reason")              # a rule turned off says why
        doc["terraform"] = {"dir": "infra"}          # not a key of terraform
    elif name == "validate":
        doc["findings"][0]["severity"] = "fatal"     # error or warning
        doc["findings"][1].pop("hint")               # every finding says how to fix it
    else:
        doc["scenarios"][0]["ref"] = "main"          # refs are "base" or "head"
        doc["clusters"][0]["rows"][0]["status"] = "edited"
    return doc


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_schema_catches_a_broken_document(name):
    errors = _errors(name, _broken(name, _load(DOCUMENTS[name])))
    assert len(errors) == (4 if name == "versions" else 2), errors
