"""The Kueue manager's own configuration, as each cluster's Kueue HelmRelease writes it
(values.managerConfig.controllerManagerConfigYaml, which replaces the chart's as a whole).

- kueue-config: the pinned Kueue manager loads it at start with its own code (tools/fluxbuild
  kueueconfig.go: config.Load, that is strict decoding and Kueue's validation, then the feature gates
  as cmd/kueue sets them). A configuration it refuses makes the manager exit: its Deployment
  crash-loops, Kueue's webhooks have no endpoint, and nothing is admitted anywhere on the cluster.
- kueue-rayjob-integration: a configuration that loads but leaves out ray.io/rayjob (Kueue then
  ignores every RayJob, which runs at once without quota).

- kuberay-feature-gates: the KubeRay operator's HelmRelease passes feature gates (values.featureGates) the pinned
  operator refuses at start (an unknown name, a Kueue gate, a non-boolean `enabled`): it exits, and no Ray object on
  the cluster is reconciled.

Each finding points at the line inside the literal block where the offending value is written. The checks of the
cluster's objects run Kueue's and KubeRay's code with the gates both operators set (`manager_of`).
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import yaml

from harness.core import HarnessError
from harness.gate.findings import Finding
from harness.gate.helper import helper
from harness.gate.origin import compose, descend, node_at, segments
from harness.gate.sources import as_list, as_map, parse_yaml

RULES = {
    "kueue-config": "the Kueue HelmRelease's manager configuration loads as the pinned Kueue manager loads it at start "
                    "(its strict decoding, validation and feature gates); else the manager exits and nothing is admitted",
    "kueue-rayjob-integration": "the Kueue HelmRelease's manager configuration enables the ray.io/rayjob integration",
    "kuberay-feature-gates": "the KubeRay operator's HelmRelease passes feature gates (values.featureGates) the pinned operator "
                             "knows; else it exits at start and no RayJob on the cluster runs",
}
RAYJOB_FRAMEWORK = "ray.io/rayjob"
# The Kueue integration that manages each Ray kind (Kueue's framework names, each registered by the pinned Kueue:
# pkg/controller/jobs/rayjob, raycluster and rayservice; test_gate_feature_gates holds them to Kueue's own registry).
INTEGRATIONS = {"RayJob": RAYJOB_FRAMEWORK, "RayCluster": "ray.io/raycluster", "RayService": "ray.io/rayservice"}
CONFIG_PATH = ["spec", "values", "managerConfig", "controllerManagerConfigYaml"]
GATES_PATH = ["spec", "values", "controllerManager", "featureGates"]
KUBERAY_CHART = "kuberay-operator"
KUBERAY_GATES_PATH = ["spec", "values", "featureGates"]  # the KubeRay chart passes them as --feature-gates, name=%t each
CHART_CONFIG = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"  # stands in for the chart's own (no featureGates)
CONFIG_REFERENCE = "https://kueue.sigs.k8s.io/docs/reference/kueue-config.v1beta2/"
_UNKNOWN_FIELD = re.compile(r'unknown field "([^"]+)"')
_QUOTED = re.compile(r'"([^"]+)"')


class KueueConfigError(HarnessError, RuntimeError):
    pass


@lru_cache(maxsize=16)
def _load(text: str, flags: str = "") -> dict:
    """The helper's answer for `text` (and the --feature-gates value `flags`): {"problems": [...], "config": {...} when
    there are none}. It depends on these alone: every cluster sharing the HelmRelease asks once."""
    return helper().call("kueue-config", KueueConfigError, text=text, flags=flags)


def refusals(text: str, flags: str = "") -> tuple[dict, ...]:
    """Why the pinned Kueue manager would refuse `text` as its configuration, started with --feature-gates=`flags`
    ({"field", "detail"} each); () when it starts with them."""
    return tuple(_load(text, flags).get("problems") or ())


def loaded(text) -> dict | None:
    """The configuration the pinned Kueue manager runs with, given `text` (its defaults filled in by Kueue's own
    loader, v1beta2 field names); None when it refuses the text."""
    return _load(text).get("config") if isinstance(text, str) else None


def manager_text(hr: dict):
    """The manager configuration a Kueue HelmRelease writes (values.managerConfig.controllerManagerConfigYaml), None
    when it keeps the chart's."""
    return as_map(as_map(as_map(hr.get("spec")).get("values")).get("managerConfig")).get("controllerManagerConfigYaml")


def values_gates(hr: dict, path: list[str] = GATES_PATH) -> tuple[dict[str, bool], list]:
    """The feature gates a HelmRelease's values pass as --feature-gates (at `path`: Kueue's controllerManager.featureGates,
    KubeRay's featureGates; entries {name, enabled}), and the entries the chart cannot write as name=true|false (both
    charts' templates format `enabled` with %t)."""
    entries = hr
    for key in path:
        entries = as_map(entries).get(key)
    gates, bad = {}, []
    for entry in as_list(entries):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("enabled"), bool):
            gates[entry["name"]] = entry["enabled"]
        else:
            bad.append(entry)
    return gates, bad


def flags_of(gates: dict[str, bool]) -> str:
    """The --feature-gates value the chart renders of `gates` (kueue.featureGates in its _helpers.tpl)."""
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in gates.items())


def manager_of(index) -> dict:
    """The Kueue manager a cluster runs (`index`: cluster_refs.ClusterIndex), as the gate's helper runs Kueue's code for
    it: {"config": its configuration text (None: the chart's), "gates": the feature gates its Helm values pass as
    --feature-gates}; the helper adds the configuration's featureGates."""
    releases = [hr for _, hr in index.of_kind("HelmRelease") if index.chart_of(hr) == "kueue"]
    texts = [manager_text(hr) for hr in releases]
    kuberay = [hr for _, hr in index.of_kind("HelmRelease") if index.chart_of(hr) == KUBERAY_CHART]
    return {"config": next((t for t in texts if isinstance(t, str)), None),
            "gates": {k: v for hr in releases for k, v in values_gates(hr)[0].items()},
            "kuberay_gates": {k: v for hr in kuberay for k, v in values_gates(hr, KUBERAY_GATES_PATH)[0].items()}}


def integration_on(manager: dict | None, kind) -> bool:
    """Whether the manager (manager_of) runs the Kueue integration of Ray kind `kind` (INTEGRATIONS), so that Kueue builds a
    Workload of a queued object of that kind: its configuration's integrations.frameworks (with Kueue's defaults), all of
    them with the chart's own configuration; False for another kind, or a configuration the manager refuses (kueue-config)."""
    text = (manager or {}).get("config")
    if kind not in INTEGRATIONS:
        return False
    if text is None:
        return True  # the chart's own frameworks list has every Ray kind
    return INTEGRATIONS[kind] in as_list(as_map(as_map(loaded(text)).get("integrations")).get("frameworks"))


def feature_enabled(manager: dict | None, name: str) -> bool:
    """Whether the manager runs with Kueue feature gate `name` on: as its values or configuration set it, else the pinned
    Kueue's default (its features registry, as the helper reads it)."""
    manager = manager or {}
    if name in (manager.get("gates") or {}):
        return manager["gates"][name]
    config = loaded(manager.get("config")) or {}
    return bool((config.get("featureGates") or {}).get(name, _load(CHART_CONFIG).get("defaults", {}).get(name, False)))


def manager_config_rules(ctx, root: Path, index) -> list[Finding]:
    """kueue-config and kueue-rayjob-integration for the Kueue HelmReleases of one cluster
    (`index`: cluster_refs.ClusterIndex)."""
    out = _kuberay_gate_rules(ctx, root, index)
    for build, hr in index.of_kind("HelmRelease"):
        if index.chart_of(hr) != "kueue":
            continue
        text, (gates, bad) = manager_text(hr), values_gates(hr)
        if text is None and not gates and not bad:
            continue  # the chart's own configuration, which enables ray.io/rayjob
        located, block = locate(ctx, root, index, build, hr, "kueue-config")
        if bad:
            key, _ = node_at(root, located.file, located.line, GATES_PATH)
            out.append(replace(located, line=key.start_mark.line + 1 if key is not None else located.line,
                               message=f"values.controllerManager.featureGates has entries the chart cannot pass as --feature-gates: "
                                       f"{bad} (it writes each as name=%t of `enabled`, which must be true or false): the manager "
                                       "refuses the flag and exits at start, so no workload on the cluster is admitted",
                               hint="write each entry as {name: <FeatureGate>, enabled: true|false}"))
            continue
        found = _refused(text if text is not None else CHART_CONFIG, block) or _refused_flags(text, flags_of(gates)) \
            or (text is not None and _without_rayjob(text, block))
        if found and found[0] == "flags":
            key, _ = node_at(root, located.file, located.line, GATES_PATH)
            out.append(replace(located, line=key.start_mark.line + 1 if key is not None else located.line, message=found[2], hint=found[3]))
            continue
        if found:
            rule, line, problem, hint = found
            out.append(replace(located, rule=rule, line=line, hint=hint,
                               message=f"values.managerConfig.controllerManagerConfigYaml {problem}"))
    return out


@lru_cache(maxsize=16)
def _operator_refusals(operator: str, flags: str) -> tuple[dict, ...]:
    return tuple(helper().call("operator-gates", KueueConfigError, operator=operator, flags=flags).get("problems") or ())


def _kuberay_gate_rules(ctx, root: Path, index) -> list[Finding]:
    """kuberay-feature-gates: the KubeRay operator's values.featureGates, as its main sets them at start."""
    out = []
    for build, hr in index.of_kind("HelmRelease"):
        if index.chart_of(hr) != KUBERAY_CHART:
            continue
        gates, bad = values_gates(hr, KUBERAY_GATES_PATH)
        problems = () if bad or not gates else _operator_refusals("kuberay", flags_of(gates))
        if not bad and not problems:
            continue
        located = ctx.finding(hr, build, "kuberay-feature-gates", "", "", cluster=index.cluster.name)
        key, _ = node_at(root, located.file, located.line, KUBERAY_GATES_PATH)
        what = (f"has entries the chart cannot pass as --feature-gates: {bad} (it writes each as name=%t of `enabled`, which must be "
                "true or false)") if bad else f"(--feature-gates={flags_of(gates)}) is refused by the pinned KubeRay operator at start " \
                f"({'; '.join(str(p.get('detail')) for p in problems)})"
        out.append(replace(located, line=key.start_mark.line + 1 if key is not None else located.line,
                           message=f"values.featureGates {what}: the operator exits, so no RayJob, RayCluster or RayService on the "
                                   "cluster is reconciled (admitted jobs hold their quota and never start)",
                           hint="write each entry as {name: <KubeRay feature gate>, enabled: true|false}, with the names the pinned "
                                "KubeRay knows (Kueue's gates belong in the Kueue HelmRelease)"))
    return out


def locate(ctx, root: Path, index, build, hr: dict, rule: str) -> tuple[Finding, "ConfigBlock"]:
    """A finding of `rule` located at the HelmRelease, and the lines of its manager configuration's text."""
    located = ctx.finding(hr, build, rule, "", "", cluster=index.cluster.name)
    text = manager_text(hr)
    key, node = node_at(root, located.file, located.line, CONFIG_PATH)
    return located, ConfigBlock(key.start_mark.line + 1 if key is not None else located.line,
                                getattr(node, "style", None) == "|" and isinstance(text, str), text)


class ConfigBlock:
    """Lines inside the literal block (`|`) the configuration is written in; else the key's line."""

    def __init__(self, key_line: int | None, literal: bool, text):
        self.key_line, self.literal, self.text = key_line, literal, text

    def line(self, path: list[str | int] | None = None, offset: int | None = None) -> int | None:
        if not self.literal or self.key_line is None:
            return self.key_line
        if offset is not None:
            return self.key_line + offset  # a literal block's lines start right below its key
        docs = compose(self.text) if path else ()
        key, _ = descend(docs[0], path) if docs and docs[0] is not None else (None, None)
        while key is None and path:  # the deepest part of the path that is written
            path = path[:-1]
            key, _ = descend(docs[0], path) if docs and docs[0] is not None else (None, None)
        return self.key_line + key.start_mark.line + 1 if key is not None and path else self.key_line


def _refused_flags(text: str | None, flags: str) -> tuple[str, None, str, str] | None:
    """("flags", None, message, hint) when the manager, its configuration loaded, refuses its --feature-gates."""
    problems = refusals(text if text is not None else CHART_CONFIG, flags) if flags else ()
    if not problems:
        return None
    said = "; ".join(str(p.get("detail")) for p in problems)
    return ("flags", None, f"values.controllerManager.featureGates (--feature-gates={flags}) is refused by the pinned Kueue manager "
            f"at start ({said}): the manager exits, so no workload on the cluster is admitted",
            "set feature gates in one place (the configuration's featureGates, or the values' controllerManager.featureGates), "
            "with names this Kueue version knows")


def _refused(text, block: ConfigBlock) -> tuple[str, int | None, str, str] | None:
    if not isinstance(text, str):
        return ("kueue-config", block.line(), f"is a {type(text).__name__}, not the text of a Kueue Configuration: "
                "the Kueue manager does not start", "write the Configuration as a YAML literal block (`controllerManagerConfigYaml: |`)")
    problems = refusals(text)
    if not problems:
        return None
    first = problems[0]
    detail = str(first.get("detail", ""))
    line = block.line()
    if first.get("field"):
        line = block.line(segments(first["field"]))
    elif m := _UNKNOWN_FIELD.search(detail):
        line = block.line(segments(m.group(1)))
    elif (at := _syntax_error_line(text)) is not None:
        line = block.line(offset=at)
    elif (at := _value_line(text, _QUOTED.findall(detail))) is not None:
        line = block.line(offset=at)  # e.g. a duration Go's decoder refuses, named by its value only
    said = "; ".join(f"{p['field']}: {p['detail']}" if p.get("field") else str(p.get("detail")) for p in problems)
    return ("kueue-config", line, f"is refused by the pinned Kueue manager when it loads it ({said}): the manager exits at start, "
            "so its webhooks have no endpoint and no workload on the cluster is admitted",
            f"correct the configuration as the error says (the fields: {CONFIG_REFERENCE}); "
            "feature gates must be ones this Kueue version knows")


def _syntax_error_line(text: str) -> int | None:
    """The 1-based line of the text's YAML syntax error (libyaml's mark), None when it parses."""
    try:
        parse_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        return mark.line + 1 if mark is not None else None
    return None


def _value_line(text: str, values: list[str]) -> int | None:
    """The 1-based line of the one scalar written as the last of `values`, None unless exactly one is."""
    docs = compose(text)
    if not values or not docs or docs[0] is None:
        return None
    found, todo = [], [docs[0]]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.ScalarNode) and node.value == values[-1]:
            found.append(node.start_mark.line + 1)
        elif isinstance(node, yaml.MappingNode):
            todo += [v for _, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return found[0] if len(found) == 1 else None


def _without_rayjob(text: str, block: ConfigBlock) -> tuple[str, int | None, str, str] | None:
    try:
        config = parse_yaml(text)
    except yaml.YAMLError:
        return None  # Kueue's own decoding refused it above
    frameworks = as_list(as_map(as_map(config).get("integrations")).get("frameworks"))
    hint = f"add `- {RAYJOB_FRAMEWORK}` under integrations.frameworks of the manager configuration"
    if not frameworks:
        return ("kueue-rayjob-integration", block.line(["integrations"]),
                "sets no integrations.frameworks, so Kueue manages only batch/job (its default) and ignores every RayJob", hint)
    if RAYJOB_FRAMEWORK not in frameworks:
        return ("kueue-rayjob-integration", block.line(["integrations", "frameworks"]),
                f"lists integrations.frameworks {frameworks} without {RAYJOB_FRAMEWORK}: Kueue ignores every RayJob", hint)
    return None
