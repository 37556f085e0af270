"""Where a sample's pod sets are written in its workload file (a RayJob, RayCluster or RayService): each pod set's
template, container requests, replicas and own placement constraints (`workload_lines`), the lines of a samples.yaml
entry's `vars` (`entry_var_lines`), and the request line a finding about one resource points at (`request_line`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import yaml

from harness.core import parse_quantity
from harness.gate.origin import compose, descend, step
from harness.gate.sources import RAY_CLUSTER_SPEC


# -- Lines in the workload files --------------------------------------------------------------------
def _path(node, *keys):
    return descend(node, list(keys))[1]


@dataclass
class PodSetLines:
    """Lines of one pod set in its workload file: its template, each container's requests
    (resource -> [(line, written value)]) and its replicas."""
    template: int | None = None
    requests: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    replicas: tuple[int, str] | None = None
    constraints: int | None = None  # its own nodeSelector (else affinity, else tolerations)


def workload_lines(text: str) -> list[PodSetLines]:
    """Per pod set (workloads.pod_sets order) of a sample's raw text (a RayJob, RayCluster or RayService), where it is written; [] when
    the text does not compose (the schema and render rules report that)."""
    docs = compose(text)
    if not docs:
        return []
    spec_key, spec = step(docs[0], "spec")
    kind_node = _path(docs[0], "kind")
    kind = kind_node.value if isinstance(kind_node, yaml.ScalarNode) else "RayJob"
    cluster = _path(docs[0], *RAY_CLUSTER_SPEC.get(kind, ["spec", "rayClusterSpec"]))

    def keyed(parent, key: str, replicas=None):
        k, v = step(parent, key)
        return (k.start_mark.line + 1 if k else None), v, replicas
    sets = [keyed(_path(cluster, "headGroupSpec"), "template")]
    workers = _path(cluster, "workerGroupSpecs")
    for g in workers.value if isinstance(workers, yaml.SequenceNode) else []:
        if isinstance(g, yaml.MappingNode):
            sets.append(keyed(g, "template", step(g, "replicas")))
    mode = _path(spec, "submissionMode")
    if kind == "RayJob" and (not isinstance(mode, yaml.ScalarNode) or mode.value == "K8sJobMode"):
        line, template, _ = keyed(spec, "submitterPodTemplate")  # absent: KubeRay's default, charged to `spec`
        sets.append((line or (spec_key.start_mark.line + 1 if spec_key else None), template, None))
    out = []
    for line, template, replicas in sets:
        lines = PodSetLines(line)
        lines.constraints = next((k.start_mark.line + 1 for k in (step(_path(template, "spec"), key)[0] for key in
                                                                  ("nodeSelector", "affinity", "tolerations")) if k is not None), None)
        groups = [_path(template, "spec", group) for group in ("initContainers", "containers")]  # Kueue charges init containers too
        for c in (c for g in groups if isinstance(g, yaml.SequenceNode) for c in g.value):
            res, written = _path(c, "resources"), {}
            for part in ("limits", "requests"):  # requests win, as in workloads.pod_sets
                node = _path(res, part)
                for k, v in node.value if isinstance(node, yaml.MappingNode) else []:
                    if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
                        written[k.value] = (k.start_mark.line + 1, v.value)
            for resource, entry in written.items():
                lines.requests.setdefault(resource, []).append(entry)
        if replicas and replicas[0] is not None:
            lines.replicas = (replicas[0].start_mark.line + 1, replicas[1].value if isinstance(replicas[1], yaml.ScalarNode) else "")
        out.append(lines)
    return out


def entry_var_lines(text: str) -> list[dict[str, int]]:
    """Per entry of a samples.yaml, the line of each of its `vars`."""
    docs = compose(text)
    doc = docs[0] if docs else None
    out = []
    for entry in doc.value if isinstance(doc, yaml.SequenceNode) else []:
        node = _path(entry, "vars")
        out.append({k.value: k.start_mark.line + 1 for k, _ in node.value} if isinstance(node, yaml.MappingNode) else {})
    return out


def request_line(lines: PodSetLines, resource: str) -> int | None:
    """The line of the container request that asks most of `resource`, else the template's."""
    def size(written: str):
        try:
            return parse_quantity(written)
        except (ValueError, TypeError, ArithmeticError):
            return Decimal(0)
    entries = lines.requests.get(resource) or []
    return max(entries, key=lambda e: size(e[1]))[0] if entries else lines.template
