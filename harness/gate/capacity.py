"""Capacity checks: the queues' declared quota against the node pools Terraform creates.

Kueue admits on declared quota, not on real nodes: a quota larger than the pools lets a
workload be admitted and then pend forever. This module reads terraform/ with python-hcl2
(the maintained HCL2 parser), resolves each cluster's pools from terraform/clusters/<name>.tfvars
over the variable defaults, sizes them from harness/gate/sku.yaml, and compares them with the
ResourceFlavors and ClusterQueues Flux applies on that cluster and with its sample RayJobs.

Decisions (see RULES):
- A flavor selects the user pools whose node labels include all of its nodeLabels and whose
  taints its tolerations tolerate. AKS sets some labels itself (agentpool, mode, instance type,
  and accelerator=nvidia on GPU sizes); those count. The system pool is tainted
  CriticalAddonsOnly=true:NoSchedule (only_critical_addons_enabled), which no flavor here
  tolerates, so it never counts as Ray capacity.
- Quota sums are compared with the pools' hardware (vCPU, memory, GPUs x nodes): above that,
  the quota cannot be met whatever runs on the nodes. One pod is compared with one node's
  allocatable (after the AKS reservation), because that is what the scheduler sees.
- A cluster in clusters/ without terraform/clusters/<name>.tfvars is a finding, not a skip:
  every cluster of this repository is provisioned by terraform/, and a missing file would
  silently switch the checks off.
"""
from __future__ import annotations

import ast
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path


from harness.gate import workloads
from harness.gate.findings import Finding
from harness.core import parse_quantity
from harness.gate.render import ClusterRender
from harness.gate.sources import Sources, parse_yaml, resource_id
from harness.core import cache_root

TERRAFORM_DIR = "terraform"
TFVARS_DIR = f"{TERRAFORM_DIR}/clusters"
SKU_FILE = Path(__file__).with_name("sku.yaml")
SKU_FILE_REL = "harness/gate/sku.yaml"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")  # what the SKU table knows
SYSTEM_TAINT = "CriticalAddonsOnly=true:NoSchedule"

RULES = {
    "capacity-terraform": "terraform/ parses, and every cluster has terraform/clusters/<name>.tfvars naming it",
    "capacity-unknown-sku": f"every node pool's vm_size is in {SKU_FILE_REL}",
    "capacity-quota": "per flavor and resource, the sum of ClusterQueue nominal quotas <= the capacity of the user pools the flavor selects",
    "capacity-flavor-labels": "every flavor a ClusterQueue uses selects at least one user node pool (nodeLabels and taints)",
    "capacity-pod-fits-node": "every sample pod fits the allocatable of one node of a pool its flavors select",
}


# -- SKU table ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sku:
    name: str
    vcpu: int
    memory_gib: int
    gpus: int

    def node_capacity(self) -> dict[str, Decimal]:
        return {"cpu": Decimal(self.vcpu), "memory": Decimal(self.memory_gib) * 2**30, "nvidia.com/gpu": Decimal(self.gpus)}


@lru_cache(maxsize=None)
def sku_table(path: Path = SKU_FILE) -> tuple[dict[str, Sku], dict]:
    doc = parse_yaml(path.read_text())
    skus = {name: Sku(name, int(v["vcpu"]), int(v["memory_gib"]), int(v.get("gpus", 0))) for name, v in doc["skus"].items()}
    return skus, doc["aks_reservation"]


def allocatable(sku: Sku, max_pods: int, reservation: dict | None = None) -> dict[str, Decimal]:
    """Node allocatable on AKS (Kubernetes 1.29+): capacity minus kube-reserved and hard eviction."""
    r = reservation or sku_table()[1]
    c = r["cpu_millicores"]
    n = sku.vcpu
    reserved_m = c["first"] + (c["second"] if n >= 2 else 0) + c["third_fourth_each"] * max(0, min(n, 4) - 2) \
        + c["above_four_each"] * max(0, n - 4)
    total_mib = Decimal(sku.memory_gib) * 1024
    kube_mib = min(Decimal(r["memory_per_pod_mib"] * max_pods + r["memory_base_mib"]), total_mib * Decimal(str(r["memory_max_fraction"])))
    mem_mib = total_mib - kube_mib - r["eviction_hard_mib"]
    return {"cpu": (Decimal(n * 1000 - reserved_m) / 1000), "memory": mem_mib * 2**20, "nvidia.com/gpu": Decimal(sku.gpus)}


# -- Terraform ------------------------------------------------------------------------------------
class TerraformError(ValueError):
    pass


def _hcl_options():
    import hcl2

    return hcl2.SerializationOptions(strip_string_quotes=True, with_comments=False, explicit_blocks=False)


def parse_hcl(path: Path) -> dict:
    """python-hcl2's reading of a file, cached by content: its lark parser takes ~0.1 s a file,
    which would make the Terraform side the slowest part of the static gate."""
    text = path.read_text()
    key = hashlib.sha256(f"{_hcl_version()}\0{text}".encode()).hexdigest()
    cached = cache_root() / "hcl" / f"{key}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    import hcl2  # lark takes a tenth of a second to import; only a cache miss needs it
    try:
        parsed = hcl2.loads(text, serialization_options=_hcl_options())
    except Exception as err:  # lark raises several exception types
        raise TerraformError(f"{path.name}: not valid HCL: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(parsed))
    tmp.replace(cached)
    return parsed


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

    @classmethod
    def load(cls, root: Path) -> "TerraformConfig":
        cfg = cls(root)
        tf_dir = root / TERRAFORM_DIR
        for path in sorted(tf_dir.glob("*.tf")):
            rel = path.relative_to(root).as_posix()
            doc = parse_hcl(path)
            text = path.read_text()
            for entry in doc.get("variable") or []:
                cfg.variables.update(entry)
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
        return eval(compile(tree, "<hcl>", "eval"), {"__builtins__": {}, "__ref": self.lookup})  # noqa: S307 - AST checked above


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


# -- Node pools --------------------------------------------------------------------------------------
@dataclass
class Pool:
    name: str
    address: str  # Terraform address, e.g. azurerm_kubernetes_cluster_node_pool.gpu
    file: str
    line: int | None
    vm_size: str
    count: int
    max_pods: int
    labels: dict[str, str]
    taints: list[str]
    system: bool
    sku: Sku | None = None

    def where(self) -> str:
        return f"{self.file}:{self.line} {self.address} (pool {self.name}, {self.count} x {self.vm_size})"

    def capacity(self) -> dict[str, Decimal]:
        return {k: v * self.count for k, v in self.sku.node_capacity().items()} if self.sku else {}

    def node_allocatable(self) -> dict[str, Decimal]:
        return allocatable(self.sku, self.max_pods) if self.sku else {}


def _aks_labels(name: str, vm_size: str, system: bool, sku: Sku | None) -> dict[str, str]:
    """Labels AKS puts on every node of a pool (the reserved accelerator label on GPU sizes)."""
    labels = {
        "agentpool": name,
        "kubernetes.azure.com/agentpool": name,
        "kubernetes.azure.com/mode": "system" if system else "user",
        "node.kubernetes.io/instance-type": vm_size,
        "beta.kubernetes.io/instance-type": vm_size,
        "kubernetes.io/os": "linux",
    }
    if sku and sku.gpus:
        labels["accelerator"] = "nvidia"
        labels["kubernetes.azure.com/accelerator"] = "nvidia"
    return labels


def cluster_pools(cfg: TerraformConfig, tfvars: dict) -> list[Pool]:
    """Node pools of one cluster: the AKS default pool plus every azurerm_kubernetes_cluster_node_pool whose count is not 0."""
    skus = sku_table()[0]
    scope = Scope(cfg, tfvars)
    pools = []

    def build(block: Block, body: dict, system: bool) -> Pool:
        name = str(scope.resolve(body.get("name")))
        vm_size = str(scope.resolve(body.get("vm_size")))
        count = int(scope.resolve(body.get("node_count", 1)) or 0)
        max_pods = int(scope.resolve(body.get("max_pods", sku_table()[1]["max_pods_assumed"])))
        sku = skus.get(vm_size)
        labels = {**{str(k): str(v) for k, v in (scope.resolve(body.get("node_labels")) or {}).items()},
                  **_aks_labels(name, vm_size, system, sku)}
        taints = [str(t) for t in scope.resolve(body.get("node_taints")) or []]
        if system and scope.resolve(body.get("only_critical_addons_enabled")) is True:
            taints.append(SYSTEM_TAINT)
        return Pool(name, block.address, block.file, block.line, vm_size, count, max_pods, labels, taints, system, sku)

    for block in cfg.of_type("azurerm_kubernetes_cluster"):
        for body in block.body.get("default_node_pool") or []:
            pools.append(build(block, body, True))
    for block in cfg.of_type("azurerm_kubernetes_cluster_node_pool"):
        instances = int(scope.resolve(block.body["count"])) if "count" in block.body else 1
        if instances < 1:
            continue
        system = str(scope.resolve(block.body.get("mode", "User"))) == "System"
        pools.append(build(block, block.body, system))
    return pools


# -- Selection ------------------------------------------------------------------------------------------
def _taint(text: str) -> tuple[str, str | None, str]:
    kv, _, effect = text.partition(":")
    key, _, value = kv.partition("=")
    return key, (value or None), effect


def _tolerated(taint: str, tolerations: list[dict]) -> bool:
    key, value, effect = _taint(taint)
    if effect not in ("NoSchedule", "NoExecute"):
        return True
    for t in tolerations:
        if t.get("effect") and t["effect"] != effect:
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == key):
            return True
        if t.get("key") == key and (t.get("value") or None) == value:
            return True
    return False


def selects(pool: Pool, node_labels: dict, tolerations: list[dict]) -> bool:
    return all(pool.labels.get(k) == str(v) for k, v in node_labels.items()) and all(_tolerated(t, tolerations) for t in pool.taints)


def _flavor_selector(flavor: dict | None) -> tuple[dict, list[dict]]:
    spec = (flavor or {}).get("spec") or {}
    return dict(spec.get("nodeLabels") or {}), list(spec.get("tolerations") or [])


# -- Formatting ------------------------------------------------------------------------------------------
def fmt(resource: str, qty: Decimal) -> str:
    if resource == "memory":
        gi = qty / 2**30
        return f"{gi.quantize(Decimal('0.1')).normalize():f}Gi"
    return f"{qty.normalize():f}"


def _q(value) -> Decimal | None:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError):
        return None


# -- Rules -------------------------------------------------------------------------------------------------
def capacity_findings(root: Path, clusters: list[ClusterRender], sources: Sources | None = None) -> list[Finding]:
    root = Path(root).resolve()
    out: list[Finding] = []
    if not (root / TERRAFORM_DIR).is_dir():
        return [Finding(TERRAFORM_DIR, None, "", "capacity-terraform", "no terraform/ directory: node pools are unknown, so no quota can be checked",
                        "restore terraform/ (AKS, node pools, Flux extension)")]
    try:
        cfg = TerraformConfig.load(root)
    except TerraformError as err:
        return [Finding(TERRAFORM_DIR, None, "", "capacity-terraform", str(err), "fix the HCL syntax; `terraform fmt` shows where")]
    sources = sources or Sources.load(root)
    names = {c.name for c in clusters}
    tfvars_dir = root / TFVARS_DIR
    for path in sorted(tfvars_dir.glob("*.tfvars")) if tfvars_dir.is_dir() else []:
        if path.stem not in names:
            out.append(Finding(path.relative_to(root).as_posix(), None, "", "capacity-terraform",
                               f"no cluster clusters/{path.stem} for this tfvars file", "rename the file after its cluster, or add clusters/<name>"))
    for cluster in clusters:
        out += _cluster_findings(root, cfg, sources, cluster)
    return out


def _cluster_findings(root: Path, cfg: TerraformConfig, sources: Sources, cluster: ClusterRender) -> list[Finding]:
    rel = f"{TFVARS_DIR}/{cluster.name}.tfvars"
    ctx = f"cluster {cluster.name}"
    path = root / rel
    if not path.exists():
        return [Finding(rel, None, f"cluster/{cluster.name}", "capacity-terraform",
                        f"cluster {cluster.name} has no {rel}: its node pools are unknown, so its quotas cannot be checked",
                        f"add {rel} with cluster_name = \"{cluster.name}\", gpu_vm_size and gpu_node_count", ctx)]
    try:
        tfvars = load_tfvars(path)
        if tfvars.get("cluster_name") != cluster.name:
            return [Finding(rel, None, f"cluster/{cluster.name}", "capacity-terraform",
                            f"cluster_name is {tfvars.get('cluster_name')!r}, not {cluster.name!r}: Flux would reconcile another folder",
                            f"set cluster_name = \"{cluster.name}\"", ctx)]
        pools = cluster_pools(cfg, tfvars)
    except TerraformError as err:
        return [Finding(rel, None, f"cluster/{cluster.name}", "capacity-terraform", str(err), "keep pool settings to var./local. references and literals", ctx)]

    out = []
    for p in pools:
        if p.sku is None:
            out.append(Finding(rel, None, f"cluster/{cluster.name}", "capacity-unknown-sku",
                               f"{p.where()}: vm_size {p.vm_size} is not in {SKU_FILE_REL}, so its capacity is unknown",
                               f"add {p.vm_size} (vCPU, memory, GPUs, allocatable) to {SKU_FILE_REL}, citing the Azure size page", ctx))
    known = [p for p in pools if p.sku]
    objects = [o for _, o in cluster.applied()]
    flavors = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ResourceFlavor"}
    cqs = [o for o in objects if o.get("kind") == "ClusterQueue"]

    def locate(obj):
        return sources.locate(obj, (f"clusters/{cluster.name}/", "overlays/", "base/", "components/"))

    # Flavors the queues rely on must select some user pool.
    used = sorted({f.get("name") for cq in cqs for g in (cq.get("spec") or {}).get("resourceGroups") or [] for f in g.get("flavors") or []} & set(flavors))
    for fname in used:
        labels, tolerations = _flavor_selector(flavors[fname])
        if not any(selects(p, labels, tolerations) for p in known) and known:
            file, line = locate(flavors[fname])
            have = "; ".join(f"{p.name} has " + ", ".join(f"{k}={p.labels.get(k, '<absent>')}" for k in labels)
                             + (f", taints {', '.join(p.taints)}" if p.taints else "") for p in known) or "no pools"
            out.append(Finding(file, line, resource_id(flavors[fname]), "capacity-flavor-labels",
                               f"cluster {cluster.name}: flavor {fname} nodeLabels {labels or '{}'} select no user node pool in {rel} "
                               f"(pools: {have}); workloads admitted to it would pend forever",
                               "use labels the pools carry (AKS sets accelerator=nvidia on GPU nodes and agentpool=<name> on all), "
                               "or add node_labels to the pool in terraform/node_pools.tf", ctx))

    # Quota per flavor and resource against the pools the flavor selects.
    declared: dict[tuple[str, str], list[tuple[dict, Decimal]]] = {}
    for cq in cqs:
        for g in (cq.get("spec") or {}).get("resourceGroups") or []:
            for f in g.get("flavors") or []:
                for r in f.get("resources") or []:
                    q = _q(r.get("nominalQuota", 0))
                    if q is not None and r.get("name") in RESOURCES:
                        declared.setdefault((f.get("name"), r["name"]), []).append((cq, q))
    for (fname, res), entries in sorted(declared.items(), key=lambda kv: kv[0]):
        labels, tolerations = _flavor_selector(flavors.get(fname))
        selected = [p for p in known if selects(p, labels, tolerations)]
        total = sum((q for _, q in entries), Decimal(0))
        cap = sum((p.capacity()[res] for p in selected), Decimal(0))
        if total > cap:
            per_queue = ", ".join(f"ClusterQueue {cq['metadata']['name']} {fmt(res, q)}" for cq, q in entries)
            pools_text = "; ".join(f"{p.where()}: {fmt(res, p.capacity()[res])}" for p in selected) or f"no pool in {rel} matches the flavor"
            for cq, _q_ in entries:
                file, line = locate(cq)
                out.append(Finding(file, line, resource_id(cq), "capacity-quota",
                                   f"cluster {cluster.name}: ClusterQueue {cq['metadata']['name']} flavor {fname} {res}: declared nominal quota "
                                   f"{fmt(res, total)} in total ({per_queue}) exceeds the real capacity {fmt(res, cap)} of the pools the flavor selects "
                                   f"({pools_text}; tfvars {rel}); admitted workloads would pend forever",
                                   f"use the components/gpu-sku/<sku> component that matches gpu_vm_size in {rel} "
                                   f"(clusters/{cluster.name}/queues/kustomization.yaml), or grow the pool", ctx))

    out += _pod_fit_findings(root, cluster, known, flavors, objects, rel, ctx)
    return out


def _pod_fit_findings(root: Path, cluster: ClusterRender, pools: list[Pool], flavors: dict, objects: list[dict], rel: str, ctx: str) -> list[Finding]:
    out = []
    samples_path = root / "clusters" / cluster.name / "samples.yaml"
    if not samples_path.exists() or not pools:
        return out
    lqs = {((o.get("metadata") or {}).get("namespace"), o["metadata"]["name"]): o for o in objects if o.get("kind") == "LocalQueue"}
    cqs = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ClusterQueue"}
    for entry in parse_yaml(samples_path.read_text()) or []:
        try:
            job = workloads.render(entry["sample"], entry["queue"], {k: str(v) for k, v in (entry.get("vars") or {}).items()}, root)
        except (workloads.WorkloadError, KeyError, TypeError):
            continue  # sample-render reports it
        meta = job.get("metadata") or {}
        lq = lqs.get((meta.get("namespace", "default"), (meta.get("labels") or {}).get(QUEUE_LABEL)))
        cq = cqs.get(((lq or {}).get("spec") or {}).get("clusterQueue"))
        if cq is None:
            continue  # sample-queue reports it
        groups = (cq.get("spec") or {}).get("resourceGroups") or []
        wfile = f"{workloads.WORKLOADS_DIR}/{entry['sample']}.yaml"
        for set_name, count, requests in workloads.pod_sets(job):
            need = {r: q for r, q in requests.items() if q > 0}
            if count < 1 or not need:
                continue
            pod_tolerations = _pod_tolerations(job, set_name)
            relevant = [g for g in groups if set(g.get("coveredResources") or []) & set(need)]
            choices = [[f.get("name") for f in g.get("flavors") or []] for g in relevant]
            best, fits = None, False
            for combo in itertools.product(*choices) if choices else [()]:
                labels, tolerations = {}, list(pod_tolerations)
                for fname in combo:
                    fl, ft = _flavor_selector(flavors.get(fname))
                    labels.update(fl)
                    tolerations += ft
                for p in pools:
                    if not selects(p, labels, tolerations):
                        continue
                    alloc = p.node_allocatable()
                    if all(need[r] <= alloc[r] for r in need if r in alloc):
                        fits = True
                        break
                    best = best or (p, alloc, combo)
                if fits:
                    break
            if fits:
                continue
            asked = ", ".join(f"{r} {fmt(r, q)}" for r, q in sorted(need.items()))
            if best:
                p, alloc, combo = best
                offer = (f"the largest it can get is one node of {p.where()} with allocatable "
                         + ", ".join(f"{r} {fmt(r, alloc[r])}" for r in sorted(need) if r in alloc)
                         + f" (flavors {', '.join(combo)})")
            else:
                offer = f"no node pool in {rel} is selected by its flavors ({', '.join(sorted({f for c in choices for f in c}))})"
            out.append(Finding(wfile, None, resource_id(job), "capacity-pod-fits-node",
                               f"cluster {cluster.name}: ClusterQueue {cq['metadata']['name']}: pod {set_name} of sample {entry['sample']} requests {asked}, "
                               f"but {offer}; Kueue would admit it and the pod would stay Pending",
                               "shrink the pod's requests, or pick a larger gpu_vm_size in the cluster's tfvars (with its gpu-sku component)",
                               f"{ctx}, sample {entry['sample']} on {entry['queue']}"))
    return out


def _pod_tolerations(job: dict, set_name: str) -> list[dict]:
    cluster = (job.get("spec") or {}).get("rayClusterSpec") or {}
    if set_name == "head":
        template = (cluster.get("headGroupSpec") or {}).get("template")
    elif set_name == "submitter":
        template = (job.get("spec") or {}).get("submitterPodTemplate")
    else:
        template = next((g.get("template") for g in cluster.get("workerGroupSpecs") or [] if g.get("groupName") == set_name), None)
    return list(((template or {}).get("spec") or {}).get("tolerations") or [])
