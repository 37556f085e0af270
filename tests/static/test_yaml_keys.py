"""Mapping keys YAML reads as no string, as sigs.k8s.io/yaml (kubectl, Flux) and kustomize treat them (harness/gate/yaml_keys.py)."""
from __future__ import annotations

import pytest
import yaml

from harness.gate.sources import SourceError, load_yaml_all, parse_yaml
from harness.gate.yaml_keys import loaded_key, nonstring_keys, plain_nonstring

pytestmark = pytest.mark.static


def test_keys_become_the_strings_sigs_k8s_yaml_makes_of_them():
    # strconv.Itoa, "true"/"false", strconv.FormatFloat(f, 'g', -1, 32) (checked against Go: 1.2345679e+08), a date as written
    doc = parse_yaml("a:\n  1: i\n  true: b\n  1.5: f\n  123456789.0: g\n  2001-01-01: d\n  <<: {0x10: h}\n")
    assert doc == {"a": {"1": "i", "true": "b", "1.5": "f", "1.2345679e+08": "g", "2001-01-01": "d", "16": "h"}}
    assert parse_yaml("{1: a, true: b}") == {"1": "a", "true": "b"}  # two keys, as in go-yaml (Python's 1 == True)


@pytest.mark.parametrize("key", ["~", "null", "18446744073709551615"])
def test_a_key_sigs_k8s_yaml_refuses_is_a_yaml_finding_at_its_line(tmp_path, key):
    (tmp_path / "x.yaml").write_text(f"a: 1\nb:\n  {key}: x\n")
    with pytest.raises(SourceError) as err:
        load_yaml_all(tmp_path / "x.yaml", tmp_path)
    finding = err.value.finding
    assert (finding.file, finding.line, finding.rule) == ("x.yaml", 3, "yaml-syntax"), finding
    assert "quote the key" in finding.hint


def test_kustomize_fails_on_nested_keys_yaml_1_2_reads_as_no_string():
    text = "1: top\na:\n  1: x\n  yes: s\n  '2': q\n  b: [{false: y}]\n---\nc: {~: n, 1.5: f}\n"
    assert nonstring_keys(text) == [(3, "1"), (6, "false"), (8, "1.5"), (8, "~")]


def test_a_transformer_key_fails_when_its_plain_spelling_is_no_string():
    """kustomize's label and annotation transformers write a key plain: what matters is how go-yaml v3 reads it so."""
    assert all(plain_nonstring(k) for k in ("1", "1.5", "true", "False", "~", "null", ""))
    assert not any(plain_nonstring(k) for k in ("yes", "on", "app", "team-1", "1a", "1:20"))
    keys = yaml.compose("{yes: a, on: b, 0x10: c, '1': d, \"yes\": e, team: f}").value
    assert [loaded_key(k) for k, _ in keys] == ["true", "true", "16", "1", "yes", "team"]  # the kustomization loader's strings
