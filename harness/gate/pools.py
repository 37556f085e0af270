"""The node pools Terraform creates for one cluster: one model for the static capacity checks
and for simulated nodes (`cluster_nodes`: labels, taints, allocatable and node counts per pool),
plus the scheduler's side of placement (`selects`: do a nodeSelector, required node affinity
and tolerations let a pod onto a pool's nodes).

- Labels: node_labels plus what AKS sets itself (harness.gate.node_labels: agentpool, mode, instance type, and
  kubernetes.azure.com/accelerator=nvidia with its deprecated predecessor accelerator on GPU sizes). Taints: node_taints ("key=value:Effect"), and
  CriticalAddonsOnly=true:NoSchedule on a system pool with only_critical_addons_enabled, and
  kubernetes.azure.com/scalesetpriority=spot (label) and =spot:NoSchedule (taint) on a user pool
  with priority = "Spot", as AKS sets them; a tainted pool counts only for pods that tolerate its
  taints, the system pool included. A pool with os_type = "Windows" (or a Windows os_sku) has
  kubernetes.io/os=windows and no taint: Linux pods (Ray's) never count it (`linux`).
- Node counts: a pool with auto_scaling_enabled (azurerm v4; v3 spelled it enable_auto_scaling)
  has min_count..max_count nodes and counts at max_count (`count`), keeping `min_count` for the
  scale-up warning (harness.gate.autoscaling notes what azurerm or AKS refuses); a fixed pool has node_count nodes. A pool whose `count` meta-argument is 0
  is kept with 0 nodes, so that findings can name the setting that emptied it (`count_origin`).
- Matching is component-helpers' own (nodeaffinity, FindMatchingUntoleratedTaint; harness.gate.matching).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

from harness.gate import autoscaling, matching, tf_modules
from harness.gate.azurerm_schema import DEFAULT_POOL, MAX_PODS, NODE_POOL, POOL_CHECKS, unsupported
from harness.gate.autoscaling import AUTOSCALING_KEYS
from harness.gate.node_labels import aks_labels
from harness.gate.sku import Sku, allocatable, mig_resources, repository_skus, sku_table
from harness.gate.sources import as_list, as_map
from harness.gate.terraform import (Block, Body, TerraformConfig, TerraformError, Value, deciding_variable, load_tfvars,
                                    provider_version, setting_origin, tfvars_rel, variable_origin)

SYSTEM_TAINT = "CriticalAddonsOnly=true:NoSchedule"
SPOT_LABEL = "kubernetes.azure.com/scalesetpriority"
SPOT_TAINT = f"{SPOT_LABEL}=spot:NoSchedule"
SETTINGS = ("gpu_instance_profile", "max_pods", "spot_max_price", *POOL_CHECKS)  # where written: for node_settings and podsets' findings


class PoolSettingError(TerraformError):
    """A pool setting that is not what Terraform accepts, with the file and line where it is written."""

    def __init__(self, message: str, file: str, line: int | None, diagnostic: bool = False, rule: str = "", hint: str = "", resource: str = ""):
        super().__init__(message, file, line)
        self.diagnostic = diagnostic  # Terraform's own error (terraform-expression reports it), not a pool setting's
        self.rule, self.hint, self.resource = rule, hint, resource  # the finding's, when not capacity-terraform's


DEFAULT_OS_DISK_GIB = 128  # AKS's OS disk without os_disk_size_gb: the kubelet's root filesystem (emptyDirs, logs, layers)

@dataclass(frozen=True)
class Origin:
    """Where a setting gets its value: file, line and the setting as written there."""
    file: str
    line: int | None
    text: str  # e.g. "gpu_node_count = 0"
    default: bool = False  # the declared default of a variable (a cluster's tfvars may set it for that cluster alone)

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def name(self) -> str:
        return self.text.split("=", 1)[0].strip()


@dataclass(frozen=True)
class NodeSpec:
    """The nodes of one pool as their Node objects show them: what a simulated node needs."""
    pool: str
    vm_size: str
    labels: dict[str, str]
    taints: list[dict]  # {key, value, effect}
    capacity: dict[str, Decimal]  # one node; {} when the size is not in sku.yaml
    allocatable: dict[str, Decimal]
    min_count: int
    max_count: int
    system: bool
    max_pods: int = 110
    first: int = 0  # the instance number of its first node (a zonal pool's zones share one scale set)


@dataclass
class Pool:
    name: str
    address: str  # Terraform address, e.g. azurerm_kubernetes_cluster_node_pool.gpu
    file: str
    line: int | None
    vm_size: str
    count: int  # nodes: node_count, or max_count when the pool autoscales (0: Terraform creates none)
    max_pods: int
    labels: dict[str, str]
    taints: list[str]
    system: bool
    sku: Sku | None = None
    min_count: int | None = None  # autoscaling pools: the nodes kept when idle; None for a fixed size
    count_origin: Origin | None = None  # where `count` is written (node_count, max_count or the count meta-argument)
    min_origin: Origin | None = None
    notes: list[tuple[str, int | None, str, str]] = field(default_factory=list)  # (file, line, message, fix) on its autoscaling settings
    zones: tuple[str, ...] = ()  # availability zones written in Terraform ("1".."3"); () when Azure chooses
    region: str | None = None    # the cluster's location
    zone: str | None = None      # after by_zone: this group's topology.kubernetes.io/zone ("0": no zones)
    first: int = 0               # after by_zone: the instance number of the group's first node
    gpu_driver: str | None = None  # azurerm gpu_driver: "Install" (AKS installs the NVIDIA driver, not the device plugin) or "None"
    gpu_driver_origin: Origin | None = None
    vm_size_origin: Origin | None = None
    written: dict[str, tuple[object, Origin]] = field(default_factory=dict)  # node_labels / node_taints as the pool sets them
    os_disk_gib: int = DEFAULT_OS_DISK_GIB  # os_disk_size_gb: the kubelet's root filesystem, its ephemeral-storage
    os: str = "linux"  # kubernetes.io/os of its nodes: "windows" for os_type = "Windows" (or a Windows os_sku)
    settings: dict[str, tuple[object, Origin]] = field(default_factory=dict)  # SETTINGS the pool writes (and upgrade_settings.max_surge), with where
    unsupported: dict[str, tuple[Origin, str]] = field(default_factory=dict)  # arguments its block's azurerm schema lacks: where written, the fix
    daemons: dict[str, Decimal] = field(default_factory=dict)  # what the rendered DaemonSets' pods take of each node (harness.gate.daemonsets)
    daemon_names: tuple[str, ...] = ()

    @property
    def default(self) -> bool:
        """The cluster's default_node_pool (in azurerm_kubernetes_cluster), not an azurerm_kubernetes_cluster_node_pool."""
        return not self.address.startswith(f"{NODE_POOL}.")

    @property
    def linux(self) -> bool:
        """Whether Linux pods (Ray's images, KubeRay's submitter) can run on its nodes."""
        return self.os == "linux"

    @property
    def autoscaled(self) -> bool:
        return self.min_count is not None

    @property
    def min_nodes(self) -> int:
        return self.count if self.min_count is None else self.min_count

    def size(self) -> str:
        return autoscaling.size_words(self.vm_size, self.count, self.min_count)

    def where(self) -> str:
        zone = f", zone {self.zone}" if self.zone not in (None, "0") and len(self.zones) > 1 else ""
        daemons = f", less DaemonSet {', '.join(self.daemon_names)}'s pod on each node" if self.daemon_names else ""
        return f"{self.file}:{self.line} {self.address} (pool {self.name}{zone}, {self.size()}{daemons})"

    def node_capacity(self) -> dict[str, Decimal]:
        """One node's capacity: the size's cpu, memory and GPUs, and the kubelet's disk as ephemeral-storage (none when unjudged)."""
        disk = self.kubelet_disk()[1]
        return {**self.sku.node_capacity(), **self.mig(), **({"ephemeral-storage": Decimal(disk) * 2**30} if disk is not None else {})} \
            if self.sku else {}

    def kubelet_disk(self) -> tuple[str, int | None]:
        """The disk holding the kubelet's root dir (emptyDirs, logs, image layers: ephemeral-storage) and its GiB: the OS disk
        (os_disk_size_gb), or with kubelet_disk_type = "Temporary" the VM size's temp disk (sku `temp_disk_gib`; None: unknown)."""
        if str((self.settings.get("kubelet_disk_type") or ("OS",))[0]) == "Temporary":
            return "temp disk", self.sku.temp_disk_gib if self.sku else None
        return "OS disk", self.os_disk_gib

    @property
    def unjudged(self) -> frozenset[str]:
        """Resources whose per-node amount the gate does not know (a temp disk of unknown size): no verdict on them."""
        return frozenset({"ephemeral-storage"}) if self.sku and self.kubelet_disk()[1] is None else frozenset()

    def mig(self) -> dict[str, Decimal]:  # a MIG pool's (gpu_instance) instances, under both names the device plugin may use
        profile = (self.settings.get("gpu_instance") or self.settings.get("gpu_instance_profile") or (None,))[0]  # the latter: capacity-node-settings
        return mig_resources(self.sku, str(profile)) if profile and self.sku else {}

    def capacity(self, nodes: int | None = None) -> dict[str, Decimal]:
        """Hardware of `nodes` nodes (default: all, at max_count for an autoscaling pool)."""
        n = self.count if nodes is None else nodes
        return {k: v * n for k, v in self.node_capacity().items()}

    def allocatable(self, nodes: int | None = None) -> dict[str, Decimal]:
        """What pods get of `nodes` nodes (default: all, at max_count for an autoscaling pool): what kube-scheduler fits them
        against, node allocatable (capacity less AKS's kube-reserved and eviction threshold) less the requests of the rendered
        DaemonSets' pods on each node (`daemons`), per node."""
        n = self.count if nodes is None else nodes
        return {k: v * n for k, v in self.node_allocatable().items()}

    def node_allocatable(self) -> dict[str, Decimal]:
        if not self.sku:
            return {}
        # The kubelet's hard eviction on AKS keeps nodefs.available >= 10%: pods get the other 90% of the disk.
        disk = {"ephemeral-storage": (c * Decimal("0.9")).to_integral_value()} if (c := self.node_capacity().get("ephemeral-storage")) else {}
        offered = {**allocatable(self.sku, self.max_pods), **self.mig(), **disk, "pods": Decimal(self.max_pods)}
        return {r: max(q - self.daemons.get(r, Decimal(0)), Decimal(0)) for r, q in offered.items()}  # the DaemonSets' pods take theirs

    def node_taints(self) -> list[dict]:
        return [matching.taint_dict(t) for t in self.taints]

    def node_spec(self) -> NodeSpec:
        unbounded = {r: Decimal(2**60) for r in self.unjudged}  # not judged: the simulated node refuses no pod for it
        return NodeSpec(self.name, self.vm_size, dict(self.labels), self.node_taints(),
                        {**self.node_capacity(), **unbounded}, {**self.node_allocatable(), **unbounded}, self.min_nodes, self.count, self.system,
                        self.max_pods, self.first)


def by_zone(pool: Pool, prefer: tuple[str, ...] = ()) -> list[Pool]:
    """The pool as the scheduler sees it: AKS labels every node with its region and zone
    (topology.kubernetes.io/...; zone "<region>-<n>" on a zonal pool, "0" on one without zones) and
    balances a zonal pool's nodes over its zones, so a pool over k zones is k groups of nodes (each
    holding its share of node_count, min_count and max_count), each with its own zone label."""
    zones = [f"{pool.region}-{z}" for z in pool.zones] if pool.zones and pool.region else ["0"]
    rank = sorted(range(len(zones)), key=lambda j: (zones[j] not in prefer, j))  # who gets a remainder: Azure's choice (harness.gate.assumed)
    share = lambda n, j: n // len(zones) + (1 if j in rank[:n % len(zones)] else 0)  # noqa: E731
    groups, first = [], 0
    for j, zone in enumerate(zones):
        count = share(pool.count, j)
        if count == 0 and (groups or j < len(zones) - 1):
            continue  # a zone the pool's few nodes do not reach (an empty pool stays one group)
        labels = {**pool.labels, "topology.kubernetes.io/zone": zone, "failure-domain.beta.kubernetes.io/zone": zone}
        if pool.region:
            labels |= {"topology.kubernetes.io/region": pool.region, "failure-domain.beta.kubernetes.io/region": pool.region}
        groups.append(replace(pool, labels=labels, count=count, zone=zone, first=first,
                              min_count=None if pool.min_count is None else share(pool.min_count, j)))
        first += count
    return groups


def _major(version: str | None) -> int | None:
    return int(m.group()) if (m := re.search(r"\d+", version or "")) else None


class _Builder:
    """Builds the Pools of one cluster and records where their node counts are written."""

    def __init__(self, cfg: TerraformConfig, tfvars: dict, tfvars_rel: str | None):
        self.cfg, self.tfvars_rel, self.tfvars = cfg, tfvars_rel, tfvars  # tfvars: the values the cluster's file sets
        self.ev = cfg.evaluate(tfvars)
        self.skus, self.reservation = repository_skus(cfg.root), sku_table()[1]
        self.provider = provider_version(cfg)
        self.major = _major(self.provider)
        self.switch = next((k for k, m in AUTOSCALING_KEYS.items() if m == self.major), "auto_scaling_enabled")  # the pinned spelling
        self.region = self.location()

    def location(self) -> str | None:
        """The cluster's region: its `location`, or (when that is a resource group's attribute, known
        only after apply) the location that resource group is given."""
        groups = {b.address: b for b in self.ev.of_type("azurerm_resource_group")}
        for block in self.ev.of_type("azurerm_kubernetes_cluster"):
            v = block.body.get("location")
            for source in [block, *(groups[r] for r in (v.refs if v else ()) if r in groups)]:
                try:
                    value = self.value(source, source.body.get("location"), "location")
                except TerraformError:
                    continue
                if isinstance(value, str):
                    return value
        return None

    def where(self, block: Block, v: Value | None, meta: bool = False) -> tuple[str, int | None]:
        """Where a setting gets its value: the tfvars or default line of the variable it is, else its own line."""
        return setting_origin(self.cfg, v, self.tfvars_rel, meta, self.tfvars) if v is not None else (block.file, None)

    def value(self, block: Block, v: Value | None, attr: str, default=None):
        """A setting's value as Terraform evaluates it; PoolSettingError naming where it is written otherwise."""
        if v is None or (block.absent and not v.known and not v.error and any(r.split(".")[0] in ("each", "count") for r in v.refs)):
            return default  # (a pool count / for_each leaves out has no each.* / count.index: what the template cannot say)
        try:
            return v.get(f"{block.address} {attr}")
        except TerraformError as err:
            raise PoolSettingError(str(err), *self.where(block, v), diagnostic=bool(v.error)) from None

    def number(self, block: Block, v: Value | None, attr: str, default=None) -> int:
        """A whole-number setting; PoolSettingError naming where it is written otherwise."""
        value = self.value(block, v, attr, default)
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value == int(value)):
            raise PoolSettingError(f"{block.address} {attr} ({v.text if v else default}) is {value!r}, not a whole number",
                                   *self.where(block, v, attr in ("count", "for_each")))
        return int(value)

    def origin(self, block: Block, attr: str, v: Value | None, default=None) -> Origin:
        name = deciding_variable(v, attr in ("count", "for_each"), self.tfvars)
        if name:
            file, line, in_tfvars = variable_origin(self.cfg, name, self.tfvars_rel)
            return Origin(file, line, f"{name} = {self.ev.variable(name)}", default=not in_tfvars and line is not None)
        return Origin(v.file if v else block.file, v.line if v else None, f"{attr} = {v.text if v else default}")

    def build(self, block: Block, system: bool, instances: int = 1, body: Body | None = None) -> Pool:
        body = body or block.body
        get = lambda attr, default=None: self.value(block, body.get(attr), attr, default)  # noqa: E731
        name, vm_size = str(get("name", block.name)), str(get("vm_size"))
        max_pods = min(max(self.number(block, body.get("max_pods"), "max_pods", self.reservation["max_pods_assumed"]), MAX_PODS[0]), MAX_PODS[1])
        os_disk = self.number(block, body.get("os_disk_size_gb"), "os_disk_size_gb", DEFAULT_OS_DISK_GIB)
        sku = self.skus.get(vm_size)
        os = "windows" if get("os_type") == "Windows" or str(get("os_sku") or "").startswith("Windows") else "linux"
        labels = {**{str(k): str(v) for k, v in as_map(get("node_labels")).items()}, **aks_labels(name, vm_size, system, sku, get("os_sku"), os)}
        taints = [str(t) for t in as_list(get("node_taints"))]
        zones = tuple(sorted(str(z) for z in as_list(get("zones"))))
        if system and get("only_critical_addons_enabled") is True:
            taints.append(SYSTEM_TAINT)
        if not system and get("priority") == "Spot":  # AKS labels and taints every Spot node,
            labels[SPOT_LABEL] = "spot"  # only pods that tolerate it land there
            taints.append(SPOT_TAINT)
        address = block.address if block.keyed and not block.absent else replace(block, keyed=False).address
        pool = Pool(name, address, block.file, block.line, vm_size, 0, max_pods, labels, taints, system, sku, zones=zones, region=self.region)
        pool.vm_size_origin, pool.os_disk_gib, pool.os = self.origin(block, "vm_size", body.get("vm_size")), os_disk, os
        pool.settings = {a: (self.value(block, v, a), self.origin(block, a.rsplit(".", 1)[-1], v))
                         for a in SETTINGS if (v := nested_value(body, a)) is not None}
        surge = nested_value(body, "upgrade_settings.max_surge")  # set, even if known only after apply; one that does not evaluate is terraform-expression's
        if surge is not None and not surge.error and not (surge.known and surge.value in (None, "")):
            pool.settings["upgrade_settings.max_surge"] = (surge.value, self.origin(block, "max_surge", surge))
        pool.unsupported = {a: (Origin(body.get(a).file, body.get(a).line, f"{a} = {body.get(a).text}"), fix)
                            for a, fix in unsupported(NODE_POOL if block.type == NODE_POOL else DEFAULT_POOL, body.attrs).items()}
        pool.written = {a: (get(a), self.origin(block, a, body.get(a))) for a in ("node_labels", "node_taints") if body.get(a) is not None}
        if get("gpu_driver") is not None:
            pool.gpu_driver, pool.gpu_driver_origin = str(get("gpu_driver")), self.origin(block, "gpu_driver", body.get("gpu_driver"))
        key = next((k for k in AUTOSCALING_KEYS if k in body), None)
        autoscaling.check_spelling(self, pool, block, body, key)
        if key and get(key) is True:
            autoscaling.autoscaling(self, pool, block, body, key)
        else:
            autoscaling.fixed_size(self, pool, block, body)
        if instances < 1:  # count / for_each leaves the pool out: name the setting that did
            if pool.count > 0:
                pool.count_origin = self.origin(block, "count" if block.count else "for_each", block.meta)
            pool.count, pool.min_count = 0, (0 if pool.autoscaled else None)
        return pool


def nested_value(body: Body, path: str) -> Value | None:
    """The argument at `path` ("kubelet_config.cpu_manager_policy": through the pool's nested blocks, the first of each), or None."""
    *blocks, attr = path.split(".")
    for name in blocks:
        body = next(iter(body.nested(name)), None)
        if body is None:
            return None
    return body.get(attr)


def cluster_pools(cfg: TerraformConfig, tfvars: dict, tfvars_rel: str | None = None) -> list[Pool]:
    """Node pools of one cluster: the AKS default pool plus every azurerm_kubernetes_cluster_node_pool instance (count / for_each
    expanded), those they leave out with 0 nodes. `tfvars_rel` (repository-relative) lets `count_origin` name the tfvars line."""
    builder = _Builder(cfg, tfvars, tfvars_rel)
    refused = [d for d in builder.ev.errors() if tfvars_rel and d.file == tfvars_rel]
    if refused:  # Terraform refuses a value of this cluster's file (a variable's validation, its type): it plans no pool at all
        raise PoolSettingError(refused[0].text(), refused[0].file, refused[0].line, diagnostic=True)
    tf_modules.require_read(cfg)  # UnreadPools: a module may create pools the gate does not read (terraform-module-unread); claim nothing
    pools, created = [], []  # created: the pools Terraform creates (count / for_each leave the others out)
    for block in builder.ev.of_type("azurerm_kubernetes_cluster"):
        for body in block.body.nested("default_node_pool"):
            pools.append(builder.build(block, True, body=body))
            created.append(pools[-1])
    for block in builder.ev.of_type("azurerm_kubernetes_cluster_node_pool"):
        if block.count is not None:
            instances = builder.number(block, block.count, "count")
        else:
            if block.for_each is not None:
                builder.value(block, block.for_each, "for_each")  # unknown or invalid: say so where it is written
            instances = 0 if block.absent else 1
        try:
            system = str(builder.value(block, block.body.get("mode"), "mode", "User")) == "System"
            pools.append(builder.build(block, system, instances))
            created += pools[-1:] if instances >= 1 else []
        except TerraformError:
            if instances >= 1:
                raise  # a pool left out may use settings that only apply when it exists
    _unique_names(created)
    return [group for pool in pools for group in by_zone(pool)]


def _unique_names(pools: list[Pool]) -> None:
    """A second pool of the cluster with a name taken: azurerm finds the pool of that name existing and stops ("A resource with
    the ID ... already exists - to be managed via Terraform this resource needs to be imported"); AKS keys agent pools by name.
    PoolSettingError at the second one's name, so that no rule models the pools as one."""
    for i, pool in enumerate(pools):
        first = next((p for p in pools[:i] if p.name == pool.name), None)
        if first is not None:
            at, was = (p.settings.get("name", (0, Origin(p.file, p.line, f"name = {p.name!r}")))[1] for p in (pool, first))
            raise PoolSettingError(f"{pool.address} is named {pool.name!r} ({at.text} at {at.where()}), the name of {first.address} "
                                   f"({was.text} at {was.where()}): a cluster's node pools are keyed by name, so `terraform apply` fails "
                                   "(\"A resource with the ID ... already exists\")", at.file, at.line, rule="capacity-node-settings",
                                   hint=f"give {pool.address} a name no other pool of the cluster has", resource=pool.address)


def node_pools(root: Path, cluster: str) -> list[Pool]:
    """The pools terraform/ creates for `cluster` (terraform/clusters/<cluster>.tfvars or .tfvars.json over the
    variable defaults); TerraformError when either cannot be read."""
    rel = tfvars_rel(Path(root), cluster)
    return cluster_pools(TerraformConfig.load(Path(root)), load_tfvars(Path(root) / rel, Path(root)), rel)


def cluster_nodes(root: Path, cluster: str) -> list[NodeSpec]:  # per pool: its nodes' labels, taints, sizes, min/max count
    return [p.node_spec() for p in node_pools(root, cluster)]


# -- Scheduling: taints, tolerations, node selectors -----------------------------------------------------
def untolerated(taints: list[dict], tolerations: list[dict], comparison: bool = False) -> dict | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates (PreferNoSchedule never blocks): harness.gate.matching."""
    return matching.untolerated(taints, tolerations, comparison)


def node_matches(labels: dict[str, str], node_selector: dict, affinity: dict | None = None) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node) for a node with `labels`: every
    nodeSelector label, and (when set) one of requiredDuringSchedulingIgnoredDuringExecution's terms."""
    return matching.node_matches(labels, {str(k): "" if v is None else str(v) for k, v in as_map(node_selector).items()}, affinity)


def selects(pool: Pool, node_labels: dict, tolerations: list[dict], affinity: dict | None = None) -> bool:
    """Whether a pod with this nodeSelector, required node affinity and tolerations may run on the pool's nodes."""
    return node_matches(pool.labels, node_labels, affinity) and untolerated(pool.node_taints(), tolerations) is None

