"""renovate.json proposes updates that land as one coherent change: its custom managers match every
pin of versions.yaml and every chart and image tag the versions-drift rule compares, and bumping
one group (as Renovate would: every match of the group's dependencies to the same new version)
leaves the gate without drift, while bumping versions.yaml alone does not.

Renovate's regexes are ECMAScript (RE2); the ones used here mean the same in Python once
`(?<name>` is spelled `(?P<name>`."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.core.versions import REPO_ROOT
from harness.gate import validate_repository
from harness.testing import copy_config

pytestmark = pytest.mark.static

CONFIG = json.loads((REPO_ROOT / "renovate.json").read_text())
PINS = yaml.safe_load((REPO_ROOT / "versions.yaml").read_text())
CONTROLLERS = ("flux/infrastructure/controllers/kueue.yaml", "flux/infrastructure/controllers/kuberay-operator.yaml")


@dataclass(frozen=True)
class Dep:
    file: str
    package: str
    datasource: str
    value: str
    span: tuple[int, int]  # of currentValue in the file


def _python_regex(pattern: str) -> re.Pattern:
    return re.compile(pattern.replace("(?<", "(?P<"))


def _file_pattern(pattern: str) -> re.Pattern:
    assert pattern.startswith("/") and pattern.endswith("/"), f"use /regex/ file patterns: {pattern!r}"
    return re.compile(pattern[1:-1])


def _template(template: str | None, fields: dict[str, str]) -> str | None:
    if template is None:
        return None
    return re.sub(r"\{\{\{(\w+)\}\}\}", lambda m: fields[m[1]], template)


def extract(root: Path, files: list[str]) -> list[Dep]:
    """What the custom managers of renovate.json find in `files` of `root`."""
    deps = []
    for manager in CONFIG["customManagers"]:
        patterns = [_file_pattern(p) for p in manager["managerFilePatterns"]]
        for rel in files:
            if not any(p.search(rel) for p in patterns):
                continue
            text = (root / rel).read_text()
            for regex in map(_python_regex, manager["matchStrings"]):
                for m in regex.finditer(text):
                    fields = {k: v for k, v in m.groupdict().items() if v is not None}
                    package = _template(manager.get("packageNameTemplate"), fields) or fields.get("packageName") or fields["depName"]
                    deps.append(Dep(rel, package, manager.get("datasourceTemplate") or fields["datasource"],
                                    fields["currentValue"], m.span("currentValue")))
    return deps


def _module_pins(block: dict, name: str = ""):
    for key, value in block.items():
        if isinstance(value, dict):
            if "module" in value and "version" in value:
                yield f"{name}{key}", value
            yield from _module_pins(value, f"{name}{key}.")


def _group(name: str) -> set[str]:
    rules = [r for r in CONFIG["packageRules"] if r.get("groupName") == name and "matchPackageNames" in r]
    assert rules, f"renovate.json has no group {name!r}"
    return {p for r in rules for p in r["matchPackageNames"]}


def _chart(component: str) -> str:
    return f"{PINS['charts']['repository'].removeprefix('oci://')}/{PINS[component]['chart']}"


def test_config_is_well_formed():
    assert CONFIG["$schema"] == "https://docs.renovatebot.com/renovate-schema.json"
    assert "helpers:pinGitHubActionDigests" in CONFIG["extends"], "action digests must be pinned and kept"
    assert set(CONFIG["enabledManagers"]) >= {"github-actions", "gomod", "pip_requirements", "custom.regex"}
    for manager in CONFIG["customManagers"]:
        assert manager["customType"] == "regex" and manager["matchStrings"] and manager["managerFilePatterns"]
        for pattern in manager["matchStrings"]:
            assert "currentValue" in _python_regex(pattern).groupindex, pattern
    locks = [_file_pattern(p) for p in CONFIG["pip_requirements"]["managerFilePatterns"]]
    assert all(any(p.search(f"locks/{name}") for p in locks) for name in ("harness.txt", "dev.txt"))
    assert "gomodTidy" in CONFIG["postUpdateOptions"], "a go.mod update must come with its go.sum"
    known = {"description", "matchManagers", "matchPackageNames", "matchDepNames", "matchFileNames", "matchUpdateTypes", "matchCurrentValue",
             "groupName", "enabled", "dependencyDashboardApproval"}
    for rule in CONFIG["packageRules"]:
        assert set(rule) <= known, f"unexpected packageRules keys {set(rule) - known}"


def test_every_versions_pin_is_matched():
    found = {(d.package, d.datasource, d.value) for d in extract(REPO_ROOT, ["versions.yaml"])}
    expected = {(pin["module"], "go", pin["version"]) for _, pin in _module_pins(PINS)}
    expected |= {(_chart(c), "docker", str(PINS[c]["production"])) for c in ("kueue", "kuberay")}
    expected |= {(pin["pypi"], "pypi", str(pin["version"])) for pin in PINS.values() if isinstance(pin, dict) and "pypi" in pin}
    expected |= {(PINS["nvidia-device-plugin"]["chart"], "helm", str(PINS["nvidia-device-plugin"]["production"]))}  # its own repository
    assert len(expected) >= 14, expected
    assert expected <= found, f"pins renovate.json does not update: {sorted(expected - found)}"
    assert not found - expected, f"renovate.json matches what is no pin: {sorted(found - expected)}"


def test_every_chart_and_image_tag_is_the_chart_dependency():
    """Both tags the versions-drift rule compares, in each controller file, are the same dependency
    as versions.yaml's production pin, so one update moves all three."""
    deps = extract(REPO_ROOT, list(CONTROLLERS))
    for rel, component in zip(CONTROLLERS, ("kueue", "kuberay")):
        mine = [d for d in deps if d.file == rel]
        assert [(d.package, d.value) for d in mine] == [(_chart(component), str(PINS[component]["production"]))] * 2, mine


def test_the_device_plugin_chart_version_is_its_pins_dependency():
    """The HelmRelease's chart version of layer 1's device plugin is the same helm dependency as versions.yaml's pin."""
    rel = "flux/infrastructure/controllers/nvidia-device-plugin.yaml"
    assert [(d.package, d.datasource, d.value) for d in extract(REPO_ROOT, [rel])] == \
        [("nvidia-device-plugin", "helm", str(PINS["nvidia-device-plugin"]["production"]))]


@pytest.mark.parametrize("component, group", [("kueue", "Kueue"), ("kuberay", "KubeRay")])
def test_groups_tie_chart_and_module(component, group):
    """The chart (production), the Go module (version, and tools/fluxbuild's require) are one group."""
    assert {_chart(component), PINS[component]["module"]} <= _group(group)
    gomod = (REPO_ROOT / "tools/fluxbuild/go.mod").read_text()
    assert re.search(rf"^\s*{re.escape(PINS[component]['module'])} {re.escape(PINS[component]['version'])}$", gomod, re.M)


def test_kubernetes_group_holds_the_staging_modules_fluxbuild_links():
    gomod = (REPO_ROOT / "tools/fluxbuild/go.mod").read_text()
    staging = set(re.findall(r"^\s*(k8s\.io/[\w-]+) v0\.\d+\.\d+$", gomod, re.M)) - {"k8s.io/klog", "k8s.io/utils", "k8s.io/kube-openapi"}
    assert {"k8s.io/api", "k8s.io/apiserver"} <= staging
    assert staging | {"k8s.io/kubernetes"} <= _group("Kubernetes")


def _bump(version: str) -> str:
    major, minor, patch = version.split(".")
    return f"{major}.{minor}.{int(patch) + 1}"


def _apply(root: Path, deps: list[Dep], new: str) -> None:
    by_file: dict[str, list[Dep]] = {}
    for d in deps:
        by_file.setdefault(d.file, []).append(d)
    for rel, mine in by_file.items():
        text = (root / rel).read_text()
        for d in sorted(mine, key=lambda d: d.span, reverse=True):
            text = text[:d.span[0]] + new + text[d.span[1]:]
        (root / rel).write_text(text)


@pytest.mark.parametrize("component, group", [("kueue", "Kueue"), ("kuberay", "KubeRay")])
def test_a_group_update_leaves_no_drift(tmp_path, component, group):
    root = copy_config(tmp_path / "repo")
    production = str(PINS[component]["production"])
    chart_deps = [d for d in extract(root, ["versions.yaml", *CONTROLLERS])
                  if d.package in _group(group) and d.datasource == "docker"]
    assert len(chart_deps) == 3, chart_deps  # versions.yaml production, OCIRepository tag, HelmRelease image tag
    assert {d.value for d in chart_deps} == {production}

    # versions.yaml alone: the drift rule must object, or the next assertion proves nothing.
    _apply(root, [d for d in chart_deps if d.file == "versions.yaml"], _bump(production))
    drift = [f for f in validate_repository(root).findings if f.rule == "versions-drift"]
    assert len(drift) >= 2, [f.text() for f in drift]

    # The whole group, as Renovate's one pull request writes it.
    _apply(root, [d for d in chart_deps if d.file != "versions.yaml"], _bump(production))
    drift = [f.text() for f in validate_repository(root).findings if f.rule == "versions-drift"]
    assert not drift, "\n".join(drift)
