"""versions.yaml against what each cluster really installs: the chart tag of the Kueue and KubeRay
OCIRepositories and the image tag of their HelmReleases, as Flux renders them for the cluster.
A drifted pin means the harness proves one version while AKS runs another."""
from __future__ import annotations

from pathlib import Path

from harness.gate.findings import Finding
from harness.gate.render import ClusterRender
from harness.gate.sources import SourceError, as_map, load_yaml

RULES = {"versions-drift": "each cluster's Kueue and KubeRay charts and images are the versions.yaml production pins"}
COMPONENTS = ("kueue", "kuberay")
IMAGE_TAG = {"kueue": ("controllerManager", "manager", "image", "tag"), "kuberay": ("image", "tag")}


def pins(root: Path) -> dict | None:
    """versions.yaml of the checkout the gate validates (None when unreadable: yaml-syntax says why)."""
    try:
        doc = load_yaml(root / "versions.yaml")
    except SourceError:
        return None
    return doc if isinstance(doc, dict) else None


def version_rules(ctx, root: Path, cluster: ClusterRender, pinned: dict | None) -> list[Finding]:
    if not pinned:
        return []
    out = []
    for build, obj in cluster.applied():
        for component in COMPONENTS:
            pin = as_map(pinned.get(component))
            chart, production = pin.get("chart"), str(pin.get("production", ""))
            if not chart or as_map(obj.get("metadata")).get("name") != chart:
                continue
            spec = as_map(obj.get("spec"))
            if obj.get("kind") == "OCIRepository":
                url = f"{as_map(pinned.get('charts')).get('repository')}/{chart}"
                drift = _chart_ref_drift(as_map(spec.get("ref")), production)
                if drift:
                    what, field = drift
                    out.append(ctx.finding(obj, build, "versions-drift", f"{what}, but versions.yaml pins {component} {production}",
                                           f"set spec.ref to `tag: {production}` alone, or change {component}.production (and version) "
                                           "in versions.yaml", field=field))
                if spec.get("url") != url:
                    out.append(ctx.finding(obj, build, "versions-drift", f"url {spec.get('url')!r}, but versions.yaml's chart repository gives {url!r}",
                                           f"set spec.url: {url}", field="spec.url" if "url" in spec else None))
            elif obj.get("kind") == "HelmRelease":
                value = as_map(spec.get("values"))
                for part in IMAGE_TAG[component][:-1]:
                    value = as_map(value.get(part))
                tag = value.get(IMAGE_TAG[component][-1])
                if tag is not None and str(tag) != f"v{production}":
                    path = ".".join(IMAGE_TAG[component])
                    out.append(ctx.finding(obj, build, "versions-drift", f"values.{path} {tag!r}, but versions.yaml pins {component} {production}",
                                           f"set values.{path}: v{production}, or change {component}.production in versions.yaml",
                                           field="spec.values." + ".".join(IMAGE_TAG[component])))
    return out


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
