"""Terraform hygiene and the wiring between terraform/ and the manifests.

Two kinds of checks:
- `wiring_findings(root)`: part of the static gate, on the values Terraform's evaluator gives
  (harness.gate.terraform, tools/tfeval) with the variable defaults and with each cluster's tfvars.
  Every expression evaluates (terraform-expression); the federated credential trusts exactly the
  workload ServiceAccount (the one with the workload identity annotation, wherever it is written); ConfigMap cluster-vars carries exactly the keys of
  clusters/<name>/cluster-vars.example.yaml; the Flux configuration reconciles
  clusters/<cluster_name> from a GitRepository named flux-system (harness.gate.terraform_flux).
- Tool runs for tests/static/test_terraform.py: `terraform fmt -check`, `terraform validate`
  (needs the providers; skipped with the reason when `terraform init` cannot install them)
  and checkov over terraform/ and over the manifests each cluster's Flux applies. checkov is
  installed into its own virtualenv under the harness cache (it pins bc-python-hcl2 and many
  other packages that must not share .venv).
"""
from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.gate import kubernetes_version, subnets, terraform_flux, tf_modules, version_rules
from harness.gate.workload_identity import CLIENT_ID_ANNOTATION, identity_findings, untrusted_accounts
from harness.gate.config import DEFAULTS, GateConfig
from harness.gate.terraform import (TERRAFORM_DIR, TFVARS_DIR, Block, Evaluation, TerraformConfig, TerraformError, load_tfvars, tfvars_paths)
from harness.gate.findings import Finding
from harness.gate.origin import compose
from harness.gate.sources import SourceError, Sources, as_map, load_yaml_all
from harness.gate.render import ClusterRender
from harness.core import cache_lock, cache_root, versions

CHECKOV_VERSION = str(versions.pins()["checkov"]["version"])
CHECKOV_CONFIG = ".checkov.yaml"

RULES = {
    "terraform-expression": "every expression in terraform/*.tf evaluates with Terraform's evaluator and functions, with the variable defaults and with each "
                            "cluster's tfvars (no undeclared variable, local or resource, also in depends_on; no unknown function, wrong argument or type); tfvars values have the declared "
                            "type and pass the variables' validation blocks",
    "terraform-undeclared-variable": "every variable a cluster's tfvars sets is declared in terraform/ (Terraform only warns and ignores "
                                     "the value; an error when the name is a misspelling of a declared one, which keeps its default)",
    "terraform-federated-subject": "the federated identity credential trusts system:serviceaccount:<ns>:<name> of the workload ServiceAccount (the "
                                   f"ServiceAccount with annotation {CLIENT_ID_ANNOTATION}, wherever the repository keeps it; the ServiceAccount it trusts carries that "
                                   "key, a misspelt one is reported at the key), and a credential "
                                   "trusts every other ServiceAccount with that annotation; its audience is the webhook's and its issuer the cluster's oidc_issuer_url",
    "terraform-workload-identity": "the AKS cluster sets oidc_issuer_enabled and workload_identity_enabled, which the federated credential "
                                   f"(its issuer) and the workload pods' token injection need, when the repository has the workload ServiceAccount",
    "terraform-cluster-vars": "Terraform writes ConfigMap flux-system/cluster-vars with exactly the keys of clusters/<name>/cluster-vars.example.yaml",
    "terraform-flux-configuration": "the Flux configuration is named flux-system and its entry kustomization's path evaluates, with each cluster's "
                                    "tfvars, to clusters/<that cluster_name>; every other kustomization's path is a directory; its values are ones azurerm's "
                                    "schema accepts (reference_type branch/commit/semver/tag and scope cluster/namespace, case-sensitive; "
                                    "kustomization names of lowercase letters, digits and hyphens, 30 at most; intervals >= 1) (terraform_flux.py)",
}


# -- Wiring (static gate) ----------------------------------------------------------------------
def _scopes(root: Path, cfg: TerraformConfig, tfvars_dir: str = TFVARS_DIR) -> list[tuple[str, Evaluation]]:
    """The variable defaults, then each cluster's tfvars over them."""
    scopes = [("variable defaults", cfg.defaults)]
    for path in tfvars_paths(root / tfvars_dir):
        try:
            scopes.append((path.relative_to(root).as_posix(), cfg.evaluate(load_tfvars(path, root))))
        except TerraformError:
            continue  # capacity-terraform reports it
    return scopes


def account_findings(root: Path, gate_config: GateConfig, sources: Sources, clusters: list) -> list[Finding]:
    """terraform-federated-subject for the annotated ServiceAccounts the rendered `clusters` apply besides the workload one."""
    root = Path(root).resolve()
    cfg = gate_config.terraform_config(root)
    if cfg is None:
        return []  # none read (capacity-terraform says why)
    return untrusted_accounts(cfg, _scopes(root, cfg, gate_config.tfvars), sources, gate_config.clusters, clusters)


def wiring_findings(root: Path, gate_config: GateConfig = DEFAULTS, sources: Sources | None = None, prefix: str = "") -> list[Finding]:
    """`sources`: the checkout's YAML as the gate read it (read here when not given); `prefix`: the checked tree's directory
    in its Git work tree (render.FluxBuild.prefix), which Flux paths start from."""
    root = Path(root).resolve()
    cfg = gate_config.terraform_config(root)
    if cfg is None:
        return []  # none read (capacity-terraform says why)
    scopes = _scopes(root, cfg, gate_config.tfvars)
    production = str(as_map(as_map(version_rules.pins(root)).get("kubernetes")).get("production") or "") or None
    sources = sources or Sources.load(root)
    return (_expression_findings(scopes) + _undeclared_findings(scopes) + identity_findings(cfg, scopes, sources, gate_config.clusters) + _cluster_vars_findings(root, cfg, gate_config)
            + terraform_flux.flux_findings(root, cfg, scopes, gate_config.clusters, prefix) + terraform_flux.schema_findings(cfg, scopes) + kubernetes_version.version_findings(cfg, scopes, production) + subnets.subnet_findings(root, cfg, scopes)
            + tf_modules.unread_findings(cfg))


def _expression_findings(scopes: list[tuple[str, Evaluation]]) -> list[Finding]:
    """Terraform's error diagnostics, once per place, naming the variable sets they occur with."""
    where: dict[tuple, list[str]] = {}
    for label, ev in scopes:
        for d in ev.errors():
            where.setdefault((d.file or TERRAFORM_DIR, d.line, d.text()), []).append(label)
    return [Finding(file, line, "", "terraform-expression", f"{text} (with {', '.join(labels)})",
                    "fix the expression: Terraform would stop at it in `terraform validate` or `plan`")
            for (file, line, text), labels in where.items()]


def _undeclared_findings(scopes: list[tuple[str, Evaluation]]) -> list[Finding]:
    """A tfvars value for no declared variable, at its line: Terraform warns and ignores it. Close to a declared
    name (difflib), it is that variable misspelt, which keeps its default: an error."""
    out, seen = [], set()
    for _, ev in scopes:
        for d in ev.diagnostics:
            if not d.variable or (d.file, d.line, d.variable) in seen:
                continue
            seen.add((d.file, d.line, d.variable))
            near = difflib.get_close_matches(d.variable, list(ev.variables), n=1)
            meant = (f": did you mean {near[0]}?" + ("" if near[0] in ev.values else " That variable keeps its default")) if near else ""
            out.append(Finding(d.file or TFVARS_DIR, d.line, "", "terraform-undeclared-variable",
                               f"{d.variable} is not a variable of {TERRAFORM_DIR}/; Terraform ignores the value with a warning{meant}",
                               f"spell it as {TERRAFORM_DIR}/variables.tf declares it ({near[0]})" if near else
                               f"declare it in {TERRAFORM_DIR}/variables.tf, or remove it", severity="error" if near else "warning"))
    return out


def cluster_vars_keys(cfg: TerraformConfig) -> tuple[Block | None, set[str] | None]:
    """(the kubernetes_config_map_v1 block for flux-system/cluster-vars, its data keys); the keys are
    None when Terraform cannot know them before apply."""
    for block in cfg.of_type("kubernetes_config_map_v1"):
        meta = (block.body.nested("metadata") or [None])[0]
        if meta is None or meta.get("name") is None or meta.get("namespace") is None:
            continue
        if (meta.get("name").value, meta.get("namespace").value) == ("cluster-vars", "flux-system"):
            data = block.body.get("data")
            return block, (set(data.value) if data is not None and isinstance(data.value, dict) else None)
    return None, None


def _cluster_vars_findings(root: Path, cfg: TerraformConfig, gate_config: GateConfig) -> list[Finding]:
    out = []
    block, keys = cluster_vars_keys(cfg)
    if block is None:
        return [Finding(f"{TERRAFORM_DIR}/flux.tf", None, "", "terraform-cluster-vars",
                        "no kubernetes_config_map_v1 cluster-vars in namespace flux-system: the queues layer's substituteFrom would find nothing",
                        "write ConfigMap flux-system/cluster-vars from Terraform (see clusters/<name>/cluster-vars.example.yaml)")]
    if keys is None:
        return [Finding(block.file, block.line, block.address, "terraform-cluster-vars", f"{block.address} data is not a map whose keys are known before apply",
                        "set data = local.cluster_vars with the keys as literals")]
    for example in sorted((root / gate_config.clusters).glob(f"*/{gate_config.cluster_variables}")):
        try:
            loaded = [d for d in load_yaml_all(example, root) if d is not None]
        except SourceError:
            continue  # yaml-syntax reports it
        rel = example.relative_to(root).as_posix()
        shapes = sorted({type(d).__name__ for d in loaded if not isinstance(d, dict)})
        if shapes:  # what kustomize-controller reads is the ConfigMap itself, one object per document
            at = next((n.start_mark.line + 1 for n in compose(example.read_text(encoding="utf-8", errors="replace")) if n is not None
                       and not isinstance(n, yaml.MappingNode)), None)
            out.append(Finding(rel, at, "", "terraform-cluster-vars",
                               f"{rel} holds a {' and a '.join('list' if s == 'list' else 'scalar' for s in shapes)} where the offline stand-in "
                               "for ConfigMap flux-system/cluster-vars belongs: the gate substitutes nothing from it, so every ${VAR} of the "
                               "cluster's layers counts as undefined and the layers that substituteFrom it find no ConfigMap",
                               "write the ConfigMap as the document itself (apiVersion, kind, metadata, data at the top level), not inside a "
                               "list; one object per `---` document"))
            continue
        docs = [d for d in loaded if d.get("kind") == "ConfigMap"]
        data = docs[0].get("data") if docs else None
        want = {str(k) for k in data} if isinstance(data, dict) else set()
        if want != keys:
            missing, extra = sorted(want - keys), sorted(keys - want)
            out.append(Finding(block.file, block.line, block.address, "terraform-cluster-vars",
                               f"ConfigMap cluster-vars keys differ from {rel}: missing {missing or 'none'}, extra {extra or 'none'}",
                               f"make local.cluster_vars in {TERRAFORM_DIR}/main.tf carry exactly the keys of {rel}"))
    return out


# -- Tool runs (tests) ---------------------------------------------------------------------------------
@dataclass
class ToolResult:
    status: str  # "passed", "failed" or "skipped"
    detail: str = ""
    failed: list[dict] = field(default_factory=list)


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_IN_AUTOMATION", "1")
    env["CHECKPOINT_DISABLE"] = "1"  # no version check over the network
    cfg = env.get("TF_CLI_CONFIG_FILE")
    if cfg and not Path(cfg).exists():
        env.pop("TF_CLI_CONFIG_FILE")  # a dangling path only produces a warning on every run
    return env


def terraform_binary() -> str | None:
    return shutil.which("terraform")


def terraform_fmt(root: Path) -> ToolResult:
    tf = terraform_binary()
    if not tf:
        return ToolResult("skipped", "terraform CLI is not on PATH (install Terraform >= 1.6 to run fmt -check)")
    proc = subprocess.run([tf, "fmt", "-check", "-recursive", "-diff", "-no-color"], cwd=Path(root) / TERRAFORM_DIR,
                          capture_output=True, text=True, encoding="utf-8", errors="replace", env=_clean_env(), timeout=120)
    return ToolResult("passed" if proc.returncode == 0 else "failed", (proc.stdout + proc.stderr).strip())


def terraform_validate(root: Path) -> ToolResult:
    """`terraform init -backend=false` then `validate` in a scratch copy (the checkout's lock file
    and .terraform/ stay untouched). Skipped when the providers cannot be installed."""
    tf = terraform_binary()
    if not tf:
        return ToolResult("skipped", "terraform CLI is not on PATH (install Terraform >= 1.6 to run validate)")
    with tempfile.TemporaryDirectory(prefix="tf-validate-") as tmp:
        work = Path(tmp) / "terraform"
        shutil.copytree(Path(root) / TERRAFORM_DIR, work, ignore=shutil.ignore_patterns(".terraform", "*.tfstate*"))
        env = _clean_env()
        init = subprocess.run([tf, "init", "-backend=false", "-input=false", "-no-color"], cwd=work,
                              capture_output=True, text=True, encoding="utf-8", errors="replace", env=env, timeout=600)
        if init.returncode != 0:
            text = (init.stderr or init.stdout).strip()
            lines = [line.strip(" │\t") for line in text.splitlines() if line.strip(" │\t")]
            start = next((i for i, ln in enumerate(lines) if "Error:" in ln), 0)
            reason = " ".join(lines[start:start + 5])[:400]
            return ToolResult("skipped", "terraform validate needs the providers, and `terraform init` could not install them "
                              f"(no registry or provider mirror reachable from this machine): {reason.strip()}; nor can they be built here: "
                              + _unbuildable_providers())
        proc = subprocess.run([tf, "validate", "-no-color"], cwd=work, capture_output=True, text=True, encoding="utf-8", errors="replace", env=env, timeout=300)
        return ToolResult("passed" if proc.returncode == 0 else "failed", (proc.stdout + proc.stderr).strip())


def _unbuildable_providers() -> str:
    """Why the locked providers cannot be built from the Go module proxy (versions.yaml `terraform-providers`)."""
    entries = versions.pins().get("terraform-providers") or {}
    return "; ".join(f"{name} {e['lock']}: {e['skew']}" for name, e in entries.items()) or "versions.yaml records no provider build"


def checkov_binary(install: bool = True) -> tuple[Path | None, str]:
    """checkov from $CHECKOV, else its pinned virtualenv under the harness cache (created on first use)."""
    if os.environ.get("CHECKOV"):
        path = Path(os.environ["CHECKOV"])
        return (path, "") if path.exists() else (None, f"$CHECKOV={path} does not exist")
    venv = cache_root() / f"checkov-{CHECKOV_VERSION}"
    binary = venv / "bin" / "checkov"
    if binary.exists() and (venv / ".complete").exists():
        return binary, ""
    if not install:
        return None, f"checkov {CHECKOV_VERSION} is not installed in {venv}"
    with cache_lock(venv.name):  # parallel runs wait for one installer
        if binary.exists() and (venv / ".complete").exists():
            return binary, ""
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        steps = ([sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", f"checkov=={CHECKOV_VERSION}"])
        for cmd in steps:
            proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=1200)
            if proc.returncode != 0:
                return None, f"installing checkov {CHECKOV_VERSION} failed (`{' '.join(cmd)}`): {proc.stderr.strip()[-800:]}"
        (venv / ".complete").touch()
    return binary, ""


def checkov_scan(root: Path, target: Path, framework: str) -> ToolResult:
    binary, why = checkov_binary()
    if binary is None:
        return ToolResult("skipped", why)
    cmd = [str(binary), "-d", str(target), "--framework", framework, "-o", "json", "--config-file", str(Path(root) / CHECKOV_CONFIG)]
    env = {**_clean_env(), "BC_SKIP_MAPPING": "TRUE"}
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", env=env, timeout=900)
    try:
        reports = json.loads(proc.stdout) if proc.stdout.strip() else []
    except json.JSONDecodeError:
        return ToolResult("failed", f"checkov output is not JSON (exit {proc.returncode}): {proc.stderr[-1500:]}")
    reports = reports if isinstance(reports, list) else [reports]
    failed, parse_errors, summary = [], [], []
    for r in reports:
        if "results" not in r:  # an empty scan prints a bare summary
            continue
        failed += [{"check_id": c["check_id"], "name": c.get("check_name", ""), "resource": c.get("resource", ""),
                    "file": c.get("file_path", ""), "lines": c.get("file_line_range")} for c in r["results"].get("failed_checks") or []]
        parse_errors += r["results"].get("parsing_errors") or []
        summary.append(f"{r.get('check_type')}: {r['summary']['passed']} passed, {r['summary']['failed']} failed")
    if not summary:
        return ToolResult("failed", f"checkov scanned nothing in {target} (exit {proc.returncode}): {proc.stderr[-800:]}")
    detail = "; ".join(summary) + (f"; parsing errors in {parse_errors}" if parse_errors else "")
    return ToolResult("failed" if failed or parse_errors else "passed", detail, failed)


def write_manifests(clusters: list[ClusterRender], dest: Path) -> list[Path]:
    """One multi-document YAML per cluster with every object its Flux applies."""
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for c in clusters:
        path = dest / f"{c.name}.yaml"
        path.write_text(yaml.safe_dump_all([o for _, o in c.applied()], sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths
