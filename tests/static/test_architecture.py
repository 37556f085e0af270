"""The harness's architecture, checked (issue 14): the layers contract, public APIs between
packages, no private names across modules, one module that opens watches, short modules."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core import REPO_ROOT

pytestmark = pytest.mark.static

HARNESS = REPO_ROOT / "harness"
MAX_LINES = 400
WATCH_MODULE = "harness/k8s/watch.py"  # the one list-then-watch loop


def _modules(*roots: Path) -> list[Path]:
    return sorted(p for r in roots for p in r.rglob("*.py") if "__pycache__" not in p.parts)


def _package(path: Path) -> str | None:
    rel = path.relative_to(REPO_ROOT).parts
    return rel[1] if rel[0] == "harness" and len(rel) > 2 else None


def _imports(path: Path):
    """(line, module, names) of every `from X import a, b` in the file, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [a.name for a in node.names]


def test_layers_contract_is_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--config", str(REPO_ROOT / "pyproject.toml")], cwd=REPO_ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "broken" in proc.stdout and "0 broken" in proc.stdout, proc.stdout[-2000:]


def test_contract_covers_every_subpackage():
    import tomllib

    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layered = {name.strip() for c in config["contracts"] if c["type"] == "layers"
               for layer in c["layers"] for name in layer.split("|")}
    packages = {f"harness.{p.name}" for p in HARNESS.iterdir() if (p / "__init__.py").exists()}
    assert packages <= layered, f"subpackages outside the layers contract: {sorted(packages - layered)}"


def test_packages_import_each_other_only_through_their_public_api():
    problems = []
    for path in _modules(HARNESS):
        own = _package(path)
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != "harness" or len(parts) < 2 or parts[1] == own:
                continue
            rel = f"{path.relative_to(REPO_ROOT)}:{line}"
            if len(parts) > 2:
                problems.append(f"{rel}: from {module} import ... (import from harness.{parts[1]} instead)")
                continue
            public = set(getattr(__import__(module, fromlist=["__all__"]), "__all__", ()))
            problems += [f"{rel}: {module}.{n} is not in its __all__" for n in names if n not in public]
    assert not problems, "\n".join(problems)


def _private_uses(path: Path) -> list[str]:
    """Private names of harness modules this file imports or reaches through an imported module."""
    tree = ast.parse(path.read_text(), str(path))
    bound, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            bound |= {a.asname or a.name for a in node.names if a.name.startswith("harness")}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in bound):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return [f"{path.relative_to(REPO_ROOT)}:{f}" for f in found]


def test_no_private_name_is_used_from_another_module():
    problems = [f for p in _modules(HARNESS, REPO_ROOT / "tests") for f in _private_uses(p)]
    assert not problems, "\n".join(problems)


def test_every_public_api_name_exists():
    missing = []
    for init in sorted(HARNESS.glob("*/__init__.py")):
        module = __import__(f"harness.{init.parent.name}", fromlist=["__all__"])
        missing += [f"harness.{init.parent.name}.{n}" for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
        assert (module.__doc__ or "").strip(), f"{init.relative_to(REPO_ROOT)} has no docstring"
    assert not missing, missing


def test_no_module_is_longer_than_the_limit():
    long = {str(p.relative_to(REPO_ROOT)): n for p in _modules(HARNESS)
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_only_one_module_opens_watches():
    openers = []
    for path in _modules(HARNESS, REPO_ROOT / "tests"):
        rel = str(path.relative_to(REPO_ROOT))
        text = path.read_text()
        if rel not in (WATCH_MODULE, "tests/static/test_architecture.py") and ("watch.Watch(" in text or ".watch(" in text or "from kubernetes import watch" in text):
            openers.append(rel)
    assert not openers, f"watches opened outside {WATCH_MODULE}: {openers}"


def test_every_harness_error_derives_from_the_one_base_class():
    from harness.core import HarnessError

    strays = []
    for path in _modules(HARNESS):
        module = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error"):
                cls = getattr(__import__(module, fromlist=[node.name]), node.name)
                if not issubclass(cls, HarnessError):
                    strays.append(f"{module}.{node.name}")
    assert not strays, f"errors the CLIs would not catch as HarnessError: {strays}"
