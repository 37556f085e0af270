"""Effective quotas of one tree, as each cluster's Flux renders them, and how two trees differ.

The numbers come from harness.gate.render (the same fluxbuild renderer the static gate and Flux
use), so a patch in components/gpu-sku/ or an overlay shows up exactly as it would be applied.
Headroom is the capacity of the pools a flavor selects minus the nominal quotas declared against
it, as the gate's capacity rule computes them (harness.gate.flavor_capacities).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from harness.core import parse_quantity
from harness.gate import (Build, ClusterRender, RenderError, TerraformError, flavor_capacities, kustomization_file, node_pools,
                          parse_yaml, render_repository, tfvars_rel)
from harness.report import ReportInputError

LIMITS = ("nominalQuota", "borrowingLimit", "lendingLimit")
LIMIT_TITLES = {"nominalQuota": "nominal", "borrowingLimit": "borrowing limit", "lendingLimit": "lending limit"}


@dataclass(frozen=True)
class Row:
    """One quota line: a ClusterQueue's limits for one flavor and resource (values as written)."""

    cluster_queue: str
    cohort: str | None
    flavor: str
    resource: str
    limits: dict = field(default_factory=dict, hash=False, compare=False)  # LIMITS key -> str | None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.cluster_queue, self.flavor, self.resource


@dataclass
class Headroom:
    flavor: str
    resource: str
    capacity: Decimal | None  # None: no known pool (no tfvars, unknown SKU)
    nominal_total: Decimal
    pools: str

    @property
    def headroom(self) -> Decimal | None:
        return None if self.capacity is None else self.capacity - self.nominal_total


@dataclass
class ClusterQuotas:
    name: str
    overlays: list[str]
    components: list[str]  # components and the cluster's own patches, in the order they apply; a later one overrides an earlier one
    rows: dict[tuple, Row]
    local_queues: dict[str, str]  # namespace/name -> ClusterQueue
    headroom: dict[tuple, Headroom]
    headroom_note: str = ""

    @property
    def cluster_queues(self) -> set[str]:
        return {r.cluster_queue for r in self.rows.values()}


@dataclass
class TreeQuotas:
    label: str
    root: Path
    clusters: dict[str, ClusterQuotas]
    renders: dict[str, ClusterRender] = field(default_factory=dict)  # each cluster as its Flux renders it


def quantity(value) -> Decimal | None:
    if value is None:
        return None
    return parse_quantity(value)


def same(a, b) -> bool:
    """Equal as quantities ("4" == "4.0", "1Ti" == "1024Gi"); absent only equals absent."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return quantity(a) == quantity(b)
    except ValueError:
        return str(a) == str(b)


# -- one tree -------------------------------------------------------------------------------------
def load_tree(root: Path, label: str) -> TreeQuotas:
    """Renders every cluster of the tree; a build that fails is bad input (ReportInputError)."""
    root = Path(root).resolve()
    try:
        builds, clusters = render_repository(root)
    except RenderError as err:
        raise ReportInputError(f"{label}: the configuration does not render: {err}") from None
    # The directory that fails itself (an overlay, say) names the cause better than the cluster
    # that includes it, so plain directories are checked first.
    for build in sorted(builds, key=lambda b: not b.dir.startswith(("overlays/", "base", "components/"))):
        if build.error:
            raise ReportInputError(f"{label}: {build.dir}/kustomization.yaml does not render (rule kustomize-build): {build.error.strip()}")
    out = {}
    for cluster in clusters:
        for build in [cluster.entry, *cluster.flux]:
            if build.error:
                raise ReportInputError(
                    f"{label}: {build.dir}/kustomization.yaml does not render (cluster {cluster.name}, {build.id}, "
                    f"rule kustomize-build): {build.error.strip()}")
        out[cluster.name] = cluster_quotas(root, cluster)
    return TreeQuotas(label, root, out, {c.name: c for c in clusters})


def cluster_quotas(root: Path, cluster: ClusterRender) -> ClusterQuotas:
    objects = [o for _, o in cluster.applied()]
    rows: dict[tuple, Row] = {}
    for cq in (o for o in objects if o.get("kind") == "ClusterQueue"):
        spec = cq.get("spec") or {}
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    row = Row(cq["metadata"]["name"], spec.get("cohortName"), flavor.get("name"), res.get("name"),
                              {k: (str(res[k]) if k in res else None) for k in LIMITS})
                    rows[row.key] = row
    lqs = {f"{(o.get('metadata') or {}).get('namespace', 'default')}/{o['metadata']['name']}": (o.get("spec") or {}).get("clusterQueue")
           for o in objects if o.get("kind") == "LocalQueue"}
    overlays, components = layout_of(root, cluster.flux)
    headroom, note = _headroom(root, cluster.name, objects)
    return ClusterQuotas(cluster.name, overlays, components, rows, lqs, headroom, note)


PATCH_FIELDS = ("patches", "patchesStrategicMerge", "patchesJson6902", "replacements")  # what rewrites objects in place


def layout_of(root: Path, builds: list[Build]) -> tuple[list[str], list[str]]:
    """The overlays/ directories the Flux builds build on, and what rewrites their quotas in the order
    it applies: the components/ directories (a kustomization file's components, then its Flux
    Kustomization's spec.components) and the cluster's own patches (a kustomization file's patches,
    then a Flux Kustomization's spec.patches). Kustomization files are read under any name kustomize reads."""
    overlays, blocks = [], []  # blocks: per directory what it applies, outermost first
    todo: list[tuple[str, dict]] = [(b.dir, b.flux_kustomization or {}) for b in builds]
    seen = set()
    while todo:  # the builds' directories, then the overlays they include (for their components)
        directory, ks = todo.pop(0)
        if directory in seen:
            continue
        seen.add(directory)
        if directory.startswith("overlays/") and directory not in overlays:
            overlays.append(directory)
        kfile = kustomization_file(root / directory)
        doc = parse_yaml(kfile.read_text()) if kfile else None
        doc = doc if isinstance(doc, dict) else {}
        spec = ks.get("spec") if isinstance(ks.get("spec"), dict) else {}
        block = []
        for entry in [*(doc.get("resources") or []), *(doc.get("components") or []), *(spec.get("components") or [])]:
            try:
                rel = (root / directory / str(entry)).resolve().relative_to(root).as_posix()
            except ValueError:
                continue  # outside the repository (a URL or ../ beyond the root)
            if not (root / rel).is_dir():
                continue  # a manifest file, not a kustomization
            if rel.startswith("overlays/"):
                todo.append((rel, {}))
            elif rel.startswith("components/"):
                block.append(rel)
        if not directory.startswith(("overlays/", "components/", "base")) and any(doc.get(k) for k in PATCH_FIELDS):
            block.append(f"{kfile.relative_to(root).as_posix()} patches")  # after its resources and components
        if spec.get("patches"):
            block.append(f"Flux Kustomization {(ks.get('metadata') or {}).get('name')} spec.patches")
        blocks.append(block)
    # Included directories build first, so their components apply before the cluster's own.
    out: list[str] = []
    for item in (x for block in reversed(blocks) for x in block):
        if item not in out:
            out.append(item)
    return overlays, out


def _headroom(root: Path, name: str, objects: list[dict]) -> tuple[dict[tuple, Headroom], str]:
    def unknown(note: str) -> tuple[dict[tuple, Headroom], str]:
        return {(fc.flavor, fc.resource): Headroom(fc.flavor, fc.resource, None, fc.nominal_total, "")
                for fc in flavor_capacities(objects, [])}, note

    rel = tfvars_rel(root, name)
    if not (root / rel).exists():
        return unknown(f"no {rel}: node pools unknown")
    try:
        pools = node_pools(root, name)
    except TerraformError as err:
        return unknown(f"terraform/ could not be read: {err}")
    out = {}
    for fc in flavor_capacities(objects, pools):
        # As the gate writes a pool's size ("0-2 x SIZE, autoscaling"); capacity and the scenarios' nodes are at max_count.
        pools_text = "; ".join(f"{p.name} {p.size()}" + (" (run at max_count)" if p.autoscaled else "") for p in fc.pools) or "no pool selected"
        out[(fc.flavor, fc.resource)] = Headroom(fc.flavor, fc.resource, fc.capacity, fc.nominal_total, pools_text)
    return out, f"pools from {rel}"


# -- two trees ------------------------------------------------------------------------------------
@dataclass
class Cell:
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return not same(self.before, self.after)


@dataclass
class RowDiff:
    key: tuple[str, str, str]
    cohort: str | None
    status: str  # "same", "changed", "added", "removed"
    cells: dict[str, Cell]


@dataclass
class ClusterDiff:
    name: str
    status: str  # "same", "changed", "added", "removed"
    overlays: tuple[list[str], list[str]]
    components: tuple[list[str], list[str]]
    rows: list[RowDiff]
    queues_added: list[str]
    queues_removed: list[str]
    headroom: list[tuple[tuple, Headroom | None, Headroom | None]]
    headroom_note: str

    @property
    def changed(self) -> bool:
        return (self.status != "same" or self.overlays[0] != self.overlays[1] or self.components[0] != self.components[1]
                or any(r.status != "same" for r in self.rows))


def diff(base: TreeQuotas, head: TreeQuotas) -> list[ClusterDiff]:
    out = []
    for name in sorted(set(base.clusters) | set(head.clusters)):
        b, h = base.clusters.get(name), head.clusters.get(name)
        status = "added" if b is None else "removed" if h is None else "same"
        b_rows, h_rows = (b.rows if b else {}), (h.rows if h else {})
        rows = []
        for key in sorted(set(b_rows) | set(h_rows)):
            br, hr = b_rows.get(key), h_rows.get(key)
            cells = {k: Cell(br.limits.get(k) if br else None, hr.limits.get(k) if hr else None) for k in LIMITS}
            rstatus = "added" if br is None else "removed" if hr is None else (
                "changed" if any(c.changed for c in cells.values()) or br.cohort != hr.cohort else "same")
            rows.append(RowDiff(key, (hr or br).cohort, rstatus, cells))
        if status == "same" and any(r.status != "same" for r in rows):
            status = "changed"
        b_cqs, h_cqs = (b.cluster_queues if b else set()), (h.cluster_queues if h else set())
        b_head, h_head = (b.headroom if b else {}), (h.headroom if h else {})
        headroom = [(k, b_head.get(k), h_head.get(k)) for k in sorted(set(b_head) | set(h_head))]
        out.append(ClusterDiff(
            name, status,
            ((b.overlays if b else []), (h.overlays if h else [])),
            ((b.components if b else []), (h.components if h else [])),
            rows, sorted(h_cqs - b_cqs), sorted(b_cqs - h_cqs), headroom, (h or b).headroom_note))
    return out
