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
                tag = as_map(spec.get("ref")).get("tag")
                if str(tag) != production:
                    out.append(ctx.finding(obj, build, "versions-drift", f"chart tag {tag!r}, but versions.yaml pins {component} {production}",
                                           f"set spec.ref.tag: {production}, or change {component}.production (and version) in versions.yaml",
                                           field="spec.ref.tag" if "tag" in as_map(spec.get("ref")) else None))
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
