"""versions.yaml against what each cluster really installs: the chart version of the Kueue and KubeRay
HelmReleases (the tag of the OCIRepository a chartRef names, spec.version of the HelmChart it names, or
spec.chart.spec.version of a HelmRepository's chart), their chart repository and the image tag of their values, as Flux
renders them for the cluster. A drifted pin means the harness proves one version while AKS runs another. Pins are read as
Flux and the container runtime read them (tools/fluxbuild's op pins: Masterminds semver for spec.ref.semver and a chart
version, pre-releases included where a constraint names one; an OCI HelmRepository's version as the tag written, as
source-controller pulls it; distribution/reference for an image), so an exact constraint, a digest beside the pinned tag
and a `tag@digest` image are the pin. The image of a release the gate renders (Kueue's) is judged as the rendered chart runs it after
spec.postRenderers (rendered_image_findings, from helm_values: a values tag, an empty one or none, an `images` entry or a
patch); the values' tag as written only for a chart the gate does not render (KubeRay's)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from harness.core import HarnessError, releases, versions
from harness.gate import chart_values, pin_schema, schemas
from harness.gate.cluster_index import ClusterIndex, finding_at
from harness.gate.findings import Finding
from harness.gate.helper import helper, submit_kept
from harness.gate.origin import line_at, written_prefix
from harness.gate.pin_schema import COMPONENTS, REQUIRED
from harness.gate.render import ClusterRender
from harness.gate.schema_check import KUBERNETES_VERSION
from harness.gate.sources import SourceError, as_list, as_map, load_yaml

RULES = {"versions-drift": "each cluster's Kueue, KubeRay and NVIDIA device plugin charts, chart repositories and images are the versions.yaml "
                           "production pins",
         "versions-pins": "(warning) versions.yaml's production Kueue and KubeRay are the versions whose own code the gate runs (its "
                          "versions.yaml's module versions), and each production pin differs from its module version only with a "
                          "`skew` saying why (the pin file's contract)",
         "versions-schema": "versions.yaml, when present, is what harness/schemas-for-data/versions.schema.json describes (every key, "
                            "type and version pattern) and each candidate is newer than its pin, listed once, with its release's "
                            "chart (a Kueue or KubeRay chart or production it refuses is versions-drift)"}
IMAGE_TAG = {"kueue": ("controllerManager", "manager", "image", "tag"), "kuberay": ("image", "tag"), "nvidia-device-plugin": ("image", "tag")}


class PinsError(HarnessError, RuntimeError):
    pass


def parsed(constraints: list[tuple[str, str]] = (), images: list[str] = (), oci: bool = False) -> dict:
    """tools/fluxbuild's op pins: per (semver constraint, version), whether the constraint admits that version and no higher
    one (Masterminds semver, as source-controller resolves spec.ref.semver and a chart version; with `oci`, an OCI
    HelmRepository's chart version, which is the tag itself when it is a version: `tag` in the answer); per image
    reference, its name, tag and digest (distribution/reference, as the container runtime parses it)."""
    return helper().call("pins", PinsError, pins={"constraints": [{"constraint": str(c), "version": str(v), "oci": oci} for c, v in constraints],
                                                   "images": [str(i) for i in images]})


def _pin_answer(constraint, production: str, oci: bool = False) -> dict:
    """op pins' answer for a chart version or spec.ref.semver: `pins` when it selects `production` (the string itself,
    or a constraint such as `0.17.1` or `=0.17.1` that admits it and nothing higher; from an OCI HelmRepository (`oci`)
    a version only as the tag written, `tag`)."""
    return {"pins": True} if str(constraint) == production else parsed(constraints=[(str(constraint), production)], oci=oci)["constraints"][0]


def _oci(source) -> bool:
    """Whether a chart's source (ClusterIndex.source_of) is an OCI HelmRepository, whose chart version source-controller
    pulls as the tag written when it is a version (tools/fluxbuild's op pins, `oci`)."""
    return source is not None and source[1].get("kind") == "HelmRepository" and as_map(source[1].get("spec")).get("type") == "oci"


def pins(root: Path) -> dict | None:
    """versions.yaml of the checkout the gate validates (None when unreadable: yaml-syntax says why, or not a pin file:
    pins_findings says why). Read once per state of the file (several rules ask); shared, not to be changed."""
    path = root / "versions.yaml"
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        key = (str(path),)
    if key not in _PINS:
        try:
            doc = load_yaml(path)
        except SourceError:
            doc = None
        _PINS[key] = doc if isinstance(doc, dict) and all(isinstance(doc.get(c), dict) for c in REQUIRED) else None
    return _PINS[key]


_PINS: dict[tuple, dict | None] = {}


def select_versions(root: Path | None, **chosen: str | None) -> None:
    """--kueue/--kuberay: the version selection of harness.core.versions ($RAY_KUEUE_VERSIONS) for this process, so schemas
    and accounting follow it. A version is selectable when the gate builds it: the pin or a candidate of the gate's own
    versions.yaml (harness.core.versions: its module path, chart and CRDs). A refusal names the flag and that file, and
    says when the checked repository's versions.yaml (`root`) lists the version (a gate release that builds it checks it).
    Kueue's own webhook validation (rule kueue-webhook, tools/fluxbuild) stays the pinned Kueue's code: it is linked in."""
    merged = versions.selection()  # $RAY_KUEUE_VERSIONS refused under its own name
    for name, version in chosen.items():
        if not version:
            continue
        try:
            merged[name] = versions.listed_version(name, version, f"--{name}")
        except versions.VersionSelectionError:
            own, builds = versions.VERSIONS_FILE, [versions.pinned(name), *(c["version"] for c in versions.candidates(name))]
            block = as_map((pins(root) or {}).get(name)) if root is not None and (root / "versions.yaml").resolve() != own.resolve() else {}
            listed = [str(v) for v in (block.get("version"), *(as_map(c).get("version") for c in as_list(block.get("candidates"))))
                      if v is not None]
            there = (f"; {root / 'versions.yaml'} lists it, but a gate builds only its own versions.yaml's: check with a gate "
                     f"release whose versions.yaml lists {name} {version}"
                     if any(v.removeprefix("v") == version.removeprefix("v") for v in listed) else "")
            raise versions.VersionSelectionError(f"--{name}: {name} {version} is neither the pin nor a candidate in the gate's "
                                                 f"versions.yaml ({own}, the versions it builds: {', '.join(builds)}){there}") from None
    if merged:
        os.environ[versions.SELECT_ENV] = versions.selection_text(merged)


def pins_findings(root: Path) -> list[Finding]:
    """A versions.yaml that parses but holds no pins the drift rule can read (a list, no kueue or kuberay entry): said,
    not skipped in silence; then versions-pins."""
    path = root / "versions.yaml"
    if not path.is_file():
        return []
    if pins(root) is not None:
        return pin_schema.refused_pins(root, pins(root)) + _pin_findings(root, pins(root))
    try:
        doc = load_yaml(path, root)
    except SourceError:
        return []  # yaml-syntax reports it
    what = f"is a {type(doc).__name__}" if not isinstance(doc, dict) else \
        f"has no {' or '.join(c for c in REQUIRED if not isinstance(doc.get(c), dict))} entry"
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
        if component is None or pin_schema.refused(pinned, component):
            continue  # (a pin versions.schema.json refuses is the finding, at versions.yaml: not the files that match it)
        production = str(as_map(pinned.get(component)).get("production", ""))
        own = as_map(pinned.get(component)).get("repository")  # a chart from its own repository (the device plugin's), not the MCR's
        repository = own or as_map(pinned.get("charts")).get("repository")
        spec = as_map(hr.get("spec"))
        chart = as_map(as_map(spec.get("chart")).get("spec"))
        if chart and spec.get("chartRef"):
            continue  # the HelmRelease CRD's rule refuses both at once (api-validation): which source it uses is moot
        source = index.source_of(hr)
        if chart:
            out += _chart_spec_drift(ctx, build, hr, chart, "spec.chart.spec", component, production, _oci(source))
            url = repository
        elif source is not None and source[1].get("kind") == "HelmChart":  # chartRef to a HelmChart: its spec names the version
            helm_chart, named = as_map(source[1].get("spec")), source
            # its repository: the source the HelmChart's sourceRef names, looked up as a chartRef is
            source = index.source_of({"metadata": source[1].get("metadata"), "spec": {"chartRef": helm_chart.get("sourceRef")}})
            out += _chart_spec_drift(ctx, named[0], named[1], helm_chart, "spec", component, production, _oci(source))
            url = repository
        else:
            url = repository if own else f"{repository}/{as_map(pinned.get(component)).get('chart')}"
        if source is not None and source[1].get("kind") == "OCIRepository":
            sbuild, obj = source
            drift = _chart_ref_drift(as_map(as_map(obj.get("spec")).get("ref")), production)
            if drift:
                what, field = drift
                out.append(ctx.finding(obj, sbuild, "versions-drift", f"{what}, but versions.yaml pins {component} {production}",
                                       f"set spec.ref to `tag: {production}` (beside its digest, if you pin one), or change {component}.production (and version) "
                                       "in versions.yaml", field=field))
        if source is not None and source[1].get("kind") in ("OCIRepository", "HelmRepository"):
            sbuild, obj = source
            have = str(as_map(obj.get("spec")).get("url", "")).rstrip("/")
            if have != url:
                out.append(ctx.finding(obj, sbuild, "versions-drift", f"url {have!r}, but versions.yaml's chart repository gives {url!r}",
                                       f"set spec.url: {url}", field="spec.url" if have else None))
        if renders_image(index, hr):
            continue  # its image is judged as the rendered chart installs it (rendered_image_findings)
        values = as_map(spec.get("values"))
        tag, written, nulled = written_tag(values, component)
        # The chart writes `repository:tag`: the tag the runtime pulls is what the reference's parser finds there (a
        # digest may follow it: `v0.17.1@sha256:...` pins the same version immutably).
        repository = _at(values, IMAGE_TAG[component][:-1]).get("repository")
        image = parsed(images=[f"{repository or 'registry.invalid/image'}:{tag}"])["images"][0] if tag is not None else {}
        if tag is not None and image.get("tag") != f"v{production}":
            path, where = ".".join(IMAGE_TAG[component]), ".".join(written)
            what = (f"values.{where} is null, which removes the chart's default (Helm's coalesce drops a null value), so " +
                    ("the chart renders the image without a tag" if written == list(IMAGE_TAG[component]) else
                     f"Helm fails to render the chart's `{{{{ .Values.{where}.repository }}}}:...` image (nil pointer) and the release fails")
                    if nulled else f"values.{path} {tag!r}")
            out.append(ctx.finding(hr, build, "versions-drift", f"{what}, but versions.yaml pins {component} {production}",
                                   f"set values.{path}: v{production}, or change {component}.production in versions.yaml",
                                   field="spec.values." + where))
    return out


def written_tag(values: dict, component: str) -> tuple[object, list, bool]:
    """The image tag a HelmRelease's `values` write for a pinned component's chart: (the tag, or None when none is written;
    the path written of IMAGE_TAG's; whether a null on it removes the chart's default). Helm's coalesce deletes a key
    whose value is null, the chart's default included, so a null `tag` (or `image`) is the tag `""` for a chart that
    writes `repository:tag`: one reading for both."""
    path = list(IMAGE_TAG[component])
    written = written_prefix(values, path)
    node = values
    for part in written:
        node = node[part]
    if written and node is None:
        return "", written, True
    return (node if written == path else None), written, False


def rendered_image_findings(ctx, root: Path, rendered: list, answers: dict) -> list[Finding]:
    """versions-drift for the image of a pinned component's HelmRelease the gate renders (helm_values' rendered releases:
    (index, build, hr, chart, request key) and Helm's answers, after spec.postRenderers as helm-controller applies them):
    the image the chart's containers of the values' image repository really run, whatever the values write there (a tag,
    an empty tag or none: the chart then installs its values.yaml default or its appVersion). Its cause is located by
    rendering the release once more without its post-renderers: an image those change is reported at spec.postRenderers,
    else at the values' tag (or where the values would write it)."""
    pinned, out = pins(root), []
    for index, build, hr, pin, key in rendered:
        component = next((c for c in COMPONENTS if pinned and as_map(pinned.get(c)).get("chart") == pin), None)
        answer = answers[key]
        if component is None or answer.get("error") or answer.get("valuesError") or index.chart_version_of(hr) not in (None, answer.get("version")):
            continue  # another chart version than the rendered one: its default image is that chart's (versions-drift says so)
        production = pin_schema.production(pinned, component)
        if not production:
            continue  # (a pin versions.schema.json refuses is the finding, at versions.yaml: not the image that matches it)
        before = _without_post_renderers(key) if json.loads(key).get("postRenderers") else answer
        inline, composed = as_map(as_map(hr.get("spec")).get("values")), as_map(answer.get("values") or as_map(hr.get("spec")).get("values"))
        repository = _at(composed, IMAGE_TAG[component][:-1]).get("repository") or \
            _at(_chart_values(key), IMAGE_TAG[component][:-1]).get("repository")
        if not repository or before.get("error"):
            continue
        after = {slot: image for item in answer.get("objects") or [] for slot, image in _images(item["object"])}
        slots = [(slot, image, after.get(slot)) for item in before.get("objects") or [] for slot, image in _images(item["object"])]
        refs = iter(parsed(images=[str(repository), *(i for _, b, a in slots for i in (b, a or b))])["images"])
        want, drifted = next(refs), {}
        for _, image, post in slots:
            ref, post_ref = next(refs), next(refs)
            if ref.get("name") and ref.get("name") == want.get("name") and post is not None and post_ref.get("tag") != f"v{production}":
                drifted.setdefault(ref.get("tag") != f"v{production}" or post == image, post)
        path, (tag, written, nulled) = ".".join(IMAGE_TAG[component]), written_tag(inline, component)
        for from_values, image in drifted.items():  # one finding per cause: the values (or the chart's default), or the post-renderers
            if not from_values:
                message, hint, where = (f"spec.postRenderers change the {pin} chart's image to {image}, not v{production} (versions.yaml's "
                                        f"{component} production pin)", f"remove the image change (an `images` entry's newTag, newName or "
                                        f"digest, or a patch of the image) from spec.postRenderers, or change {component}.production in "
                                        "versions.yaml", ["spec", "postRenderers"])
            elif tag not in (None, ""):
                message, hint, where = (f"values.{path} {tag!r}, so the {pin} chart {answer.get('version')} installs {image}, but "
                                        f"versions.yaml pins {component} {production}", f"set values.{path}: v{production}, or change "
                                        f"{component}.production in versions.yaml", ["spec", "values", *IMAGE_TAG[component]])
            else:
                said = f"{'.'.join(written)} is null (which removes the chart's default)" if nulled else \
                    f"{path} is {'empty' if tag == '' else 'not written'}"
                message, hint, where = (f"values.{said}, so the {pin} chart {answer.get('version')} installs {image}, not "
                                        f"v{production} (versions.yaml's {component} production pin)", f"set values.{path}: v{production}",
                                        ["spec", "values", *written])
            out.append(finding_at(ctx, root, hr, build, where, "versions-drift", message, hint, cluster=index.cluster.name))
    return out


def renders_image(index, hr: dict) -> bool:
    """Whether helm_values renders this HelmRelease's chart (rendered_image_findings then judges its image as installed):
    a chart a pinned module carries, at a version such a module ships, on a cluster whose layers all render."""
    pin = index.chart_of(hr)
    return index.complete and pin in schemas.CHART_SOURCES and chart_module(pin, index.chart_version_of(hr)) is not None


def chart_module(pin: str, installed: str | None) -> str | None:
    """The module version whose chart a HelmRelease of chart `pin` installing chart version `installed` (None: a range,
    a digest or none, which versions-drift reports) is rendered with: the version this run selects (--kueue, as that
    upgrade installs it), else the one that ships `installed` among versions.yaml's pin and candidates (the pin for
    None); None when none does."""
    if pin in versions.selection() or installed is None:
        return versions.module(pin)[1]
    listed = [versions.pinned(pin), *(c["version"] for c in versions.candidates(pin))]
    return next((v for v in listed if versions.chart_version(pin, v).removeprefix("v") == installed.removeprefix("v")), None)


def _without_post_renderers(key: str) -> dict:
    """Helm's answer for an op helm request (its JSON key) without its spec.postRenderers."""
    request = {k: v for k, v in json.loads(key).items() if k not in ("postRenderers", "postRenderStrategy")}
    return submit_kept("fluxbuild", "helm", PinsError, helm=request, kubernetes_version=KUBERNETES_VERSION).result()


def _images(obj: dict):
    """((kind, namespace, name, container), image) of a rendered workload's containers and init containers."""
    meta = as_map(obj.get("metadata"))
    for c in _containers(obj):
        if c.get("image"):
            yield (obj.get("kind"), meta.get("namespace"), meta.get("name"), c.get("name")), str(c.get("image"))


def _at(values: dict, path) -> dict:
    for part in path:
        values = as_map(values.get(part))
    return values


def _chart_values(key: str) -> dict:
    """The values.yaml of the chart an op helm request (its JSON key) renders."""
    try:
        return chart_values.chart_defaults(json.loads(key)["chart"]) or {}
    except (KeyError, ValueError, TypeError):
        return {}


def _containers(obj: dict) -> list[dict]:
    """The containers and init containers of a rendered workload's pod template."""
    pod = as_map(as_map(as_map(obj.get("spec")).get("template")).get("spec"))
    return [as_map(c) for c in as_list(pod.get("containers")) + as_list(pod.get("initContainers"))]


def _chart_spec_drift(ctx, build, obj: dict, chart: dict, at: str, component: str, production: str, oci: bool) -> list[Finding]:
    """The chart version a HelmRelease's spec.chart.spec (a HelmRepository's chart) or a HelmChart's spec names (`chart`,
    written at `at`): helm-controller installs the newest chart a range or a missing version allows; from an OCI
    HelmRepository (`oci`) a version is the tag pulled as written (`v0.17.1` is not the tag 0.17.1)."""
    version, answer = chart.get("version"), {}
    if version is not None:
        answer = _pin_answer(version, production, oci)
        if answer.get("pins"):
            return []
    what = (f"{at} names no version, so Flux installs the newest chart" if version is None else f"{at}.version {version!r}" +
            (" is the tag the OCI HelmRepository pulls, as written" if answer.get("tag") else ""))
    exact = "the tag as the registry holds it" if answer.get("tag") else "an exact version, not a range"
    return [ctx.finding(obj, build, "versions-drift", f"{what}, but versions.yaml pins {component} {production}",
                        f"set {at}.version: {production} ({exact}), or change {component}.production in versions.yaml",
                        field=f"{at}.version" if version is not None else (at if at != "spec" else None))]


def _chart_ref_drift(ref: dict, production: str) -> tuple[str, str | None] | None:
    """(what the OCIRepository installs instead of `production`, the field that decides it), or None.
    source-controller takes the first of spec.ref's digest, semver, tag it finds, and `latest` without one. A digest beside
    `tag: <production>` (the immutable pin Flux's docs recommend) and a semver constraint that admits only `production`
    (`0.17.1`, `=0.17.1`) pin it too."""
    if ref.get("digest"):
        if ref.get("tag") is not None and str(ref["tag"]) == production:
            return None
        return (f"spec.ref.digest {ref['digest']!r} picks the chart (it overrides {'the tag' if ref.get('tag') else 'a tag'}), so the "
                "version is not the pinned one by name"), "spec.ref.digest"
    if ref.get("semver") and _pin_answer(ref["semver"], production).get("pins"):
        return None
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
    for component in (c for c in REQUIRED if not pin_schema.refused(pinned, c)):
        pin, own = as_map(pinned.get(component)), as_map(versions.pins().get(component))
        production, module = str(pin.get("production", "")), str(pin.get("version", "")).removeprefix("v")
        runs = str(own.get("version", "")).removeprefix("v")
        said, fixes = [], []
        if production and runs and production not in (runs, str(own.get("production", ""))):
            said.append(f"this gate runs {component} {runs}'s own code (validation, webhooks, admission), so its verdicts are "
                        f"{runs}'s, not {production}'s")
            candidate = next((str(c.get("version")) for c in map(as_map, as_list(own.get("candidates"))) if str(c.get("chart")) == production), None)
            fixes.append((f"check with `scripts/validate --{component} {candidate}` (a candidate this gate builds)" if candidate else
                          f"check with a gate release whose versions.yaml builds {component} {production}") + f", or keep production at {runs}")
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
