"""versions.yaml against what each cluster really installs: the chart version of the Kueue and KubeRay
HelmReleases (the tag of the OCIRepository a chartRef names, spec.version of the HelmChart it names, or
spec.chart.spec.version of a HelmRepository's chart), their chart repository and the image tag of their values, as Flux renders them for the cluster.
A drifted pin means the harness proves one version while AKS runs another."""
from __future__ import annotations

import functools
from importlib import resources
import json
from pathlib import Path

from harness.core import releases, versions
from harness.gate.cluster_index import ClusterIndex
from harness.gate.findings import Finding
from harness.gate.origin import line_at
from harness.gate.render import ClusterRender
from harness.gate.sources import SourceError, as_map, load_yaml

RULES = {"versions-drift": "each cluster's Kueue and KubeRay charts and images are the versions.yaml production pins",
         "versions-pins": "(warning) versions.yaml's production Kueue and KubeRay are the versions whose own code the gate runs (its "
                          "versions.yaml's module versions), and each production pin differs from its module version only with a "
                          "`skew` saying why (the pin file's contract)"}
COMPONENTS = ("kueue", "kuberay")
IMAGE_TAG = {"kueue": ("controllerManager", "manager", "image", "tag"), "kuberay": ("image", "tag")}


def pins(root: Path) -> dict | None:
    """versions.yaml of the checkout the gate validates (None when unreadable: yaml-syntax says why, or not a pin file:
    pins_findings says why)."""
    try:
        doc = load_yaml(root / "versions.yaml")
    except SourceError:
        return None
    return doc if isinstance(doc, dict) and all(isinstance(doc.get(c), dict) for c in COMPONENTS) else None


def pins_findings(root: Path) -> list[Finding]:
    """A versions.yaml that parses but holds no pins the drift rule can read (a list, no kueue or kuberay entry): said,
    not skipped in silence; then versions-pins."""
    path = root / "versions.yaml"
    if not path.is_file():
        return []
    if pins(root) is not None:
        return _refused_pins(root, pins(root)) + _pin_findings(root, pins(root))
    try:
        doc = load_yaml(path, root)
    except SourceError:
        return []  # yaml-syntax reports it
    what = f"is a {type(doc).__name__}" if not isinstance(doc, dict) else \
        f"has no {' or '.join(c for c in COMPONENTS if not isinstance(doc.get(c), dict))} entry"
    return [Finding("versions.yaml", None, "", "versions-drift", f"{what}, not the pin file the drift rule reads: the charts and "
                    "images the clusters install are not checked against any pin", "restore versions.yaml (a mapping with "
                    "kueue and kuberay entries: chart, version, production; see harness/schemas-for-data/versions.schema.json)")]


def version_rules(ctx, root: Path, cluster: ClusterRender, pinned: dict | None) -> list[Finding]:
    """versions-drift for each HelmRelease of the cluster that installs a pinned chart (by the chart it installs,
    whatever the names of it and its source): the chart version its source or spec.chart picks, the chart
    repository, and the image tag of its values."""
    if not pinned:
        return []
    out = []
    index = ClusterIndex.build(root, cluster)
    for build, hr in index.of_kind("HelmRelease"):
        component = next((c for c in COMPONENTS if as_map(pinned.get(c)).get("chart") and index.chart_of(hr) == as_map(pinned.get(c)).get("chart")), None)
        if component is None or _refused(pinned, component):
            continue  # (a pin versions.schema.json refuses is the finding, at versions.yaml: not the files that match it)
        production, repository = str(as_map(pinned.get(component)).get("production", "")), as_map(pinned.get("charts")).get("repository")
        spec = as_map(hr.get("spec"))
        chart = as_map(as_map(spec.get("chart")).get("spec"))
        if chart and spec.get("chartRef"):
            continue  # the HelmRelease CRD's rule refuses both at once (api-validation): which source it uses is moot
        source = index.source_of(hr)
        if chart:
            out += _chart_spec_drift(ctx, build, hr, chart, "spec.chart.spec", component, production)
            url = repository
        elif source is not None and source[1].get("kind") == "HelmChart":  # chartRef to a HelmChart: its spec names the version
            helm_chart = as_map(source[1].get("spec"))
            out += _chart_spec_drift(ctx, source[0], source[1], helm_chart, "spec", component, production)
            # its repository: the source the HelmChart's sourceRef names, looked up as a chartRef is
            source = index.source_of({"metadata": source[1].get("metadata"), "spec": {"chartRef": helm_chart.get("sourceRef")}})
            url = repository
        else:
            url = f"{repository}/{as_map(pinned.get(component)).get('chart')}"
        if source is not None and source[1].get("kind") == "OCIRepository":
            sbuild, obj = source
            drift = _chart_ref_drift(as_map(as_map(obj.get("spec")).get("ref")), production)
            if drift:
                what, field = drift
                out.append(ctx.finding(obj, sbuild, "versions-drift", f"{what}, but versions.yaml pins {component} {production}",
                                       f"set spec.ref to `tag: {production}` alone, or change {component}.production (and version) "
                                       "in versions.yaml", field=field))
        if source is not None and source[1].get("kind") in ("OCIRepository", "HelmRepository"):
            sbuild, obj = source
            have = str(as_map(obj.get("spec")).get("url", "")).rstrip("/")
            if have != url:
                out.append(ctx.finding(obj, sbuild, "versions-drift", f"url {have!r}, but versions.yaml's chart repository gives {url!r}",
                                       f"set spec.url: {url}", field="spec.url" if have else None))
        value = as_map(spec.get("values"))
        for part in IMAGE_TAG[component][:-1]:
            value = as_map(value.get(part))
        tag = value.get(IMAGE_TAG[component][-1])
        if tag is not None and str(tag) != f"v{production}":
            path = ".".join(IMAGE_TAG[component])
            out.append(ctx.finding(hr, build, "versions-drift", f"values.{path} {tag!r}, but versions.yaml pins {component} {production}",
                                   f"set values.{path}: v{production}, or change {component}.production in versions.yaml",
                                   field="spec.values." + ".".join(IMAGE_TAG[component])))
    return out


def _chart_spec_drift(ctx, build, obj: dict, chart: dict, at: str, component: str, production: str) -> list[Finding]:
    """The chart version a HelmRelease's spec.chart.spec (a HelmRepository's chart) or a HelmChart's spec names (`chart`,
    written at `at`): helm-controller installs the newest chart a range or a missing version allows."""
    version = chart.get("version")
    if version is not None and str(version) == production:
        return []
    what = (f"{at}.version {version!r}" if version is not None else f"{at} names no version, so Flux installs the newest chart")
    return [ctx.finding(obj, build, "versions-drift", f"{what}, but versions.yaml pins {component} {production}",
                        f"set {at}.version: {production} (an exact version, not a range), or change {component}.production in versions.yaml",
                        field=f"{at}.version" if version is not None else (at if at != "spec" else None))]


def _chart_ref_drift(ref: dict, production: str) -> tuple[str, str | None] | None:
    """(what the OCIRepository installs instead of `production`, the field that decides it), or None.
    source-controller takes the first of spec.ref's digest, semver, tag it finds, and `latest` without one."""
    if ref.get("digest"):
        return f"spec.ref.digest {ref['digest']!r} picks the chart (it overrides any tag), so the version is not the pinned one by name", "spec.ref.digest"
    if ref.get("semver"):
        return (f"spec.ref.semver {ref['semver']!r} lets the registry pick the chart at each reconcile (it overrides "
                f"{'the tag' if ref.get('tag') else 'a tag'})", "spec.ref.semver")
    if not ref.get("tag"):
        return "spec.ref names no tag, so Flux pulls `latest`", "spec.ref" if ref else None
    if str(ref["tag"]) != production:
        return f"chart tag {ref['tag']!r}", "spec.ref.tag"
    return None


def _pin_findings(root: Path, pinned: dict) -> list[Finding]:
    """versions-pins at each component's `production` line: the production version whose own code the gate does not run
    (its validation, webhooks and flavor assigner are its versions.yaml's module version), and a production pin that
    differs from the module version without a `skew`. A production version the gate's own versions.yaml pins too is
    the gate's own skew, recorded there: not repeated."""
    out = []
    for component in (c for c in COMPONENTS if not _refused(pinned, c)):
        pin, own = as_map(pinned.get(component)), as_map(versions.pins().get(component))
        production, module = str(pin.get("production", "")), str(pin.get("version", "")).removeprefix("v")
        runs = str(own.get("version", "")).removeprefix("v")
        said, fixes = [], []
        if production and runs and production not in (runs, str(own.get("production", ""))):
            said.append(f"this gate runs {component} {runs}'s own code (validation, webhooks, admission), so its verdicts are "
                        f"{runs}'s, not {production}'s")
            fixes.append(f"check with a gate release whose versions.yaml builds {component} {production}, or keep production at {runs}")
            for change in (c for c in releases.between(component, runs, production) if c.repository and not c.repository.startswith("none")):
                said.append(f"{component} {change.since.removeprefix('v')} changed what this repository relies on ({change.key}, "
                            f"harness/core/releases.py): {change.note}")
                fixes.append(change.repository)
        if production and module and production != module and not pin.get("skew"):
            said.append(f"the module version the harness builds is v{module}, and no `skew` says why they differ (versions.yaml: "
                        "never change one without the other)")
            fixes.append(f"set {component}.version to v{production} together with production, or record the reason under {component}.skew")
        if said:
            out.append(Finding("versions.yaml", line_at(root, "versions.yaml", None, [component, "production"]), "", "versions-pins",
                               f"{component}.production is {production}: " + "; ".join(said), "; ".join(fixes), severity="warning"))
    return out


@functools.lru_cache(maxsize=1)
def _pin_schema() -> dict:
    """What the drift rule reads of a component (its chart and production), as harness/schemas-for-data/versions.schema.json
    has it."""
    schema = json.loads(resources.files("harness").joinpath("schemas-for-data/versions.schema.json").read_text())
    read = {k: schema["$defs"]["goPin"]["properties"][k] for k in ("chart", "production")}
    return {"$defs": schema["$defs"], "type": "object", "properties": {c: {"type": "object", "properties": read} for c in COMPONENTS}}


def _schema_errors(pinned: dict) -> list:
    from jsonschema import Draft202012Validator  # here, as config.py does: ~0.04 s once the gate is loaded

    return list(Draft202012Validator(_pin_schema()).iter_errors({c: pinned.get(c) for c in COMPONENTS}))


def _refused(pinned: dict, component: str) -> bool:
    return any(list(e.absolute_path)[:1] == [component] for e in _schema_errors(pinned))


def _refused_pins(root: Path, pinned: dict) -> list[Finding]:
    """versions-drift at a component's chart or production that versions.schema.json refuses (production `v0.17.1`, the
    module's spelling): one finding at that line, and the Flux files are not judged against it."""
    out = []
    for e in _schema_errors(pinned):
        path = [str(p) for p in e.absolute_path]
        value, named = e.instance, ".".join(path)
        fixed = str(value).removeprefix("v")
        hint = (f"set {named}: {fixed} (a chart version is written without v; `version` is the module's, with v)"
                if path[-1:] == ["production"] and fixed != str(value) and not _schema_errors({**pinned, path[0]: {**pinned[path[0]], "production": fixed}})
                else f"write {named} as harness/schemas-for-data/versions.schema.json says")
        out.append(Finding("versions.yaml", line_at(root, "versions.yaml", None, path), "", "versions-drift",
                           f"{named} is {value!r}, which versions.schema.json refuses ({e.message}): the charts and images the "
                           f"clusters install are not checked against it", hint))
    return out
