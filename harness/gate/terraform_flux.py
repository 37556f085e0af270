"""The AKS Flux configuration terraform/ writes (azurerm_kubernetes_flux_configuration) against the clusters it bootstraps.

Without a Flux configuration, each cluster Terraform provisions must be `flux bootstrap`'s: its folder's
flux-system/gotk-sync.yaml reconciles the folder (both ways are valid; the two at once collide, object-collision).
The microsoft.flux extension makes of the configuration a GitRepository named after it and, per `kustomizations` block,
a Flux Kustomization named <configuration>-<kustomization> that builds the block's `path` from that repository.
- `flux_findings` (terraform-flux-configuration, with each cluster's tfvars): the configuration is named flux-system (the
  sourceRef of clusters/*/*.yaml); its entry kustomization (the one whose path is a cluster folder) reconciles
  clusters/<cluster_name> with the cluster's own cluster_name; every other kustomization's path is a directory. Each
  finding is at the `path` line that writes the value, once, naming the clusters it holds for.
- `schema_findings` (terraform-flux-configuration): the values azurerm's schema refuses (harness.gate.azurerm_schema FLUX_CHECKS:
  `reference_type = "Branch"`, a kustomization named cluster_entry, an interval of 0), at the line that writes the value
  (a cluster's tfvars line when it is a variable), once, naming the clusters it holds for.
- `collision_findings` (object-collision, once the clusters are rendered): another kustomization block that applies
  objects the cluster's entry point already applies through its Flux Kustomizations. Its directory's plain build is
  compared object by object with what the cluster applies; a directory without a kustomization file (Flux's generator
  builds it, with every directory below it) overlaps when a layer's directory is in it.
"""
from __future__ import annotations

import difflib
from pathlib import Path

from harness.gate.azurerm_schema import FLUX_CHECKS
from harness.gate.config import DEFAULTS, GateConfig
from harness.gate.findings import Finding
from harness.gate.flux_paths import flux_path, outside, written
from harness.gate.render import BOOTSTRAP_SYNC, Build, ClusterRender, is_flux_kustomization, object_key
from harness.gate.sources import SourceError, as_map, kustomization_file, load_yaml_all
from harness.gate.terraform import (TERRAFORM_DIR, Block, Body, Evaluation, TerraformConfig, TerraformError, Value, load_tfvars,
                                    setting_origin, tfvars_cluster, variable_origin)

CONFIG_TYPE = "azurerm_kubernetes_flux_configuration"


def _cluster_name(ev: Evaluation, label: str) -> str:
    """The cluster a tfvars scope provisions: its cluster_name, else the file's name."""
    return str(ev.variable("cluster_name") or tfvars_cluster(label))


def _kustomizations(block: Block, clusters: str, cluster: str, prefix: str = "") -> tuple[tuple | None, list[tuple]]:
    """(the entry kustomization, the others) of a Flux configuration, each (block, path Value, evaluated path or the
    TerraformError of it). The entry is the one whose path is clusters/<cluster>, else the first into the clusters folder,
    else the first. `prefix`: the checked tree's directory in its Git work tree (flux_paths)."""
    items = []
    for k in block.body.nested("kustomizations"):
        v = k.get("path")
        if v is not None and v.error:
            continue  # terraform-expression reports it
        try:
            items.append((k, v, flux_path(v.get("kustomization path") if v is not None else "", prefix)))
        except TerraformError as err:
            items.append((k, v, err))
    want, folder = f"{clusters}/{cluster}", f"{clusters}/"
    entry = next((i for i in items if i[2] == want), None) or next(
        (i for i in items if isinstance(i[2], str) and i[2].startswith(folder)), None) or next(iter(items), None)
    return entry, [i for i in items if i is not entry]


def _name(k: Body) -> str | None:
    v = k.get("name")
    return str(v.value) if v is not None and v.known else None


def _nearest(root: Path, path: str, prefix: str) -> str:
    """", e.g. <a directory of the repository named like it>" when one is, else ""."""
    parent = Path(path).parent
    while parent != Path(".") and not (root / parent).is_dir():
        parent = parent.parent
    dirs = [(parent / d.name).as_posix() for d in (root / parent).iterdir() if d.is_dir() and not d.name.startswith(".")] \
        if (root / parent).is_dir() else []
    near = difflib.get_close_matches(path, dirs, n=1)
    return f' (did you mean "{written(near[0], prefix)}"?)' if near else ""


def bootstrapped(root: Path, folder: str, prefix: str = "") -> bool:
    """Whether `flux bootstrap` set the cluster folder up: its flux-system/gotk-sync.yaml has a Flux Kustomization whose path
    is the folder itself (Flux then reconciles the folder without the AKS extension)."""
    sync = root / folder / BOOTSTRAP_SYNC
    try:
        docs = load_yaml_all(sync, root) if sync.is_file() else []
    except SourceError:
        return False  # yaml-syntax reports it
    return any(isinstance(d, dict) and is_flux_kustomization(d) and flux_path(as_map(d.get("spec")).get("path", "./"), prefix) == folder for d in docs)


def _unbootstrapped(root: Path, cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]], clusters: str, prefix: str) -> list[Finding]:
    """Without a Flux configuration in Terraform, Flux comes from `flux bootstrap`: a cluster Terraform provisions whose
    folder has no gotk-sync.yaml applying it gets no Flux at all (one finding per cluster, at its tfvars' cluster_name)."""
    out = []
    for label, ev in scopes[1:]:
        cluster = _cluster_name(ev, label)
        if (root / clusters / cluster).is_dir() and not bootstrapped(root, f"{clusters}/{cluster}", prefix):  # (no folder: capacity-terraform)
            out.append(Finding(*variable_origin(cfg, "cluster_name", label)[:2], "", "terraform-flux-configuration",
                               f"cluster {cluster}: Terraform has no {CONFIG_TYPE} and {clusters}/{cluster}/{BOOTSTRAP_SYNC} does not "
                               f"reconcile {clusters}/{cluster} (`flux bootstrap`): nothing installs Flux or applies the cluster's folder",
                               f"run `flux bootstrap --path={written(f'{clusters}/{cluster}', prefix)[2:]}` and commit the {BOOTSTRAP_SYNC} it writes, or add the "
                               f"microsoft.flux extension and a {CONFIG_TYPE} for {written(clusters, prefix)}/${{var.cluster_name}} to {TERRAFORM_DIR}/"))
    return out


def flux_findings(root: Path, cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]], clusters: str = "clusters", prefix: str = "") -> list[Finding]:
    """terraform-flux-configuration (`scopes`: the variable defaults, then each cluster's tfvars over them; `prefix`: the
    checked tree's directory in its Git work tree, which the paths start from)."""
    configs = cfg.of_type(CONFIG_TYPE)
    if not configs:
        return _unbootstrapped(root, cfg, scopes, clusters, prefix)
    entry_path = f"{written(clusters, prefix)}/${{var.cluster_name}}"  # what each cluster's tfvars resolves to its own folder
    out, where = [], {}  # where: (file, line, address, message with {whom}, hint) -> the clusters (variable sets) it holds for
    for fc in configs:
        name = fc.body.get("name")
        if name is None or name.value != "flux-system":
            out.append(Finding(name.file if name else fc.file, name.line if name else fc.line, fc.address, "terraform-flux-configuration",
                               f"{fc.address} is named {name.value if name else None!r}; the GitRepository it creates must be flux-system, the sourceRef of {clusters}/*/*.yaml",
                               'set name = "flux-system"'))
        for label, ev in scopes[1:]:
            block = ev.instance(fc.address)
            cluster = _cluster_name(ev, label)
            if block is None:
                continue
            entry, others = _kustomizations(block, clusters, cluster, prefix)
            want = f"{clusters}/{cluster}"
            if entry is None:
                where.setdefault((fc.file, fc.line, fc.address, f"{fc.address} has no kustomizations block: Flux applies nothing to {{whom}}",
                                  f'add kustomizations {{ name = "cluster", path = "{entry_path}" }}'), []).append(cluster)
            for k, v, path in ([entry] if entry else []) + others:
                at = (v.file, v.line) if v is not None else (k.file or fc.file, k.line or fc.line)
                kname = _name(k)
                shown = written(path, prefix) if isinstance(path, str) and outside(path) else path  # (from the Git root)
                if isinstance(path, TerraformError):
                    where.setdefault((*at, fc.address, f"{path} ({{whom}})", f'use path = "{entry_path}"' if k is entry[0] else
                                      "give path a value known before apply"), []).append(label)
                elif k is entry[0] and path != want:
                    whose = "another cluster's folder" if path.startswith(f"{clusters}/") and (root / path).is_dir() else \
                        "no directory of the repository" if not (root / path).is_dir() else "no cluster folder"
                    where.setdefault((*at, fc.address, f"kustomization {kname!r} path is not {written(clusters, prefix)}/<cluster_name> for {{whom}}: the "
                                      "Flux extension would reconcile that instead of the cluster's own folder, so the cluster gets another "
                                      "cluster's layers and queues, or none, and never its own",
                                      f'set path = "{entry_path}", which each cluster\'s tfvars resolves to its own folder'),
                                     []).append(f"cluster {cluster} ({label}: {shown!r}, {whose})")
                elif k is not entry[0] and not (root / path).is_dir():  # (a directory without a kustomization file: Flux's generator builds it)
                    where.setdefault((*at, fc.address, f"kustomization {kname!r} path {shown!r} ({{whom}}) is no directory of the repository: "
                                      f"the extension's Flux Kustomization {fc.body.value('name', '?')}-{kname} fails to build",
                                      f"point path at the directory this kustomization should apply{_nearest(root, path, prefix)}, or remove the block"),
                                     []).append(label)
    for (file, line, address, message, hint), whom in where.items():
        out.append(Finding(file, line, address, "terraform-flux-configuration", message.replace("{whom}", ", ".join(dict.fromkeys(whom))), hint))
    return out


def _values(body: Body, path: str) -> list[Value]:
    """The values written for argument `path` ("kustomizations.name": the name of every kustomizations block)."""
    *blocks, attr = path.split(".")
    bodies = [body]
    for block in blocks:
        bodies = [n for b in bodies for n in b.nested(block)]
    return [v for b in bodies if (v := b.get(attr)) is not None]


def schema_findings(cfg: TerraformConfig, scopes: list[tuple[str, Evaluation]]) -> list[Finding]:
    """terraform-flux-configuration for the values azurerm's schema refuses (FLUX_CHECKS), with each cluster's tfvars."""
    where: dict[tuple, list[str]] = {}
    for label, ev in scopes[1:]:
        for fc in ev.of_type(CONFIG_TYPE):
            for path, check in FLUX_CHECKS.items():
                for v in _values(fc.body, path):
                    refused = check.refusal(path.rsplit(".", 1)[-1], v.value) if v.known and not v.error else None
                    if refused:
                        file, line = setting_origin(cfg, v, label)
                        where.setdefault((file, line, fc.address, f"{fc.address} {path} = {v.value!r} ({v.text} at {v.file}:{v.line}"
                                          f"{{whom}}): {refused[0]}", refused[1]), []).append(tfvars_cluster(label) or label)
    return [Finding(file, line, address, "terraform-flux-configuration", message.replace("{whom}", f", cluster {', '.join(whom)}"), hint)
            for (file, line, address, message, hint), whom in where.items()]


def _layer(build: Build, entry: Build) -> str:
    if build is entry:
        return f"the entry point {build.dir}"
    return f"Flux Kustomization {as_map(as_map(build.flux_kustomization).get('metadata')).get('name', build.id)}"


def _overlap(root: Path, cluster: ClusterRender, path: str, plain: dict[str, Build]) -> tuple[list[str], str] | None:
    """(the cluster's layers that apply what `path` applies, what they share) or None."""
    layers = [cluster.entry, *cluster.flux]
    built = plain.get(path)
    if built is not None:
        keys = {object_key(o) for o in built.objects}
        shared = [(b, o) for b, o in cluster.applied() if object_key(o) in keys]
        if not shared:
            return None
        objects = ", ".join(f"{o.get('kind')}/{as_map(o.get('metadata')).get('name')}" for _, o in shared[:5]) + (", ..." if len(shared) > 5 else "")
        return list(dict.fromkeys(_layer(b, cluster.entry) for b, _ in shared)), f"{len(shared)} object(s) ({objects})"
    if kustomization_file(root / path) is not None:
        inside = [b for b in layers if b.dir == path]
    else:  # Flux's generator builds the directory with every directory below it
        top = (root / path).resolve()
        inside = [b for b in layers if b.dir and (root / b.dir).resolve().is_relative_to(top)]
    if not inside:
        return None
    return [_layer(b, cluster.entry) for b in inside], f"the director{'y' if len(inside) == 1 else 'ies'} {', '.join(sorted({b.dir for b in inside}))}"


def collision_findings(root: Path, clusters: list[ClusterRender], builds: list[Build], gate_config: GateConfig = DEFAULTS,
                       prefix: str = "") -> list[Finding]:
    """object-collision between a kustomizations block of the Flux configuration and the cluster's entry point."""
    root = Path(root).resolve()
    cfg = gate_config.terraform_config(root)
    if cfg is None:
        return []  # none read (capacity-terraform says why)
    plain = {b.dir: b for b in builds if not b.error and b.cluster is None}
    where: dict[tuple, list[str]] = {}
    for cluster in clusters:
        rel = gate_config.tfvars_file(cluster.name, root)
        try:
            ev = cfg.evaluate(load_tfvars(root / rel, root)) if (root / rel).is_file() else None
        except TerraformError:
            ev = None  # capacity-terraform reports it
        for fc in ev.of_type(CONFIG_TYPE) if ev else []:
            entry, others = _kustomizations(fc, gate_config.clusters.rstrip("/"), cluster.name, prefix)
            for k, v, path in others:
                hit = _overlap(root, cluster, path, plain) if isinstance(path, str) and v is not None and not outside(path) and (root / path).is_dir() else None
                if hit:
                    ks = f"{fc.body.value('name', '?') if fc.body.get('name') and fc.body.get('name').known else '?'}-{_name(k)}"
                    where.setdefault((v.file, v.line, fc.address, _name(k), ks, path, tuple(hit[0]), hit[1]), []).append(cluster.name)
    return [Finding(file, line, address, "object-collision",
                    f"kustomization {kname!r} (the AKS Flux extension's Flux Kustomization {ks}) applies {path}; {' and '.join(layers)} "
                    f"of the cluster's entry point appl{'ies' if len(layers) == 1 else 'y'} {what} too (on {', '.join(names)}): the two "
                    "fight over those objects and each prunes what the other applies",
                    f"remove this kustomizations block: the entry kustomization already applies {path} through the cluster's Flux "
                    "Kustomizations (or take the directory out of those layers)")
            for (file, line, address, kname, ks, path, layers, what), names in where.items()]
