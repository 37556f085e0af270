"""terraform/ as Terraform reads it. tools/tfeval loads the module with Terraform's own loader and
evaluates every argument with Terraform's evaluator and function table (HCL v2, cty); this module
holds what it answers: per set of variable values (the defaults, a cluster's tfvars), each resource
instance (count / for_each expanded) with its arguments' values, the file and line where each is
written, what it refers to (and which resource attributes it reads) and, for what only `apply` knows, why it is unknown.

- `TerraformConfig.load(root)`: the module with the variable defaults; TerraformError (file, line)
  when it does not parse. `cfg.evaluate(values)`: an `Evaluation` with those variable values.
- `load_tfvars(path)`: a tfvars file's values (a dict), with the line of each in `.lines`.
- Values that are unknown before apply are never guessed: `Value.get()` raises TerraformError
  saying what makes them unknown (a resource attribute, a variable nobody set).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from harness import toolchain as tools
from harness.core import HarnessError

TERRAFORM_DIR = "terraform"
TFVARS_DIR = f"{TERRAFORM_DIR}/clusters"
LOCK_FILE = f"{TERRAFORM_DIR}/.terraform.lock.hcl"
TFVARS_SUFFIXES = (".tfvars", ".tfvars.json")  # a cluster's values file: HCL, or JSON (Terraform reads both with -var-file)


def tfvars_paths(directory: Path) -> list[Path]:
    """The values files of `directory` (<name>.tfvars and <name>.tfvars.json), by name."""
    return sorted(p for p in Path(directory).glob("*.tfvars*") if p.name.endswith(TFVARS_SUFFIXES) and p.is_file())


def tfvars_rel(root: Path | None, cluster: str, directory: str = TFVARS_DIR) -> str:
    """The cluster's values file, repository-relative: <cluster>.tfvars, or (`root` given) <cluster>.tfvars.json when only that exists."""
    rel = f"{directory}/{cluster}{TFVARS_SUFFIXES[0]}"
    json_rel = f"{directory}/{cluster}{TFVARS_SUFFIXES[1]}"
    return json_rel if root is not None and not (Path(root) / rel).exists() and (Path(root) / json_rel).is_file() else rel


def tfvars_cluster(path: str | Path) -> str | None:
    """The cluster a values file is named after (<name>.tfvars or <name>.tfvars.json); None for another file."""
    name = Path(path).name
    return next((name.removesuffix(s) for s in TFVARS_SUFFIXES[::-1] if name.endswith(s)), None)


class TerraformError(HarnessError, ValueError):
    """A Terraform file or value that cannot be read, with the file and line HCL or Terraform names."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None):
        super().__init__(message)
        self.file, self.line = file, line


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error" or "warning"
    summary: str
    detail: str
    file: str | None
    line: int | None
    variable: str | None = None  # the name a values file sets that terraform/ does not declare

    @classmethod
    def of(cls, d: dict) -> "Diagnostic":
        return cls(d.get("severity", "error"), d.get("summary", ""), d.get("detail", ""), d.get("file") or None, d.get("line") or None,
                   d.get("variable") or None)

    def text(self) -> str:
        return f"{self.summary}: {self.detail}" if self.detail else self.summary


@dataclass(frozen=True)
class Value:
    """One argument as Terraform evaluates it: the value (unknown parts None), where it is written,
    the expression as written, the addresses it refers to (var.x, local.y, type.name)."""
    value: object
    known: bool
    file: str
    line: int | None
    text: str
    refs: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()  # what makes it unknown before apply
    error: str = ""  # Terraform's diagnostic when it does not evaluate
    reads: tuple[str, ...] = ()  # type.name.attribute it reads, through locals too
    inputs: tuple[str, ...] = ()  # the input variables it depends on, through locals too
    passes: str = ""  # the variable it is (var.x; in a module, through the call's argument): tfeval's

    @classmethod
    def of(cls, d: dict) -> "Value":
        return cls(d.get("value"), bool(d.get("known")), d.get("file", ""), d.get("line") or None, d.get("text", ""),
                   *(tuple(d.get(k) or ()) for k in ("refs", "unknown")), d.get("error") or "", *(tuple(d.get(k) or ()) for k in ("reads", "inputs")), d.get("passes") or "")

    def get(self, what: str = "value"):
        """The value; TerraformError (at this argument's line) when it has an error or is not known."""
        if self.error:
            raise TerraformError(f"{what} ({self.text}): {self.error}", self.file, self.line)
        if not self.known:
            why = "; ".join(self.unknown) or "it depends on values known only after apply"
            raise TerraformError(f"{what} ({self.text}) is not known before apply: {why}", self.file, self.line)
        return self.value

    @property
    def variables(self) -> list[str]:
        """The input variables the expression names directly, in order."""
        return [r.split(".", 1)[1] for r in self.refs if r.startswith("var.")]


@dataclass(frozen=True)
class Body:
    file: str
    line: int | None
    attrs: dict[str, Value]
    blocks: dict[str, list["Body"]]

    @classmethod
    def of(cls, d: dict) -> "Body":
        return cls(d.get("file", ""), d.get("line") or None, {k: Value.of(v) for k, v in (d.get("attrs") or {}).items()},
                   {k: [Body.of(b) for b in bs] for k, bs in (d.get("blocks") or {}).items()})

    def __contains__(self, name: str) -> bool:
        return name in self.attrs

    def get(self, name: str) -> Value | None:
        return self.attrs.get(name)

    def value(self, name: str, default=None, what: str | None = None):
        """The known value of argument `name` (default when it is not set)."""
        v = self.attrs.get(name)
        return default if v is None else v.get(what or name)

    def nested(self, block_type: str) -> list["Body"]:
        return self.blocks.get(block_type, [])


@dataclass(frozen=True)
class Block:
    """One resource instance; a resource whose count / for_each leaves none is one Block with
    `absent` set and the body evaluated with count.index / each unknown."""
    type: str
    name: str
    file: str
    line: int | None
    body: Body
    key: object = None  # count index or for_each key
    count: Value | None = None  # the count meta-argument, when set
    for_each: Value | None = None
    absent: bool = False
    keyed: bool = False  # the address carries the key (for_each, or count above 1)
    module: str = ""  # the module call it is declared in (tools/tfeval reads local modules called once), "" in the root module

    @property
    def address(self) -> str:
        base = f"{'module.' + self.module + '.' if self.module else ''}{self.type}.{self.name}"
        return f'{base}[{json.dumps(self.key) if isinstance(self.key, str) else self.key}]' if self.keyed else base

    @property
    def meta(self) -> Value | None:
        """The meta-argument that says how many instances there are (count or for_each)."""
        return self.count or self.for_each


@dataclass
class Evaluation:
    """The module evaluated with one set of variable values."""
    variables: dict[str, dict]  # name -> {file, line, default_line, has_default, value, known}
    resources: list[Block]
    diagnostics: list[Diagnostic]
    values: dict  # the variable values given (tfvars)

    def of_type(self, rtype: str) -> list[Block]:
        return [b for b in self.resources if b.type == rtype]

    def instance(self, address: str) -> Block | None:
        """The resource instance at `address` in this evaluation."""
        return next((b for b in self.resources if b.address == address), None)

    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def variable(self, name: str):
        """The value variable `name` has here (None when unset or undeclared)."""
        return (self.variables.get(name) or {}).get("value")


def _blocks(resources: list[dict]) -> list[Block]:
    out = []
    for r in resources:
        count = Value.of(r["count"]) if r.get("count") else None
        for_each = Value.of(r["for_each"]) if r.get("for_each") else None
        instances = r.get("instances") or []
        keyed = for_each is not None or len(instances) > 1
        base = dict(type=r["type"], name=r["name"], file=r["file"], line=r.get("line") or None, count=count, for_each=for_each, keyed=keyed,
                    module=r.get("module") or "")
        if not instances:
            out.append(Block(body=Body.of(r.get("template") or {}), absent=True, **base))
        out += [Block(body=Body.of(i["body"]), key=i.get("key"), **base) for i in instances]
    return out


_BLOCKS: dict[int, tuple[dict, list[Block]]] = {}  # by id of the answer (kept with it)


def _blocks_of(answer: dict) -> list[Block]:
    """The resource instances of one tfeval answer, made once (several rules ask for the same; Blocks are frozen)."""
    made = _BLOCKS.get(id(answer))
    if made is None or made[0] is not answer:
        made = _BLOCKS[id(answer)] = (answer, _blocks(answer.get("resources") or []))
    return made[1]


class _Helper:
    """The one tools/tfeval process of this run and its answers, by request and file state. A request asked while
    the same one is on its way (the read-ahead below) waits for that answer instead of asking twice."""

    def __init__(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TF_VAR_")}  # the gate reads the files, not the shell
        self.process = tools.LineProcess("tfeval", lambda: [str(tools.ensure("tfeval")["tfeval"].path())], TerraformError, env=env)
        self.cache: dict[str, Future] = {}
        self._lock = threading.Lock()

    def ask(self, request: dict, files: list[Path]) -> dict:
        state = [(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files if p.exists()]
        key = hashlib.sha256(json.dumps([request, state], sort_keys=True, default=str).encode()).hexdigest()
        with self._lock:
            mine = key not in self.cache
            answer = self.cache.setdefault(key, Future())
        if mine:
            try:
                answer.set_result(self.process.request(request))
            except BaseException as err:
                with self._lock:
                    del self.cache[key]  # asked again, the process is started again
                answer.set_exception(err)
        return answer.result()


@functools.cache
def helper() -> _Helper:
    return _Helper()


def start(root: Path | None = None, tfvars_dir: str = TFVARS_DIR) -> None:
    """Starts tools/tfeval now (building it on first use), so that its start-up overlaps other work; with `root`, it
    also reads ahead what the rules will ask of that checkout (the module, each cluster's tfvars and the module with
    them): tfeval answers one request at a time, and these answers are then waiting when the rules ask."""
    helper().process.start()
    if root is not None:
        threading.Thread(target=_read_ahead, args=(Path(root).resolve(), tfvars_dir), daemon=True, name="tfeval-ahead").start()


def _read_ahead(root: Path, tfvars_dir: str) -> None:
    try:  # what fails here, the rules ask again and report
        cfg = TerraformConfig.load(root)
        for path in tfvars_paths(root / tfvars_dir):
            with contextlib.suppress(TerraformError):
                cfg.evaluate(load_tfvars(path, root))
    except (HarnessError, OSError):
        pass


def _ask(request: dict, files: list[Path]) -> dict:
    return helper().ask(request, files)


def _first_error(answer: dict, what: str) -> TerraformError | None:
    errors = [Diagnostic.of(d) for d in answer.get("diagnostics") or [] if d.get("severity") == "error"]
    e = errors[0] if errors else None
    return e and TerraformError(e.text() if e.file else f"{what}: {e.text()}", e.file or what, e.line)


class TerraformConfig:
    """terraform/ of a checkout: its variables and, with their defaults, its resources."""

    def __init__(self, root: Path, answer: dict):
        self.root = root
        self.defaults = self._evaluation(answer, {})
        self.variables, self.resources = self.defaults.variables, self.defaults.resources
        self.providers: dict[str, dict] = answer.get("providers") or {}
        self.modules: list[dict] = answer.get("modules") or []  # the root module's module calls (tools/tfeval modules.go; harness.gate.tf_modules)

    @classmethod
    def load(cls, root: Path) -> "TerraformConfig":
        root = Path(root).resolve()
        answer = _ask(cls._request(root, {}), cls._files(root))
        if not answer.get("loaded"):  # syntax errors: nothing was evaluated
            raise _first_error(answer, TERRAFORM_DIR) or TerraformError(f"{TERRAFORM_DIR}: Terraform could not load the module")
        return cls(root, answer)

    @staticmethod
    def _request(root: Path, values: dict) -> dict:
        """A Tfvars as it was read is passed as the file (so that Terraform's diagnostics name its lines), anything else as -var values."""
        if isinstance(values, Tfvars) and (root / values.file).is_file():
            return {"op": "eval", "root": str(root), "dir": TERRAFORM_DIR, "var_files": [values.file], "vars": {}, "lock": LOCK_FILE}
        return {"op": "eval", "root": str(root), "dir": TERRAFORM_DIR, "vars": dict(values), "lock": LOCK_FILE}

    @staticmethod
    def _files(root: Path) -> list[Path]:
        d = root / TERRAFORM_DIR
        return sorted(d.rglob("*.tf")) + sorted(d.glob("*.auto.tfvars")) + [d / "terraform.tfvars", root / LOCK_FILE]

    def _evaluation(self, answer: dict, values: dict) -> Evaluation:
        return Evaluation(answer.get("variables") or {}, list(_blocks_of(answer)),
                          [Diagnostic.of(d) for d in answer.get("diagnostics") or []], dict(values))

    def evaluate(self, values: dict | None = None) -> Evaluation:
        """The module with these variable values (a tfvars file's, over the defaults)."""
        if not values:
            return self.defaults
        files = self._files(self.root) + ([self.root / values.file] if isinstance(values, Tfvars) else [])
        answer = _ask(self._request(self.root, values), files)
        if not answer.get("loaded"):
            raise _first_error(answer, TERRAFORM_DIR) or TerraformError(f"{TERRAFORM_DIR}: Terraform could not load the module")
        return self._evaluation(answer, values)

    def of_type(self, rtype: str) -> list[Block]:
        return self.defaults.of_type(rtype)


class Tfvars(dict):
    """A tfvars file's values; `lines` gives the line that sets each, `file` the file (repository-relative)."""

    def __init__(self, values: dict, lines: dict[str, int], file: str):
        super().__init__(values)
        self.lines, self.file = lines, file


def load_tfvars(path: Path, root: Path | None = None) -> Tfvars:
    """A tfvars file read by HCL (literal values only, as Terraform reads it); TerraformError with
    the file and line of the first problem."""
    path = Path(path).resolve()
    root = Path(root).resolve() if root else _repo_of(path)
    rel = path.relative_to(root).as_posix()
    if not path.is_file():
        raise TerraformError(f"{rel}: cannot be read: no such file", rel)
    answer = _ask({"op": "tfvars", "root": str(root), "path": rel}, [path])
    err = _first_error(answer, rel)
    if err:
        raise err
    values = answer.get("values") or {}
    unknown = sorted(k for k, v in values.items() if not v.get("known"))
    if unknown:
        raise TerraformError(f"{rel}: {unknown[0]} is not a literal value", rel, values[unknown[0]].get("line"))
    return Tfvars({k: v.get("value") for k, v in values.items()}, {k: v.get("line") for k, v in values.items()}, rel)


def _repo_of(path: Path) -> Path:
    """The checkout a file under terraform/ belongs to (the directory holding terraform/)."""
    for parent in path.parents:
        if parent.name == TERRAFORM_DIR:
            return parent.parent
    return path.parent


# -- Where a value is written (for findings that name the file and line of a setting) ------------
def deciding_variable(v: Value | None, meta: bool = False, chosen=()) -> str | None:
    """The variable whose value a setting is: `x = var.y`, or (`meta`) a count / for_each decided by one variable: the only
    one it depends on (through locals too), or the only one of those the cluster sets (`chosen`, its tfvars' names)."""
    if v is not None and (v.passes or (v.variables and v.text.strip() == f"var.{v.variables[0]}")):
        return v.passes or v.variables[0]
    inputs = list(dict.fromkeys(v.inputs or v.variables)) if meta and v is not None else []
    decided = inputs if len(inputs) == 1 else [name for name in inputs if name in chosen]
    return decided[0] if len(decided) == 1 else None


def setting_origin(cfg: TerraformConfig, v: Value, tfvars_rel: str | None, meta: bool = False, chosen=()) -> tuple[str, int | None]:
    """Where a setting gets its value: the tfvars or default line of the variable it is, else its own line."""
    name = None if v.error else deciding_variable(v, meta, chosen)
    if name:
        return variable_origin(cfg, name, tfvars_rel)[:2]
    return v.file or TERRAFORM_DIR, v.line


def variable_origin(cfg: TerraformConfig, name: str, tfvars_rel: str | None) -> tuple[str, int | None, bool]:
    """(file, line, set_in_tfvars) where variable `name` gets its value: its tfvars line, else its declaration's `default`."""
    if tfvars_rel and (cfg.root / tfvars_rel).is_file():
        try:
            line = load_tfvars(cfg.root / tfvars_rel, cfg.root).lines.get(name)
        except TerraformError:
            line = None
        if line:
            return tfvars_rel, line, True
    decl = cfg.variables.get(name)
    if decl is None:
        return (tfvars_rel or TERRAFORM_DIR), None, False
    return decl["file"], decl.get("default_line") or decl.get("line"), False


def provider_version(cfg: TerraformConfig, provider: str = "azurerm") -> str | None:
    """The provider version terraform/.terraform.lock.hcl records, else the constraint in required_providers ("~> 4.0"), else None."""
    entry = cfg.providers.get(provider) or {}
    return entry.get("locked") or entry.get("constraint") or None
