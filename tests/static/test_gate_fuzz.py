"""Property: whatever a file of the repository turns into, the gate reports findings or says in
one line that it could not run; it never crashes (issue 15, item 1).

The repository's files are mutated at byte level (flip, insert, delete bytes; truncate) and at
YAML level (a scalar replaced by another type, a key deleted or duplicated, a line indented
wrongly). Seeded (derandomize) so CI sees the same cases every run; bounded in time:

- test_gate_survives_mutated_sources: a few hundred cases through every Python stage of the
  gate in-process (parsing, rules, capacity, Terraform, schema findings), with the render of
  the unmutated copy standing in for fluxbuild (one of its objects mutated too) and a stand-in
  for kubeconform, so that a case costs milliseconds, not the tools' second;
- test_gate_survives_mutations_end_to_end: fewer cases with the real renderer and kubeconform;
- test_cli_survives_mutations: the CLI as CI runs it, once, on a copy with several mutations.

In-process, the gate may return a report or raise a HarnessError (the CLI's exit 2); the
JSON report must be written for every report.
"""
from __future__ import annotations

import copy
import json
import random
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.core import HarnessError
from harness.core.versions import REPO_ROOT
from harness.gate import RULE_IDS, render_repository, validate_repository
from harness.gate import formats
from harness.gate import validate as gate_validate
from harness.testing import copy_config

pytestmark = pytest.mark.static
SUFFIXES = (".yaml", ".yml", ".tf", ".tfvars")
# No shrinking: it can take minutes on a gate run; the drawn case is printed as it is.
SETTINGS = dict(derandomize=True, database=None, deadline=None, print_blob=False, report_multiple_bugs=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

# Bytes a typo, an editor or a bad merge puts into YAML and HCL.
NASTY = [b":", b": ", b"\t", b"- ", b"{", b"}", b"[", b"]", b'"', b"'", b"\n", b"\n  ", b"#", b"&a ", b"*a", b"*b",
         b"!!binary ", b"!!python/object ", b"<<: *a", b"? ", b"|", b">", b"---\n", b"...\n", b"${X}", b"${", b"\xe9",
         b"\xff\xfe", b"\x00", b"%YAML 1.1\n", b"0x", b"1e400", b"~", b"=", b"\"${var.x}\""]
# Values a scalar is replaced by: every YAML type, and the quantities and names rules parse.
VALUES = [None, 0, -1, 1.5, 2**70, True, False, "", "x", "-1", "1e400", "NaN", "999999999999Gi", "500m", "${NOPE}",
          "../..", "/etc/passwd", "a\x00b", [], {}, ["a"], [{"a": 1}], {"a": 1}, {1: 2}]

NONSTRING_KEYS = ["1", "-1", "1.5", "1e400", "0x1f", "true", "yes", "~", "null", "18446744073709551615", "2001-01-01"]

IDENTITY = ("apiVersion", "kind", "metadata")


def config_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


# -- Mutations -----------------------------------------------------------------------------------------
def mutate_bytes(data, raw: bytes) -> bytes:
    op = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]), label="byte op")
    i = data.draw(st.integers(0, max(len(raw) - 1, 0)), label="at")
    if op == "flip" and raw:
        return raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255), label="xor")]) + raw[i + 1:]
    if op == "insert":
        return raw[:i] + data.draw(st.sampled_from(NASTY) | st.binary(min_size=1, max_size=6), label="bytes") + raw[i:]
    if op == "delete":
        return raw[:i] + raw[i + data.draw(st.integers(1, 40), label="n"):]
    return raw[:i]


def paths(node, prefix=()):
    """Every (container, key) pair of a parsed YAML value, depth first."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield node, k
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield node, i
            yield from paths(v, prefix + (i,))


def mutate_value(data, doc, keep=()) -> None:
    """In place: one value replaced by another type, or one key deleted (not the top-level keys in `keep`)."""
    if keep and isinstance(doc, dict):
        found = [pair for k, v in doc.items() if k not in keep for pair in [(doc, k), *paths(v)]]
    else:
        found = list(paths(doc))
    if not found:
        return
    container, key = data.draw(st.sampled_from(found), label="node")
    if data.draw(st.booleans(), label="delete") and isinstance(container, dict):
        del container[key]
    else:
        container[key] = copy.deepcopy(data.draw(st.sampled_from(VALUES), label="value"))


def mutate_yaml(data, text: str) -> str:
    lines = text.splitlines(keepends=True)
    op = data.draw(st.sampled_from(["retype", "duplicate-key", "indent", "key-retype"]), label="yaml op")
    if op == "retype":
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError:
            return text
        if docs:
            mutate_value(data, docs[data.draw(st.integers(0, len(docs) - 1), label="doc")])
        return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
    keyed = [i for i, ln in enumerate(lines) if re.match(r"\s*(- )?[\w./-]+:", ln)]
    if not keyed:
        return text
    i = data.draw(st.sampled_from(keyed), label="line")
    if op == "duplicate-key":
        return "".join(lines[:i + 1] + [lines[i].replace("- ", "  ", 1)] + lines[i + 1:])
    if op == "key-retype":  # a key YAML reads as no string: a number, a boolean, null
        key = data.draw(st.sampled_from(NONSTRING_KEYS), label="key")
        lines[i] = re.sub(r"^(\s*(- )?)[\w./-]+:", lambda m: f"{m.group(1)}{key}:", lines[i], count=1)
        return "".join(lines)
    shift = data.draw(st.sampled_from([-2, -1, 1, 3]), label="shift")
    lines[i] = " " * shift + lines[i] if shift > 0 else lines[i][min(-shift, len(lines[i]) - len(lines[i].lstrip(" "))):]
    return "".join(lines)


def mutate_file(data, root: Path, files: list[str]) -> tuple[str, bytes]:
    """Mutates one drawn file of `root`; returns its name and original bytes (to restore)."""
    rel = data.draw(st.sampled_from(files), label="file")
    path = root / rel
    raw = path.read_bytes()
    if rel.endswith((".yaml", ".yml")) and data.draw(st.booleans(), label="yaml level"):
        path.write_bytes(mutate_yaml(data, raw.decode()).encode())
    else:
        path.write_bytes(mutate_bytes(data, raw))
    return rel, raw


def check(root: Path, out: Path) -> None:
    """The in-process property: a report whose findings are well formed and whose JSON is written."""
    try:
        report = validate_repository(root)
    except HarnessError:
        return  # the CLI prints it in one line and exits 2
    for f in report.findings:
        assert isinstance(f.file, str) and f.file and f.rule in RULE_IDS, f
        assert f.line is None or (isinstance(f.line, int) and f.line >= 1), f
        f.text()
    formats.write_outputs([(formats.Output("json", str(out)), formats.to_json(report.findings))])
    assert json.loads(out.read_text())["count"] == len(report.findings)


# -- Properties ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fuzz_repo(tmp_path_factory) -> Path:
    return copy_config(tmp_path_factory.mktemp("fuzz") / "repo")


@pytest.fixture(scope="module")
def clean_render(fuzz_repo):
    return render_repository(fuzz_repo)


def test_gate_survives_mutated_sources(fuzz_repo, clean_render, tmp_path):
    files = config_files(fuzz_repo)

    @settings(max_examples=300, **SETTINGS)
    @given(st.data())
    def prop(data):
        builds, clusters = copy.deepcopy(clean_render)
        rendered = [o for b in builds for o in b.objects] + [o for c in clusters for b in c.flux for o in b.objects]
        if data.draw(st.booleans(), label="mutate a rendered object"):
            # kustomize fails a build whose objects lack apiVersion, kind or a metadata map with a name
            mutate_value(data, data.draw(st.sampled_from(rendered), label="object"), keep=IDENTITY)
        rel, raw = mutate_file(data, fuzz_repo, files)
        try:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(gate_validate, "render_repository", lambda root, **_: (builds, clusters))
                check(fuzz_repo, tmp_path / "f.json")
        finally:
            (fuzz_repo / rel).write_bytes(raw)

    prop()


def test_gate_survives_mutations_end_to_end(fuzz_repo, tmp_path):
    files = config_files(fuzz_repo)

    @settings(max_examples=40, **SETTINGS)
    @given(st.data())
    def prop(data):
        rel, raw = mutate_file(data, fuzz_repo, files)
        try:
            check(fuzz_repo, tmp_path / "f.json")
        finally:
            (fuzz_repo / rel).write_bytes(raw)

    prop()


def test_cli_survives_mutations(tmp_path):
    """Several files broken at once, seeded; the CLI's exit is 0, 1 or 2 and never a traceback."""
    root = copy_config(tmp_path / "repo")
    rng = random.Random(15)
    for rel in rng.sample(config_files(root), 6):
        raw = bytearray((root / rel).read_bytes())
        for _ in range(3):
            raw.insert(rng.randrange(len(raw) + 1), rng.choice(NASTY)[0])
        (root / rel).write_bytes(bytes(raw))
    out = tmp_path / "f.json"
    proc = subprocess.run([str(REPO_ROOT / "scripts" / "validate"), str(root), "--json", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1, 2), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    if proc.returncode in (0, 1):
        assert json.loads(out.read_text())["count"] == proc.stdout.count("\n    fix: ")
    else:
        assert proc.stderr.count("\n") == 1, proc.stderr
