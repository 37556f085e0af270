"""Capacity checks: the queues' declared quota and the sample pods against the node pools Terraform creates.

Kueue admits on declared quota, not on real nodes: a quota larger than the pools lets a
workload be admitted and then pend forever. The pools come from terraform/ (harness.gate.terraform)
and each cluster's tfvars, sized from harness/gate/sku.yaml (harness.gate.pools), and are compared
with the ResourceFlavors and ClusterQueues Flux applies on that cluster and with its sample RayJobs. Decisions (see RULES):
- Placement follows Kueue and the scheduler (harness.gate.placement): a sample's pod set gets the
  flavors Kueue's own flavor assigner gives it (one per resource group it requests; a flavor whose
  nodeTaints the pod does not tolerate is skipped), their nodeLabels become its nodeSelector and their
  tolerations are added, and a pool's taints must be tolerated. The system pool counts only for pods tolerating its taint.
- A flavor's capacity is the pools its pods can land on: alone, or together with any flavor of
  the ClusterQueue's other resource groups, with the flavors' tolerations or those the samples' and applied Ray
  objects' pod templates write (a pool reached only with the latter: a warning at the flavor). With the GPU pool tainted and flavor `gpu`
  tolerating it, `default`'s cpu/memory quota is backed by the CPU pool (CPU-only pods) and by the
  GPU pool (GPU pods, which carry flavor gpu's toleration): both pools count, each once.
- Quota sums per resource are compared with what the pools' nodes give pods (node allocatable x nodes: vCPU and memory less
  AKS's kube-reserved and eviction threshold, GPUs, less the requests of the rendered DaemonSets' pods on each node:
  harness.gate.daemonsets), what kube-scheduler fits pods against,
  for every flavor and for every set of flavors that share pools (a pool is counted once for
  the set, so two flavors cannot both claim it in full); only the smallest failing set is reported.
  Above that, the quota cannot be met whatever runs on the nodes.
- Autoscaling pools count at max_count (above it: error); above the min_count capacity only,
  jobs wait for scale-up (warning, capacity-scale-up). Pods are compared with one node's
  allocatable (after the AKS reservation), because that is what the scheduler sees.
- Root causes are reported once: a pool with 0 nodes (capacity-empty-pool, at the line that
  sets the count; the cause of a quota only when nothing else backs it, or when one node of it would and a flavor
  singles it out by its labels or taints: an optional pool left at 0 is no cause of a quota written too high), a flavor that selects no pool (capacity-flavor-labels) or quotas from the
  gpu-sku component of another VM size (capacity-sku-component, harness.gate.sku_component)
  lists the quotas, flavors and sample pods that depend on it instead of one finding each (a flavor of zero quota in
  every queue, staged for later, admits nothing: none). A VM size missing from sku.yaml gives only capacity-unknown-sku.
- A cluster in clusters/ without terraform/clusters/<name>.tfvars is a finding, not a skip: every cluster of this
  repository is provisioned by terraform/, and a missing file would silently switch the checks off.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from harness.core import format_quantity
from harness.gate import assumed, chart_render, daemonsets, fit_hints, kueue_fit, node_settings, placement, podsets, quota, sku_component, substitution
from harness.gate.origin import node_at, segments
from harness.gate.writers import Writers, Written
from harness.gate.findings import Finding
from harness.gate.gpu_driver import gpu_driver_findings
from harness.gate.placement import Problem, flavors_named, follow_ons, one_per_line
from harness.gate.matching import taint_text
from harness.gate.pools import Pool, cluster_pools
from harness.gate.render import ClusterRender
from harness.gate.quota import FlavorCapacity
from harness.gate.sku import SKU_FILE_REL
from harness.gate.sources import Sources, as_map, name_key, resource_id
from harness.gate.config import CONFIG_FILE, DEFAULTS, GateConfig
from harness.gate.terraform import TERRAFORM_DIR, TerraformConfig, TerraformError, load_tfvars, tfvars_cluster, tfvars_paths

RULES = {
    "capacity-terraform": "terraform/ parses, and every cluster has terraform/clusters/<name>.tfvars (or .tfvars.json) naming it",
    "capacity-unknown-sku": f"every node pool's vm_size is in {SKU_FILE_REL} or under `skus:` of the gate configuration ({CONFIG_FILE})",
    "capacity-autoscaling": "autoscaling pools use the pinned azurerm version's attribute names and set min_count <= max_count, min_count >= 1 on a "
                            "system pool (harness/gate/autoscaling.py), and node_count (when set) within them",
    "capacity-quota": "per resource, the nominal quotas of a flavor (or of flavors sharing pools) <= the allocatable (what kube-scheduler fits pods against: vCPU and memory less AKS's reservation, GPUs) of the pools their pods can land on",
    "capacity-scale-up": "warning: quotas and sample pod sets fit the autoscaling pools at min_count (else admitted jobs wait for scale-up)",
    "capacity-empty-pool": "no pool the queues or samples rely on has 0 nodes (reported once, at the node count, with what depends on it)",
    "capacity-flavor-labels": "every flavor a ClusterQueue uses selects at least one node pool (nodeLabels, nodeTaints, tolerations; a warning "
                              "when only the tolerations the pod templates write themselves let its pods onto the pool)",
    "capacity-pod-placement": "every sample pod set gets a flavor for each resource group it requests (Kueue's own flavor assigner, "
                              "as sample-fits) and the flavors it gets land it on some node pool, with nodeLabels its RuntimeClass's "
                              "scheduling.nodeSelector does not contradict (the RuntimeClass admission refuses such pods)",
    "capacity-pod-fits-node": "every sample pod fits the allocatable of one node of a pool it can land on",
    "capacity-pod-set-nodes": "every sample pod set's pods fit at once on the nodes (at max_count) of the pools they can land on",
    "capacity-pods-scheduled": "kube-scheduler's own plugins (tools/kubecheck) place every pod of a sample, all of them together, on the "
                               "cluster's nodes (pod (anti-)affinity, topology spread, host ports, resources left by the job's other pods)",
    "capacity-pod-os": "warning: a sample pod set that the scheduler may also place on a Windows pool's nodes (kubernetes.io/os=windows, "
                       "which AKS does not taint) selects kubernetes.io/os: linux; Ray's Linux images cannot start there",
}


# -- Rules -------------------------------------------------------------------------------------------------
def capacity_findings(root: Path, clusters: list[ClusterRender], sources: Sources | None = None,
                      gate_config: GateConfig = DEFAULTS, fits: dict[str, kueue_fit.Fits] | None = None,
                      refused: frozenset[str] = frozenset(), writers: Writers | None = None) -> list[Finding]:
    """`fits`: per cluster name, Kueue's flavor assigner's answers for its samples (sample_rules), else asked here;
    `refused`: resource ids of the objects the apiserver or Kueue's webhook refuses (they never exist: no quota);
    `writers`: the patch probe's answers (which patch writes the quota a queue ends up with)."""
    root = Path(root).resolve()
    out: list[Finding] = []
    if not gate_config.terraform:
        return out  # the configuration says no Terraform provisions these clusters
    if not (root / TERRAFORM_DIR).is_dir():
        return [Finding(TERRAFORM_DIR, None, "", "capacity-terraform", "no terraform/ directory: node pools are unknown, so no quota can be checked",
                        f"restore terraform/ (AKS, node pools, Flux extension), or set `terraform: null` in {CONFIG_FILE} "
                        "when no Terraform of this repository provisions the clusters")]
    try:
        cfg = TerraformConfig.load(root)
    except TerraformError as err:
        return [Finding(err.file or TERRAFORM_DIR, err.line, "", "capacity-terraform", str(err), "fix the HCL syntax; `terraform fmt` shows where")]
    sources = sources or Sources.load(root)
    names = {c.name for c in clusters}
    tfvars_dir = root / gate_config.tfvars
    for path in tfvars_paths(tfvars_dir) if tfvars_dir.is_dir() else []:
        if tfvars_cluster(path) not in names:
            out.append(Finding(path.relative_to(root).as_posix(), None, "", "capacity-terraform",
                               f"no cluster {gate_config.clusters}/{tfvars_cluster(path)} for this tfvars file",
                               f"rename the file after its cluster, or add {gate_config.clusters}/<name>"))
    shared: dict[Finding, tuple[str, str, str]] = {}  # an empty pool's finding -> (cluster, the pool's part, what depends on it)
    for cluster in clusters:
        out += _cluster_findings(root, cfg, sources, cluster, gate_config, (fits or {}).get(cluster.name), refused, writers or Writers(), shared)
    return one_per_line(out, shared)


def _cluster_findings(root: Path, cfg: TerraformConfig, sources: Sources, cluster: ClusterRender, gate_config: GateConfig,
                      fits: kueue_fit.Fits | None, refused: frozenset[str], writers: Writers, shared: dict | None = None) -> list[Finding]:
    rel = gate_config.tfvars_file(cluster.name, root)
    ctx = f"cluster {cluster.name}"
    path = root / rel
    if not path.exists():
        return [Finding(rel, None, f"cluster/{cluster.name}", "capacity-terraform",
                        f"cluster {cluster.name} has no {rel}: its node pools are unknown, so its quotas cannot be checked",
                        f"add {rel} with cluster_name = \"{cluster.name}\", gpu_vm_size and gpu_node_count", ctx)]
    try:
        tfvars = load_tfvars(path, root)
        if tfvars.get("cluster_name") != cluster.name:
            return [Finding(rel, tfvars.lines.get("cluster_name"), f"cluster/{cluster.name}", "capacity-terraform",
                            f"cluster_name is {tfvars.get('cluster_name')!r}, not {cluster.name!r}: Flux would reconcile another folder",
                            f"set cluster_name = \"{cluster.name}\"", ctx)]
        pools = cluster_pools(cfg, tfvars, rel)
    except TerraformError as err:  # it knows where the setting is written
        if getattr(err, "diagnostic", False):
            return []  # Terraform's own error in a pool setting: terraform-expression reports it, at the expression
        return [Finding(err.file or rel, err.line, getattr(err, "resource", "") or f"cluster/{cluster.name}", getattr(err, "rule", "") or "capacity-terraform", str(err),
                        getattr(err, "hint", "") or "give pool settings values known before apply (variables, locals, literals, functions of them); counts are whole numbers", ctx)]

    out = [Finding(file, line, p.address, "capacity-autoscaling", message, hint, ctx) for p in pools for file, line, message, hint in p.notes]
    locate = lambda obj, field: sources.locate(obj, _prefer(gate_config, cluster.name), field=field)  # noqa: E731
    pools, assumptions = assumed.apply(root, cluster, pools, locate, ctx)
    out += gpu_driver_findings(root, cluster, pools, ctx, gate_config, locate) + node_settings.node_setting_findings(pools, ctx)
    for p in pools:
        if p.sku is None and p.vm_size not in gate_config.skus_refused:  # (a size the refused file adds: its gate-config finding says why)
            at = p.vm_size_origin
            out.append(Finding(at.file if at else rel, at.line if at else None, f"cluster/{cluster.name}", "capacity-unknown-sku",
                               f"{p.where()}: vm_size {p.vm_size} is neither in the gate's table {SKU_FILE_REL} nor under `skus:` of "
                               f"{CONFIG_FILE}, so its capacity is unknown",
                               f"add it to `skus:` of {CONFIG_FILE} at the repository's root, as the Azure size page gives it: "
                               f"`{p.vm_size}: {{vcpu: N, memory_gib: N, gpus: N}}` (the shape of {SKU_FILE_REL}'s entries; "
                               "arch: arm64 for an Arm size)", ctx))
    if any(p.sku is None for p in pools) or not pools:
        return out  # the unknown size is the root cause: every capacity below would be a guess
    check = _Check(root, cluster, sources, pools, rel, ctx, gate_config, fits, refused, writers)
    check.shared = shared if shared is not None else {}
    return out + assumptions + check.findings()


def _prefer(config: GateConfig, cluster: str) -> tuple[str, ...]:  # where a cluster's objects are looked for first
    return (f"{config.clusters}/{cluster}/", *(o + "/" for o in config.queue_overlays), "overlays/", "base/", "components/")


class _Check:
    """The quota, flavor and sample checks of one cluster, folded under their root causes."""

    def __init__(self, root: Path, cluster: ClusterRender, sources: Sources, pools: list[Pool], rel: str, ctx: str,
                 gate_config: GateConfig = DEFAULTS, fits: kueue_fit.Fits | None = None, refused: frozenset[str] = frozenset(),
                 writers: Writers | None = None):
        self.root, self.cluster, self.sources, self.pools, self.rel, self.ctx = root, cluster, sources, pools, rel, ctx
        self.config, self.fits, self.writers = gate_config, fits, writers or Writers()
        self.owner = {id(o): b for b, o in cluster.applied()}  # the layer that applies each object
        self.shared: dict[Finding, tuple] = {}  # capacity_findings' `shared`: empty-pool findings it may fold across clusters
        self.objects = [o for _, o in cluster.applied() if resource_id(o) not in refused]
        self.pools = pools = daemonsets.on_pools([*self.objects, *(o for _, o in chart_render.chart_objects(gate_config, root, cluster))], pools)  # (daemonsets)
        self.flavors = {name_key(as_map(o.get("metadata")).get("name")): o for o in self.objects if o.get("kind") == "ResourceFlavor"}
        self.cqs = [o for o in self.objects if o.get("kind") == "ClusterQueue"]
        # The tolerations the samples' and the applied Ray objects' pod templates write themselves count for the flavors'
        # reach; `bare` is the reach of pods with only what the flavors give them (a pool reached only with the first: a warning).
        self.pods = placement.pod_tolerations([*self.objects, *podsets.sample_jobs(root, cluster, gate_config)])
        self.reach = placement.flavor_reach(self.objects, pools, self.pods)
        self.bare = placement.flavor_reach(self.objects, pools) if self.pods else self.reach
        self.capacities = quota.capacities(self.objects, pools, self.reach)

    def locate(self, obj: dict, field: str | None = None) -> tuple[str, int | None]:
        return self.sources.locate(obj, _prefer(self.config, self.cluster.name), field=field)

    def value_at(self, obj: dict, field: str | None) -> tuple[str, int | None, str | None, str]:
        """Where the value at `field` of `obj` that the cluster ends up with is set: the last patch selecting it that writes
        the field (harness.gate.writers), else its document; for a ${VAR}, where Flux takes the variable from for the layer
        that applies it. With the variable's name (None when no ${VAR}), and where its ${VAR} is written when Flux sets it elsewhere ("")."""
        build = self.owner.get(id(obj))
        written = self.writers.at(build, obj, segments(field)) if field else None
        file, line = self.sources.locate(obj, _prefer(self.config, self.cluster.name), field=field, written=written)
        text = written.value if isinstance(written, Written) else None
        if text is None and field:
            doc = self.sources.locate(obj, _prefer(self.config, self.cluster.name))
            node = node_at(self.root, doc[0], doc[1], segments(field))[1] if doc[1] else None
            text = node.value if node is not None and isinstance(node.value, str) else None
        found = substitution.variable_origin(self.root, self.cluster, build, text, self.sources.locate,
                                             (self.config.variables_file(self.cluster.name), f"{self.config.clusters}/{self.cluster.name}/")) \
            if build is not None and text and "${" in text else None
        if found and found[0]:
            return found[0], found[1], found[2], f"{file}:{line}"
        return file, line, found[2] if found else None, ""

    def findings(self) -> list[Finding]:
        funded = {fc.flavor for fc in self.capacities if fc.nominal_total > 0}
        used = sorted({n for cq in self.cqs for _, names in placement.groups_of(cq) for n in names} & set(self.flavors) & funded)
        roots: dict[tuple[str, str], list[Problem]] = {}
        problems: list[Problem] = []
        for fname in used:
            hit = [pv[0] for (f, _), r in self.reach.items() if f == fname for pv in r.values()]
            if not hit:
                roots[("flavor", fname)] = []
            elif not any(p.count > 0 for p in hit):
                problems.append(Problem([self._flavor_finding(fname, [])], frozenset(("pool", p.address) for p in hit), flavor=fname))
            else:
                problems += self._own_tolerations(fname)
        unreachable = {k[1] for k in roots}
        quotas, scale = self._quota_problems(unreachable)
        samples, sample_scale = podsets.sample_problems(self.root, self.cluster, self.objects, self.pools, self.rel, self.ctx,
                                                        unreachable, self.locate, self.config, self.fits)
        quoted = {k for q in quotas for k in q.causes if k[0] == "resource"}  # a resource no node offers is the cause only with its quota
        samples = [replace(p, causes=frozenset(k for k in p.causes if k[0] != "resource" or k in quoted)) for p in samples]
        out = self._fold(problems + quotas + samples, roots, self._root_finding)
        return out + self._fold(scale + sample_scale, {}, self._scale_finding)

    # -- quotas ------------------------------------------------------------------------------------------
    def _quota_problems(self, unreachable: set[str]) -> tuple[list[Problem], list[Problem]]:
        errors, warnings = [], []
        by_res: dict[str, list[FlavorCapacity]] = {}
        for fc in self.capacities:
            if fc.flavor in self.flavors and fc.nominal_total > 0:
                by_res.setdefault(fc.resource, []).append(fc)
        for res, items in sorted(by_res.items()):
            failed: list[frozenset] = []
            warned: list[frozenset] = []
            for subset in quota.subsets(items):
                names = frozenset(fc.flavor for fc in subset)
                if any(f <= names for f in failed):
                    continue
                pools = list({p.address: p for fc in subset for p in fc.pools}.values())
                total = sum((fc.nominal_total for fc in subset), Decimal(0))
                cap = sum((p.allocatable().get(res, Decimal(0)) for p in pools), Decimal(0))
                if total > cap:
                    failed.append(names)
                    # An empty pool is the cause when nothing else backs the quota, or when one node of it would and a
                    # flavor singles it out (the queues rely on it); else the quota written is (an optional pool left at 0).
                    empty = {p.address: p for fc in subset for p in fc.empty}.values()
                    causes = {("pool", p.address) for p in empty
                              if not pools or (cap + {**p.node_allocatable(), **p.node_capacity()}.get(res, Decimal(0)) >= total and self._singled_out(p, subset))}
                    causes |= {("flavor", n) for n in names & unreachable}
                    errors.append(self._quota_problem(subset, res, total, cap, pools, frozenset(causes)))
                elif total > sum((p.allocatable(p.min_nodes).get(res, Decimal(0)) for p in pools), Decimal(0)) and not any(w <= names for w in warned):
                    warned.append(names)
                    mincap = sum((p.allocatable(p.min_nodes).get(res, Decimal(0)) for p in pools), Decimal(0))
                    warnings.append(Problem([], frozenset(("scale", p.address) for p in pools if p.min_nodes < p.count),
                                            f"{flavors_named(names)} {res} quota {format_quantity(res, total)} needs more than the "
                                            f"{format_quantity(res, mincap)} at min_count (up to {format_quantity(res, cap)})"))
        return errors, warnings

    def _singled_out(self, pool: Pool, subset: list[FlavorCapacity]) -> bool:
        """Whether a flavor of `subset` is meant for `pool`: its pods reach the pool through a taint it carries, or the
        flavor's nodeLabels leave some pool out (a flavor without labels, such as `default`, takes any untainted pool)."""
        flavors = placement.flavors_of(list(self.flavors.values()))
        return bool(pool.taints) or any(
            fl.labels and any(any(p.labels.get(k) != v for k, v in fl.labels.items()) for p in self.pools)
            for fl in (flavors.get(fc.flavor) for fc in subset if pool.address in fc.via) if fl)

    def _quota_problem(self, subset: list[FlavorCapacity], res: str, total: Decimal, cap: Decimal, pools: list[Pool], causes: frozenset) -> Problem:
        quotas = [(cq, q) for fc in subset for cq, q in fc.quotas]
        per_queue = ", ".join(f"{cq['kind']} {cq['metadata']['name']} {format_quantity(res, q)}" for cq, q in quotas)
        via = subset[0].via if len(subset) == 1 else {}

        def with_(p: Pool) -> str:
            partners = sorted(v for v in via.get(p.address, ()) if v != "alone")
            return f" (pods with {' or '.join(partners)})" if partners and "alone" not in via.get(p.address, ()) else ""
        pools_offer = any(res in p.node_allocatable() for p in self.pools)  # else no node advertises it: the resource is the cause
        pools_text = "; ".join(f"{p.where()}: {format_quantity(res, p.allocatable().get(res, Decimal(0)))} allocatable{with_(p)}" for p in pools) or f"no pool in {self.rel} matches"
        scaled = " at max_count" if any(p.autoscaled for p in pools) else ""
        who = f"flavor {subset[0].flavor}" if len(subset) == 1 else f"flavors {', '.join(sorted(fc.flavor for fc in subset))}"
        whose = "the pools the flavor's pods can land on" if len(subset) == 1 else "the pools these flavors share"
        at: dict[tuple[str, int | None], list[dict]] = {}  # where each quota is set -> the ClusterQueues it sizes
        variables: dict[tuple[str, int | None], tuple[str | None, str]] = {}  # -> (the ${VAR} Flux sets there, where it is written)
        for cq in {id(cq): cq for cq, _ in quotas}.values():
            file, line, var, written = self.value_at(cq, quota.quota_field(cq, subset, res))
            at.setdefault((file, line), []).append(cq)
            variables[(file, line)] = (var, written)
        findings = [Finding(file, line, resource_id(cqs[0]), "capacity-quota",
                            f"cluster {self.cluster.name}: {' and '.join(kinds := sorted({c['kind'] for c in cqs}))}{'s' * (len(cqs) > len(kinds) == 1)} "
                            f"{', '.join(cq['metadata']['name'] for cq in cqs)} {who} {res}: declared nominal quota "
                            f"{format_quantity(res, total)} in total ({per_queue}) exceeds the allocatable{scaled} "
                            f"{format_quantity(res, cap)} of {whose} ({pools_text}; tfvars {self.rel}); admitted workloads would pend forever",
                            (fit_hints.quota_hint(res, cap, self.rel, *variables[(file, line)]) if pools_offer else fit_hints.missing_resource(res, self.pools, 'quota')) + fit_hints.tainted_out(
                                self.pools, pools, [placement.flavors_of(list(self.flavors.values()))[fc.flavor] for fc in subset], res),
                            self.ctx) for (file, line), cqs in at.items()]
        wrong = sku_component.wrong_component(self.root, [f.file for f in findings], pools)
        if len(findings) > 1:  # one total, written in several places: one finding where most of it is, naming the others
            share = {loc: sum((q for holder, q in quotas if any(holder is c for c in cqs)), Decimal(0)) for loc, cqs in at.items()}
            findings.sort(key=lambda f: -share[(f.file, f.line)])
            others = ", ".join(f"{f.location()} ({f.resource})" for f in findings[1:])
            findings = [replace(findings[0], message=f"{findings[0].message}; the other quotas of this total are written at {others}")]
        causes |= ({("component", *wrong)} if wrong else set()) | ({("resource", res)} if not pools_offer else set())
        backing = "no capacity" if cap == 0 else f"only {format_quantity(res, cap)}" + ("" if wrong else " on the other pools")
        return Problem(findings, causes, f"the {res} quota {format_quantity(res, total)} of {flavors_named(fc.flavor for fc in subset)} ({per_queue}) has {backing} behind it")

    # -- root causes -------------------------------------------------------------------------------------
    def _fold(self, problems: list[Problem], roots: dict, make) -> list[Finding]:
        """Each problem with causes goes under one root (flavor roots first, then greedily the
        cause that covers most); the rest are reported as they are."""
        out = [f for p in problems if not p.causes for f in p.findings]
        pending = [p for p in problems if p.causes]
        for p in pending:
            flavor_roots = sorted(k for k in p.causes if k in roots)
            if flavor_roots:
                roots[flavor_roots[0]].append(p)
        pending = [p for p in pending if not any(k in roots for k in p.causes)]
        while pending:
            counts = Counter(k for p in pending for k in p.causes)
            key = max(sorted(counts), key=lambda k: counts[k])
            roots[key] = [p for p in pending if key in p.causes]
            pending = [p for p in pending if key not in p.causes]
        return out + [make(key, covered) for key, covered in roots.items()]

    def _pool(self, address: str) -> Pool:
        return next(p for p in self.pools if p.address == address)

    def _root_finding(self, key: tuple[str, str], covered: list[Problem]) -> Finding:
        if key[0] == "flavor":
            return self._flavor_finding(key[1], follow_ons(covered))
        if key[0] == "resource":  # the quota of a resource no node advertises, with the sample pods that request it
            root = next(p for p in covered if p.summary and p.findings)
            rest = follow_ons([p for p in covered if p is not root])
            return replace(root.findings[0], message=root.findings[0].message + (f"; so {'; '.join(rest)}" if rest else ""))
        if key[0] == "component":
            dirs = [self.cluster.entry.dir, *(b.dir for b in self.cluster.flux), *self.config.queue_overlays]
            return sku_component.root_finding(self.root, self.cluster, dirs, *key[1:3], self.pools, follow_ons(covered), self.ctx, self.sources.locate)
        pool = self._pool(key[1])
        origin = pool.count_origin
        file, line = (origin.file, origin.line) if origin else (pool.file, pool.line)
        said = f"{origin.text} at {origin.where()}" if origin else "count 0"
        head, tail = f"{pool.where()} has no nodes ({said})", "; ".join(follow_ons(covered))
        more = " (or autoscale the pool with max_count >= 1); to retire the pool, also remove the quotas and samples listed here"
        default = origin is not None and origin.default
        found = Finding(file, line, pool.address, "capacity-empty-pool",
                        f"cluster {self.cluster.name}: {head}, but the queues rely on it: {tail}; Kueue would admit workloads whose pods can never run",
                        (f"set {origin.name} = 1 (or more) in {self.rel} for this cluster (the default at {origin.where()} is every "
                         "cluster's)" if default else f"set {origin.name if origin else 'the node count'} to 1 or more in {file}") + more, self.ctx)
        self.shared[found] = (self.cluster.name, head, tail,
                              (f"set {origin.name} = 1 (or more) in the tfvars of each cluster named ({self.config.tfvars}/<cluster>.tfvars; "
                               f"the default at {origin.where()} is every cluster's)" if default else found.hint.removesuffix(more)) + more)
        return found

    def _scale_finding(self, key: tuple[str, str], covered: list[Problem]) -> Finding:
        pool = self._pool(key[1])
        origin = pool.min_origin
        file, line = (origin.file, origin.line) if origin else (pool.file, pool.line)
        return Finding(file, line, pool.address, "capacity-scale-up",
                       f"cluster {self.cluster.name}: {pool.where()} keeps {pool.min_nodes} node(s) when idle"
                       + (f" ({origin.text})" if origin else "") + ": " + "; ".join(follow_ons(covered, "need more nodes than that"))
                       + "; admitted jobs wait for the autoscaler to add nodes",
                       f"raise {origin.name if origin else 'min_count'} in {file} if admitted jobs must start at once; otherwise none needed",
                       self.ctx, severity="warning")

    def _own_tolerations(self, fname: str) -> list[Problem]:
        """A warning at the flavor when the pools with nodes its pods land on are reached only with the tolerations the
        pods' templates write themselves: Kueue admits any pod to the flavor, and those without the toleration stay Pending."""
        pools = lambda reach: {a: pv[0] for (f, _), r in reach.items() if f == fname for a, pv in r.items() if pv[0].count > 0}  # noqa: E731
        only = [p for a, p in pools(self.reach).items() if a not in pools(self.bare)]
        if not only or pools(self.bare):
            return []
        obj = self.flavors[fname]
        labels = placement.flavors_of([obj])[fname].labels
        file, line = self.locate(obj, f"spec.nodeLabels[{next(iter(labels))}]" if labels else None)
        taints = sorted({t for p in only for t in p.taints})
        return [Problem([Finding(file, line, resource_id(obj), "capacity-flavor-labels",
                                 f"cluster {self.cluster.name}: flavor {fname} lands pods on {', '.join(p.where() for p in only)} only "
                                 f"with the tolerations of its taints ({', '.join(taints)}) that the pod templates write themselves (or their RuntimeClass "
                                 "adds), "
                                 "not through the flavor: Kueue admits any pod to the flavor, and one without that toleration would stay Pending",
                                 f"declare the taint on the flavor: spec.nodeTaints [{', '.join(taints)}] (Kueue then admits to it only pods "
                                 "that tolerate it) or spec.tolerations (Kueue adds them to every pod it admits to the flavor)",
                                 self.ctx, severity="warning")])]

    def _flavor_finding(self, fname: str, follow_ons: list[str]) -> Finding:
        obj = self.flavors[fname]
        fl = placement.flavors_of([obj])[fname]
        # where it selects: the first label no pool with nodes carries with that value (else the first label)
        unmet = next((k for k, v in fl.labels.items() if not any(p.labels.get(k) == v for p in self.pools if p.count > 0)), None)
        file, line = self.locate(obj, f"spec.nodeLabels[{unmet or next(iter(fl.labels))}]" if fl.labels else None)
        have = "; ".join(f"{p.name} has " + ", ".join(f"{k}={p.labels.get(k, '<absent>')}" for k in fl.labels)
                         + (f"{', ' if fl.labels else ''}taints {', '.join(p.taints)}" if p.taints else "")
                         + (" (0 nodes)" if p.count == 0 else "") + (" (Windows)" * (not p.linux)) for p in self.pools) or "no pools"
        spec = f"nodeLabels {fl.labels or '{}'}" + (f", nodeTaints {', '.join(taint_text(t) for t in fl.taints)}" if fl.taints else "") \
            + (f", {len(fl.tolerations)} toleration(s)" if fl.tolerations else "")
        more = f"; so {'; '.join(follow_ons)}" if follow_ons else ""
        return Finding(file, line, resource_id(obj), "capacity-flavor-labels",
                       f"cluster {self.cluster.name}: flavor {fname} ({spec}) selects no node pool with nodes in {self.rel}, alone or with the "
                       f"flavors of the ClusterQueues' other resource groups (pools: {have}){more}; workloads admitted to it would pend forever",
                       "use labels the pools carry (AKS sets kubernetes.azure.com/accelerator=nvidia on GPU nodes and kubernetes.azure.com/agentpool=<name> on all), "
                       "or add node_labels to the pool in terraform/node_pools.tf; tolerate the taints of the pool it should use"
                       + ("; a zone is <region>-<n> of a zone listed in the pool's `zones` (\"0\" without zones)"
                          if "topology.kubernetes.io/zone" in fl.labels else ""), self.ctx)
