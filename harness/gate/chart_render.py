"""How the gate renders a HelmRelease's chart (tools/fluxbuild's op helm, Helm's own engine): the chart copy of a pinned
module it installs, the request as helm-controller names, composes (valuesFrom) and post-renders the release, each request
rendered once per process (harness.gate.helm_values judges the values and the objects; the capacity checks and
harness.gate.gpu_driver read the DaemonSets a chart installs, chart_objects)."""
from __future__ import annotations

import json
import threading
from concurrent.futures import Future
from pathlib import Path

from harness.core import HarnessError
from harness.gate import schema_check, schemas, version_rules
from harness.gate.cluster_index import ClusterIndex
from harness.gate.helper import submit_kept
from harness.gate.render import as_stored
from harness.gate.sources import as_list, as_map


class HelmError(HarnessError, RuntimeError):
    pass


def release_of(hr: dict) -> tuple[str, str]:
    """(release name, namespace) as helm-controller's HelmRelease.GetReleaseName and GetReleaseNamespace give them."""
    spec, meta = as_map(hr.get("spec")), as_map(hr.get("metadata"))
    target = spec.get("targetNamespace")
    name = spec.get("releaseName") or (f"{target}-{meta.get('name')}" if target else meta.get("name"))
    return str(name), str(target or meta.get("namespace") or "default")


def chart_for(config, root: Path, index: ClusterIndex, hr: dict) -> tuple[Path | None, str]:
    """The copy of the chart a HelmRelease installs that its values render with (None for a chart version no module of
    this gate carries), and why not when its module cannot be fetched now (offline, not in the cache)."""
    pin = index.chart_of(hr)
    module = version_rules.chart_module(pin, index.chart_version_of(hr))
    try:
        return (schemas.chart_dir(pin, tuple(config.crd_files(root)), module) if module else None), ""
    except HarnessError as err:
        return None, f"its module cannot be fetched ({' '.join(str(err).split())})"


def request_for(index: ClusterIndex, hr: dict, chart: Path) -> tuple[str, dict]:
    """tools/fluxbuild's op helm request for a HelmRelease (as helm-controller names, composes and post-renders it), and its key."""
    spec, (name, namespace) = as_map(hr.get("spec")), release_of(hr)
    request = {"chart": str(chart), "values": as_map(spec.get("values")),
               "release": name, "namespace": namespace, **values_from(index, hr), **post_renderers(spec)}
    return request_key(request), request


def request_key(request: dict) -> str:
    """The key a request's answer is kept under: its JSON."""
    return json.dumps(request, sort_keys=True, default=str)


def answer(request: dict) -> dict:
    """Helm's answer to an op helm request made elsewhere (a what-if of a HelmRelease's values), waited for."""
    return render(request_key(request), request).result()


_RENDERS: dict[str, Future] = {}  # the same request is rendered once per process (helm_values and chart_objects ask it)
_RENDERS_LOCK = threading.Lock()


def render(key: str, request: dict) -> Future:
    """Helm's answer to an op helm request (`key`: its JSON), asked of tools/fluxbuild once per process."""
    with _RENDERS_LOCK:
        job, new = _RENDERS.get(key), key not in _RENDERS
        if new:
            if len(_RENDERS) >= 64:
                _RENDERS.clear()
            _RENDERS[key] = job = submit_kept("fluxbuild", "helm", HelmError, helm=request, kubernetes_version=schema_check.KUBERNETES_VERSION)
    if new:  # a failed request (the helper exited) is asked again next time
        job.add_done_callback(lambda done: done.exception() is not None and _RENDERS.pop(key, None))
    return job


def chart_objects(config, root: Path, cluster, kinds: tuple[str, ...] = ("DaemonSet",)) -> list[tuple[dict, dict]]:
    """(HelmRelease, object) for each object of `kinds` the charts the gate renders install on `cluster` (each release as
    harness.gate.helm_values renders it, the same request rendered once), in the release's namespace; none of a release Helm refuses
    to render (helm-values says why) or of a cluster whose layers do not all render."""
    index, out = ClusterIndex.build(root, cluster), []
    if not index.complete:
        return out
    for _, hr in index.of_kind("HelmRelease"):
        if index.chart_of(hr) not in schemas.CHART_SOURCES or not isinstance(as_map(hr.get("spec")).get("values", {}), dict):
            continue
        chart, _ = chart_for(config, root, index, hr)
        if chart is None:
            continue
        key, request = request_for(index, hr, chart)
        answer = render(key, request).result()
        for item in [] if answer.get("error") or answer.get("valuesError") else answer.get("objects") or []:
            obj = item["object"]
            if obj.get("kind") in kinds:
                meta = as_map(obj.get("metadata"))
                out.append((hr, {**obj, "metadata": {**meta, "namespace": meta.get("namespace") or request["namespace"]}}))
    return out


def post_renderers(spec: dict) -> dict:
    """The op helm request's part for spec.postRenderers: helm-controller applies their kustomize patches and images to
    what Helm renders (tools/fluxbuild postrender.go), so the objects checked are the ones it installs."""
    renderers = [as_map(r) for r in as_list(spec.get("postRenderers"))]
    return {"postRenderers": renderers, "postRenderStrategy": str(spec.get("postRenderStrategy") or "")} if renderers else {}


def values_from(index: ClusterIndex, hr: dict) -> dict:
    """The op helm request's part for spec.valuesFrom: the references, and the ConfigMaps and Secrets of the
    HelmRelease's namespace in the cluster's set as the apiserver stores them (helm-controller reads the live ones)."""
    refs = [as_map(r) for r in as_list(as_map(hr.get("spec")).get("valuesFrom"))]
    if not refs:
        return {}
    namespace = str(as_map(hr.get("metadata")).get("namespace") or "default")
    sources = [as_stored(found[1]) for r in refs if (found := index.named.get((str(r.get("kind")), namespace, str(r.get("name")))))]
    return {"valuesFrom": refs, "sourceNamespace": namespace, "sources": sources}
