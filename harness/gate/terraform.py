"""terraform/ as the gate reads it: python-hcl2's parse of each file (cached by content), the
`resource` blocks, variables and locals, each cluster's tfvars, and `Scope`, which evaluates the
small subset of HCL expressions the pool and identity settings use."""
from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from harness.core import HarnessError, atomic_write, cache_root

TERRAFORM_DIR = "terraform"
TFVARS_DIR = f"{TERRAFORM_DIR}/clusters"


class TerraformError(HarnessError, ValueError):
    pass


def _hcl_options():
    import hcl2

    return hcl2.SerializationOptions(strip_string_quotes=True, with_comments=False, explicit_blocks=False)


def parse_hcl(path: Path) -> dict:
    """python-hcl2's reading of a file, cached by content: its lark parser takes ~0.1 s a file,
    which would make the Terraform side the slowest part of the static gate."""
    text = read_tf(path)
    key = hashlib.sha256(f"{_hcl_version()}\0{text}".encode()).hexdigest()
    cached = cache_root() / "hcl" / f"{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    import hcl2  # lark takes a tenth of a second to import; only a cache miss needs it
    try:
        parsed = hcl2.loads(text, serialization_options=_hcl_options())
    except Exception as err:  # lark raises several exception types
        raise TerraformError(f"{path.name}: not valid HCL: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    atomic_write(cached, json.dumps(parsed))
    return parsed


def read_tf(path: Path) -> str:
    """A Terraform file's text; TerraformError when it cannot be read or is not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as err:
        raise TerraformError(f"{path.name}: cannot be read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise TerraformError(f"{path.name}: not UTF-8 (byte 0x{err.object[err.start]:02x}); Terraform reads only UTF-8") from None


@lru_cache(maxsize=1)
def _hcl_version() -> str:
    from importlib.metadata import version

    return version("python-hcl2")


@dataclass
class Block:
    """One `resource`/`data` block: its type, name, file, line and raw body."""
    type: str
    name: str
    file: str
    line: int | None
    body: dict

    @property
    def address(self) -> str:
        return f"{self.type}.{self.name}"


@dataclass
class TerraformConfig:
    root: Path
    variables: dict[str, dict] = field(default_factory=dict)
    locals: dict[str, object] = field(default_factory=dict)
    resources: list[Block] = field(default_factory=list)
    variable_files: dict[str, str] = field(default_factory=dict)  # variable -> file declaring it

    @classmethod
    def load(cls, root: Path) -> "TerraformConfig":
        cfg = cls(root)
        tf_dir = root / TERRAFORM_DIR
        for path in sorted(tf_dir.glob("*.tf")):
            rel = path.relative_to(root).as_posix()
            doc = parse_hcl(path)
            text = read_tf(path)
            for entry in doc.get("variable") or []:
                cfg.variables.update(entry)
                cfg.variable_files.update({name: rel for name in entry})
            for entry in doc.get("locals") or []:
                cfg.locals.update(entry)
            for entry in doc.get("resource") or []:
                for rtype, named in entry.items():
                    for rname, body in named.items():
                        cfg.resources.append(Block(rtype, rname, rel, _block_line(text, rtype, rname), body))
        return cfg

    def of_type(self, rtype: str) -> list[Block]:
        return [b for b in self.resources if b.type == rtype]

    def defaults(self) -> dict[str, object]:
        return {k: v.get("default") for k, v in self.variables.items() if isinstance(v, dict)}


def _block_line(text: str, rtype: str, rname: str) -> int | None:
    m = re.search(rf'^[ \t]*resource\s+"{re.escape(rtype)}"\s+"{re.escape(rname)}"', text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None


def load_tfvars(path: Path) -> dict:
    return parse_hcl(path)


# -- Where a value is written (for findings that name the file and line of a setting) ------------
def _line_of(text: str, pattern: str, start: int = 0, block: bool = False) -> int | None:
    """1-based line of the first line matching `pattern` at or after line `start` (0-based);
    with `block`, only inside the top-level block that starts there (up to the `}` in column 1)."""
    lines = text.splitlines()
    for i in range(start, len(lines)):
        if block and i > start and lines[i].startswith("}"):
            return None
        if re.match(pattern, lines[i]):
            return i + 1
    return None


def attribute_line(cfg: TerraformConfig, block: Block, name: str) -> int | None:
    """Line of `name = ...` inside `block` (nested blocks included)."""
    if block.line is None:
        return None
    return _line_of(read_tf(cfg.root / block.file), rf"\s*{re.escape(name)}\s*=", block.line - 1, block=True)


def variable_origin(cfg: TerraformConfig, name: str, tfvars_rel: str | None) -> tuple[str, int | None, bool]:
    """(file, line, set_in_tfvars) where variable `name` gets its value: the tfvars line that sets
    it, else the `default` line of its declaration."""
    if tfvars_rel:
        path = cfg.root / tfvars_rel
        line = _line_of(read_tf(path), rf"\s*{re.escape(name)}\s*=") if path.is_file() else None
        if line:
            return tfvars_rel, line, True
    rel = cfg.variable_files.get(name)
    if rel is None:
        return (tfvars_rel or TERRAFORM_DIR), None, False
    text = read_tf(cfg.root / rel)
    decl = _line_of(text, rf'\s*variable\s+"{re.escape(name)}"')
    default = _line_of(text, r"\s*default\s*=", decl - 1, block=True) if decl else None
    return rel, default or decl, False


def references(expr) -> list[str]:
    """The variables an HCL expression string refers to (var.NAME), in order."""
    return re.findall(r"\bvar\.([A-Za-z_][A-Za-z0-9_-]*)", expr) if isinstance(expr, str) else []


def provider_version(root: Path, provider: str = "azurerm") -> str | None:
    """The provider version terraform/.terraform.lock.hcl records, else the constraint in
    required_providers (e.g. "~> 4.0"); None when neither names it."""
    lock = root / TERRAFORM_DIR / ".terraform.lock.hcl"
    if lock.is_file():
        for entry in parse_hcl(lock).get("provider") or []:
            for address, body in entry.items():
                if address.rsplit("/", 1)[-1] == provider and isinstance(body, dict) and body.get("version"):
                    return str(body["version"])
    for path in sorted((root / TERRAFORM_DIR).glob("*.tf")):
        for block in parse_hcl(path).get("terraform") or []:
            for req in block.get("required_providers") or []:
                spec = req.get(provider) if isinstance(req, dict) else None
                if isinstance(spec, dict) and spec.get("version"):
                    return str(spec["version"])
    return None


class Scope:
    """Evaluates the small subset of HCL expressions the pool and identity settings use:
    var./local. references, literals, comparisons, && || !, the ?: conditional and "${}" templates."""

    def __init__(self, cfg: TerraformConfig, values: dict):
        self.cfg = cfg
        self.values = dict(values)
        self._stack: set[str] = set()

    def resolve(self, value):
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, str) or "${" not in value:
            return value
        if value.startswith("${") and value.endswith("}") and value.count("${") == 1:
            return self.evaluate(value[2:-1])
        return re.sub(r"\$\{([^{}]*)\}", lambda m: str(self.evaluate(m.group(1))), value)

    def lookup(self, kind: str, name: str):
        if kind == "var":
            decl = self.cfg.variables.get(name)
            if not isinstance(decl, dict):
                raise TerraformError(f"variable {name!r} is not declared in {TERRAFORM_DIR}/*.tf")
            if name in self.values:
                return self.values[name]
            if "default" not in decl:
                raise TerraformError(f"variable {name!r} has no default and the tfvars file does not set it")
            return decl["default"]
        key = f"local.{name}"
        if key in self._stack or name not in self.cfg.locals:
            raise TerraformError(f"local {name!r} is not defined (or refers to itself)")
        self._stack.add(key)
        try:
            return self.resolve(self.cfg.locals[name])
        finally:
            self._stack.discard(key)

    def evaluate(self, expr: str):
        expr = expr.strip()
        q = _split_conditional(expr)
        if q:
            cond, yes, no = q
            return self.evaluate(yes) if self.evaluate(cond) else self.evaluate(no)
        py = re.sub(r"\b(var|local)\.([A-Za-z_][A-Za-z0-9_-]*)", lambda m: f"__ref({m.group(1)!r}, {m.group(2)!r})", expr)
        py = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", py)))
        py = py.replace("&&", " and ").replace("||", " or ")
        py = re.sub(r"!(?!=)", " not ", py)
        try:
            tree = ast.parse(py, mode="eval")
        except SyntaxError:
            raise TerraformError(f"cannot evaluate {expr!r} (only var./local. references, literals and ?: are supported here)") from None
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == "__ref"):
                raise TerraformError(f"cannot evaluate {expr!r}: function calls are not supported in pool, identity or path settings")
            if isinstance(node, (ast.Attribute, ast.Subscript, ast.Lambda)):
                raise TerraformError(f"cannot evaluate {expr!r}: only var./local. references are supported")
        try:
            return eval(compile(tree, "<hcl>", "eval"), {"__builtins__": {}, "__ref": self.lookup})  # noqa: S307 - AST checked above
        except (TypeError, ValueError, ArithmeticError) as err:  # e.g. a tfvars string compared with a number
            raise TerraformError(f"cannot evaluate {expr!r}: {err}") from None


def _split_conditional(expr: str) -> tuple[str, str, str] | None:
    """Splits `a ? b : c` at the top level (outside quotes, brackets and ${})."""
    depth, quote, qpos = 0, False, None
    i = 0
    while i < len(expr):
        ch = expr[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == "?" and qpos is None:
            qpos = i
        elif depth == 0 and ch == ":" and qpos is not None:
            # the first ':' at depth 0 after '?' that is not part of a nested conditional
            rest = expr[qpos + 1:i]
            if rest.count("?") == rest.count(":"):
                return expr[:qpos], expr[qpos + 1:i], expr[i + 1:]
        i += 1
    return None
