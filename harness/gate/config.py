"""The layout conventions the gate's rules assume, read from `.ray-kueue-gate.yaml` at the root
of the checked repository (optional; every key left out keeps this repository's layout).

    clusters: clusters                  # clusters/<name>/: kustomization.yaml, or flux-system/ (flux bootstrap)
    queue_overlays:                     # a cluster selects exactly one (rule cluster-overlay); {} turns that off
      overlays/single-queue: one ClusterQueue for every team
      overlays/team-queues: one ClusterQueue per team, borrowing in a cohort
    samples: samples.yaml               # per cluster directory
    cluster_variables: cluster-vars.example.yaml  # per cluster directory: the substituteFrom stand-in
    terraform: {tfvars: terraform/clusters}       # or null: no Terraform (capacity and Terraform rules off)
    crds: [crds/]                       # extra CRD YAML files or directories (e.g. ServiceMonitor)
    skus:                               # VM sizes beyond harness/gate/sku.yaml, in the shape of its entries
      Standard_NC8as_T4_v3: {vcpu: 8, memory_gib: 56, gpus: 1}
    disable:                            # rules off under a path; the reason is required and printed
      - {rules: [sample-fits], path: clusters/lab/, reason: "lab quotas are set by hand"}

The file is checked against harness/schemas-for-data/gate-config.schema.json; a problem is a
`gate-config` finding at its line, and the defaults are used for the rest of the run.
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from harness.gate import DATA_SCHEMAS, origin
from harness.gate.artifact import symlinked
from harness.gate.terraform import TERRAFORM_DIR, TerraformConfig, TerraformError
from harness.gate.findings import Finding
from harness.gate.sources import SourceError, kustomization_file, load_yaml, load_yaml_all, read_source
from harness.gate.terraform import TERRAFORM_DIR, tfvars_rel
from harness.gate.workloads import WORKLOADS_DIR

CONFIG_FILE = ".ray-kueue-gate.yaml"
RULES = {
    "gate-config": f"{CONFIG_FILE}, when present, follows harness/schemas-for-data/gate-config.schema.json and names existing paths and rules",
}
DEFAULT_OVERLAYS = {
    "overlays/single-queue": "one ClusterQueue for every team",
    "overlays/team-queues": "one ClusterQueue per team, borrowing from each other in a cohort",
}


@dataclass(frozen=True)
class Disable:
    """Rules turned off for findings under `path` (a file or directory of the repository)."""

    rules: tuple[str, ...]
    path: str
    reason: str
    line: int | None = None

    def covers(self, finding: Finding, clusters_dir: str) -> bool:
        """Whether `finding` is under the path: its file is, or it belongs to a cluster whose directory is."""
        if finding.rule not in self.rules:
            return False
        prefix = self.path
        if prefix == ".":
            return True
        if finding.file == prefix or finding.file.startswith(prefix + "/"):
            return True
        cluster = prefix.removeprefix(clusters_dir.rstrip("/") + "/")
        return cluster != prefix and "/" not in cluster and (
            finding.context == f"cluster {cluster}" or finding.context.startswith((f"cluster {cluster}:", f"cluster {cluster},")))

    def summary(self) -> str:
        n = len(self.rules)
        return f"{n} rule{'s' if n != 1 else ''} disabled for {self.path}: {self.reason} ({', '.join(self.rules)})"


@dataclass(frozen=True)
class GateConfig:
    clusters: str = "clusters"
    queue_overlays: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_OVERLAYS))
    samples: str = "samples.yaml"
    cluster_variables: str = "cluster-vars.example.yaml"
    terraform: bool = True
    tfvars: str = "terraform/clusters"
    crds: tuple[str, ...] = ()
    crd_entries: tuple[str, ...] = ()  # `crds:` as written (a file there that does not parse is still one the gate reads)
    skus: dict[str, dict] = field(default_factory=dict)  # VM sizes added to harness/gate/sku.yaml (harness.gate.sku.repository_skus)
    disable: tuple[Disable, ...] = ()
    file: str | None = None  # the configuration file read, None for the defaults
    findings: tuple[Finding, ...] = ()  # what is wrong with it
    skus_refused: tuple[str, ...] = ()  # the sizes under `skus:` of a file refused as a whole (its finding is the cause)

    def cluster_dir(self, cluster: str) -> str:
        """A cluster's directory with a trailing /, the prefix of its files (Sources.locate's preference)."""
        return f"{self.clusters}/{cluster}/"

    def cluster_file(self, cluster: str, name: str) -> str:
        """Repository-relative path of a file of a cluster's directory."""
        return self.cluster_dir(cluster) + name

    def samples_file(self, cluster: str) -> str:
        return self.cluster_file(cluster, self.samples)

    def variables_file(self, cluster: str) -> str:
        return self.cluster_file(cluster, self.cluster_variables)

    def terraform_config(self, root: Path) -> TerraformConfig | None:
        """terraform/ as the gate reads it; None when `terraform: null` says none provisions the clusters, it is missing or it
        does not load (capacity-terraform says why)."""
        try:
            return TerraformConfig.load(root) if self.terraform and (Path(root) / TERRAFORM_DIR).is_dir() else None
        except TerraformError:
            return None

    def tfvars_file(self, cluster: str, root: Path | None = None) -> str:
        """The cluster's values file: <cluster>.tfvars, or (`root` given) <cluster>.tfvars.json when only that exists."""
        return tfvars_rel(root, cluster, self.tfvars)

    def crd_files(self, root: Path) -> list[Path]:
        """The extra CRD files: each file named, and the *.yaml/*.yml files under each directory named."""
        out: list[Path] = []
        for rel in self.crds:
            path = Path(root) / rel
            out += sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()) if path.is_dir() else [path]
        return out

    def reads(self, root: Path, rel: str, applied: set[str] = frozenset()) -> bool:
        """Whether kustomize, Flux or the gate reads the YAML file `rel`: one in or below a directory with a kustomization
        file (a build reads it, or kustomize-unlisted says one should), below the clusters directory (Flux's generator
        reads a cluster folder without one, and any directory of `applied`, the paths the clusters' Flux Kustomizations
        apply), a workload, versions.yaml, this configuration or a CRD file; never a Helm
        chart's template (text Helm renders, not YAML). Another YAML file of a fork (docs, CI, a chart) is none of the gate's."""
        parts = Path(rel).parts
        if "templates" in parts and any((root / Path(*parts[:i]) / "Chart.yaml").is_file() for i in range(parts.index("templates"))):
            return False
        if rel in ("versions.yaml", CONFIG_FILE) or rel in (*self.crds, *self.crd_entries) \
                or any(rel.startswith(d.rstrip("/") + "/") for d in (self.clusters, WORKLOADS_DIR, *self.crd_entries, *applied)):
            return True
        return any(kustomization_file(root / Path(*parts[:i])) is not None for i in range(len(parts)))

    def apply(self, findings: list[Finding]) -> tuple[list[Finding], list[str]]:
        """(the findings no `disable` entry covers, one summary line per entry)."""
        kept = [f for f in findings if not any(d.covers(f, self.clusters) for d in self.disable)]
        return kept, [d.summary() for d in self.disable]


DEFAULTS = GateConfig()


def _not_a_crd(root: Path, file: Path) -> str | None:
    """Why `file` is no CRD file the checks can load, "" when its YAML is broken (yaml-syntax reports that), None when it
    is one."""
    try:
        docs = [d for d in load_yaml_all(file, root) if d is not None]
    except SourceError:
        return ""
    for doc in docs:
        spec = doc.get("spec") if isinstance(doc, dict) else None
        names = spec.get("names") if isinstance(spec, dict) else None
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            return "a document in it is not a CustomResourceDefinition"
        if not (isinstance(names, dict) and isinstance(names.get("kind"), str) and isinstance(spec.get("group"), str)
                and isinstance(spec.get("versions"), list) and all(isinstance(v, dict) and isinstance(v.get("name"), str) for v in spec["versions"])):
            return f"CustomResourceDefinition {as_name(doc)} has no spec.group, spec.names.kind or spec.versions[].name"
    return None if docs else "it holds no document"


def as_name(doc: dict) -> str:
    meta = doc.get("metadata")
    return str(meta.get("name")) if isinstance(meta, dict) else "?"


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads((DATA_SCHEMAS / "gate-config.schema.json").read_text(encoding="utf-8"))


def _line(text: str, path: list) -> int | None:
    docs = origin.compose(text)
    if not docs or docs[0] is None:
        return None
    key, _ = origin.descend(docs[0], list(path))
    while key is None and path:  # the deepest part of the path that is written
        path = path[:-1]
        key, _ = origin.descend(docs[0], list(path))
    return key.start_mark.line + 1 if key is not None else None


def _error_path(error) -> list:
    """Where a schema error is written: an unknown key at its own line, not its parent's."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        extra = sorted(str(k) for k in set(error.instance) - set(error.schema.get("properties") or {}))
        path += extra[:1]
    return path


def _finding(line: int | None, message: str, hint: str, severity: str = "error") -> Finding:
    return Finding(CONFIG_FILE, line, "", "gate-config", message, hint, severity=severity)


def normalise(path: str) -> str:
    """A configured path in the one form the rules, the hints and `disable` compare: ./clusters, clusters/ and
    a/../clusters are all clusters (posixpath.normpath); ".." when it leaves the repository."""
    norm = posixpath.normpath(path)
    return ".." if norm == ".." or norm.startswith("../") else norm


def _paths(doc: dict, text: str) -> tuple[dict, list[Finding]]:
    """`doc` with every path it names normalised, and a finding for each path that leaves the repository."""
    found: list[Finding] = []

    def norm(value: str, where: list) -> str:
        out = normalise(value)
        if out == "..":
            found.append(_finding(_line(text, where), f"{'.'.join(map(str, where))}: {value} leaves the repository",
                                  "name a path inside the repository (relative to its root)"))
        return out
    doc = dict(doc)
    if "clusters" in doc:
        doc["clusters"] = norm(doc["clusters"], ["clusters"])
    if isinstance(doc.get("queue_overlays"), dict):
        doc["queue_overlays"] = {norm(k, ["queue_overlays", k]): v for k, v in doc["queue_overlays"].items()}
    if doc.get("crds"):
        doc["crds"] = [norm(c, ["crds", i]) for i, c in enumerate(doc["crds"])]
    if isinstance(doc.get("terraform"), dict) and "tfvars" in doc["terraform"]:
        doc["terraform"] = {**doc["terraform"], "tfvars": norm(doc["terraform"]["tfvars"], ["terraform", "tfvars"])}
    doc["disable"] = [{**e, "path": norm(e["path"], ["disable", i, "path"])} for i, e in enumerate(doc.get("disable") or [])]
    return doc, found


def _unlinked(root: Path, rel: str, where: list, text: str, found: list[Finding]) -> str:
    """`rel`, a directory Flux reads from its artifact, or (a gate-config finding added) the real directory when a symlink
    is on its way: the artifact source-controller packs holds no symlinks, so Flux would see nothing under `rel`. The rest of
    the run checks the real directory (one inside the repository), whose path is the one Flux can be given."""
    link = symlinked(Path(root), Path(root) / rel)
    if link is None:
        return rel
    real, top = (Path(root) / rel).resolve(), Path(root).resolve()
    name = link.absolute().relative_to(Path(root).absolute()).as_posix()
    inside = real.is_relative_to(top) and not set(real.relative_to(top).parts) & {".git"}
    found.append(_finding(_line(text, where), f"{where[0]}: {rel} " + ("is a symlink" if name == rel else f"leads through the symlink {name}")
                          + ", and the artifact source-controller packs holds no symlinks, so Flux sees nothing under it", f"name the real directory "
                          f"({real.relative_to(top).as_posix()}) here and in the Flux paths" if inside else
                          f"move the directory {name} leads to into the repository in place of the symlink"))
    return real.relative_to(top).as_posix() if inside else rel


def _checked_under(root: Path, rel: str, cfg: GateConfig) -> bool:
    """Whether a file the gate reports on is `rel` or under it: a YAML file it reads (GateConfig.reads) or Terraform's."""
    path = root / rel
    files = [path] if path.is_file() else (p for p in path.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts)
    for file in files:
        name = file.relative_to(root).as_posix()
        if name.startswith(TERRAFORM_DIR + "/") or (file.suffix in (".yaml", ".yml") and cfg.reads(root, name)):
            return True
    return False


def load(root: Path, known_rules: set[str] | frozenset[str] = frozenset()) -> GateConfig:
    """The configuration of the repository at `root`: its CONFIG_FILE over the defaults, or the
    defaults alone (with the findings) when the file is absent or wrong."""
    path = Path(root) / CONFIG_FILE
    if not path.exists():
        return DEFAULTS
    try:
        doc = load_yaml(path, root)
        text = read_source(path, root)
    except SourceError as err:  # yaml-syntax or file-read: Sources reports the same finding
        return replace(DEFAULTS, file=CONFIG_FILE, findings=(err.finding,))
    doc = {} if doc is None else doc
    from jsonschema import Draft202012Validator  # a tenth of a second to import: only a repository with a config pays it

    errors = sorted(Draft202012Validator(schema()).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        skus = doc.get("skus") if isinstance(doc, dict) else None
        return replace(DEFAULTS, file=CONFIG_FILE, skus_refused=tuple(map(str, skus)) if isinstance(skus, dict) else (), findings=tuple(
            _finding(_line(text, _error_path(e)), f"{e.json_path.removeprefix('$').removeprefix('.') or 'the document'}: {e.message}",
                     "fix the value (see harness/schemas-for-data/gate-config.schema.json and the README's "
                     "\"Using the gate on another repository\")") for e in errors))
    doc, found = _paths(doc, text)
    if found:
        return replace(DEFAULTS, file=CONFIG_FILE, findings=tuple(found))
    disables = []
    for i, entry in enumerate(doc.get("disable") or []):
        line = _line(text, ["disable", i])
        unknown = sorted(set(entry["rules"]) - set(known_rules)) if known_rules else []
        if unknown:
            found.append(_finding(_line(text, ["disable", i, "rules"]), f"disable[{i}] names unknown rule(s) {', '.join(unknown)}",
                                  "name rule ids as `scripts/validate --list-rules` prints them"))
        if not (Path(root) / entry["path"]).exists():
            found.append(_finding(_line(text, ["disable", i, "path"]), f"disable[{i}]: {entry['path']} does not exist",
                                  "name a file or directory of this repository, or remove the entry"))
        disables.append(Disable(tuple(entry["rules"]), entry["path"], entry["reason"], line))
    for key in ("clusters",):
        if key in doc and not (Path(root) / doc[key]).is_dir():
            found.append(_finding(_line(text, [key]), f"{key}: {doc[key]} is not a directory", "name the directory that holds the clusters"))
        elif key in doc:
            doc[key] = _unlinked(root, doc[key], [key], text, found)
    for overlay in list(doc.get("queue_overlays") or {}):
        if not (Path(root) / overlay).is_dir():
            found.append(_finding(_line(text, ["queue_overlays", overlay]), f"queue_overlays: {overlay} is not a directory",
                                  "name each queue overlay's directory, or remove it"))
        elif (real := _unlinked(root, overlay, ["queue_overlays", overlay], text, found)) != overlay:
            doc["queue_overlays"] = {real if k == overlay else k: v for k, v in doc["queue_overlays"].items()}
    crds: list[str] = []  # the CRD files the checks load: those named, or under a directory named, that hold CRDs
    for i, crd in enumerate(doc.get("crds") or []):
        if not (Path(root) / crd).exists():
            found.append(_finding(_line(text, ["crds", i]), f"crds[{i}]: {crd} does not exist", "name a CRD YAML file or a directory of them"))
            continue
        for file in replace(DEFAULTS, crds=(crd,)).crd_files(root):
            problem = _not_a_crd(root, file)
            if problem is None:
                crds.append(file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file))
            elif problem:
                found.append(Finding(file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file), None, "", "gate-config",
                                     f"named by crds[{i}] of {CONFIG_FILE}, but {problem}: the gate leaves it out",
                                     "name only CustomResourceDefinition files (apiextensions.k8s.io/v1) under `crds:`"))
    terraform = doc.get("terraform", {})
    loaded = GateConfig(
        clusters=doc.get("clusters", DEFAULTS.clusters),
        queue_overlays=dict(doc["queue_overlays"]) if "queue_overlays" in doc else dict(DEFAULT_OVERLAYS),
        samples=doc.get("samples", DEFAULTS.samples),
        cluster_variables=doc.get("cluster_variables", DEFAULTS.cluster_variables),
        terraform=terraform is not None,
        tfvars=(terraform or {}).get("tfvars", DEFAULTS.tfvars),
        crds=tuple(crds),
        crd_entries=tuple(doc.get("crds") or []),
        skus=dict(doc.get("skus") or {}),
        disable=tuple(disables),
        file=CONFIG_FILE,
        findings=tuple(found),
    )
    silent = [_finding(d.line, f"disable[{i}]: nothing the gate checks is at or under {d.path}, so the entry turns nothing off",
                       "name the file or directory the findings are reported at (a cluster's directory, a layer, a workload, a "
                       "Terraform file), or remove the entry", severity="warning")
              for i, d in enumerate(loaded.disable) if (Path(root) / d.path).exists() and not _checked_under(Path(root), d.path, loaded)]
    return replace(loaded, findings=(*found, *silent)) if silent else loaded
