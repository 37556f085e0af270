"""A HelmRelease's values rendered with its chart as helm-controller renders them, and the objects that makes
checked as the apiserver would check them on install.

helm-controller installs a chart by rendering it with the HelmRelease's values (Helm's own engine: values
coalesced with the chart's values.yaml, validated against its values.schema.json, templates executed for the
cluster's Kubernetes version) and creating the objects. A value the templates cannot use (a string where a
map is expected), or one they copy into an object the apiserver refuses (a toleration's effect `NoSchedul`,
a quantity `2 cores`), fails the install or the upgrade: the release is failed, helm-controller retries, and
the cluster keeps no Kueue (on a new cluster) or the previous release while every layer that dependsOn it
waits. Every object is valid YAML in the repository, so no other check sees it.

tools/fluxbuild's op helm renders the chart with Helm's engine (helm.sh/helm/v4, the line helm-controller
links; versions.yaml records the release used), as helm-controller names the release (spec.releaseName, else
<targetNamespace>-<name> or <name>) into its namespace (targetNamespace, else the HelmRelease's), with its
spec.postRenderers applied as helm-controller applies them (tools/fluxbuild postrender.go). The objects go
through the gate's create validation (schema_check: the apiserver's own, in tools/fluxbuild and
tools/kubecheck). Which charts: those a pinned module carries (harness.gate.schemas.CHART_SOURCES; the MCR
chart of versions.yaml packages the same chart), matched by the chart a HelmRelease installs
(ClusterIndex.chart_of), at the version it installs (ClusterIndex.chart_version_of): the module of versions.yaml's pin
or candidate that ships that chart version, or the version this run selects (--kueue: what that upgrade installs); a
version no listed module ships is a warning that the values are not judged. KubeRay's chart is not in any module the
proxy serves, so its values are not rendered.

Objects of a kind the gate has no schema for (cert-manager's Certificate with values.enableCertManager, Prometheus'
ServiceMonitor) are not judged: their CRDs may be installed from outside the repository (kueue_wiring warns when
cert-manager is missing). A finding is reported where the value is written: the values key a Helm error names (.Values.a.b), or the
values entry that holds the value the apiserver quotes, else the HelmRelease's `values`.
"""
from __future__ import annotations

import base64
from dataclasses import replace
import difflib
import json
import re
from pathlib import Path

import yaml

from harness.core import HarnessError, versions
from harness.gate import chart_values, kueue_webhooks, operator_placement, pin_schema, schema_check, schemas, version_rules
from harness.gate.chart_render import HelmError, answer as chart_answer, chart_for, release_of, render, request_for  # noqa: F401 (HelmError, release_of: this module's API)
from harness.gate.cluster_index import ClusterIndex, finding_at
from harness.gate.cluster_refs import chart_health_checks
from harness.gate.findings import Finding
from harness.gate.origin import compose, descend, leaves, segments, value_at, written_prefix
from harness.gate.helper import submit_kept
from harness.gate.render import as_stored
from harness.gate.sources import as_list, as_map, parse_yaml, resource_id

RULES = {
    "helm-values-unused": "(warning) every key a HelmRelease's values write is one its chart reads: a key the chart's values.yaml does "
                          "not have and whose removal changes nothing Helm renders (a typo such as managerConfg) is dropped without "
                          "a word, and what it meant to set keeps the chart's default",
    "helm-values": "each HelmRelease of a chart the pinned modules carry (Kueue's, the NVIDIA device plugin's) renders with its values as helm-controller renders "
                   "it (Helm's own engine and the chart's values schema) into objects the apiserver accepts (its own create "
                   "validation); else the install or upgrade fails and the layers that dependsOn it wait",
}
HINT = "change the value at this line so that the chart renders what the message asks for (see the chart's values.yaml)"
VALUES_PATH = re.compile(r"<\.Values((?:\.[A-Za-z0-9_-]+)+)>")  # text/template: at <.Values.controllerManager.replicas>
SCHEMA_PATH = re.compile(r"at '/([^']*)'")  # Helm's values schema errors: - at '/controllerManager/replicas': ...
POST_RENDER_ERROR = "error while running post render on files"  # Helm v4's wording, kept by tools/fluxbuild postrender.go
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def helm_rules(ctx, root: Path, clusters: list) -> list[Finding]:
    """helm-values on every cluster whose layers all render; the same HelmRelease (the same request) is rendered and
    checked once for all clusters. It waits on the helpers only: validate.py runs it beside the other rules."""
    releases, pending, out = [], {}, []
    for cluster in clusters:
        index = ClusterIndex.build(root, cluster)
        if not index.complete:
            continue  # a layer did not render (kustomize-build says why)
        for build, hr in index.of_kind("HelmRelease"):
            pin, spec = index.chart_of(hr), as_map(hr.get("spec"))
            if spec.get("values") is not None and not isinstance(spec.get("values"), dict):
                # The CRD takes any JSON there; helm-controller's GetValues reads a mapping and drops anything else unsaid.
                out.append(finding_at(ctx, root, hr, build, ["spec", "values"], "helm-values",
                                      f"spec.values is a {type(spec['values']).__name__}, not a mapping: helm-controller drops it without "
                                      "a word and installs the chart with its default values", "write spec.values as a mapping of the "
                                      "chart's values (or remove it)", cluster.name))
                continue
            if pin not in schemas.CHART_SOURCES:
                continue  # no chart offline: not judged
            chart, failed = chart_for(ctx.config, root, index, hr)
            if chart is None:  # its module cannot be fetched, or a chart version no module of this gate carries: said, not judged
                out += _not_judged(ctx, root, index, build, hr, pin, failed)
                continue
            key, request = request_for(index, hr, chart)
            pending.setdefault(key, render(key, request))
            releases.append((index, build, hr, pin, key))
    checker = schema_check.Checker(tuple(ctx.config.crd_files(root)))
    answers = {key: job.result() for key, job in pending.items()}
    checks = {key: checker.submit([r["object"] for r in a.get("objects") or []]) for key, a in answers.items() if not a.get("error")}
    problems = {key: job() for key, job in checks.items()}
    for index, build, hr, pin, key in releases:
        answer = answers[key]

        def at(path: list, message: str) -> Finding:
            message = f"the {pin} chart {answer.get('version')} with these values: {message}"
            inline = as_map(as_map(hr.get("spec")).get("values"))
            source = None if not path or written_prefix(inline, path) == path else _source_of(ctx, root, index, hr, path)
            if source:  # a value that only a valuesFrom object writes: where that object's values write it
                file, line, obj = source
                return Finding(file, line, resource_id(obj), "helm-values", f"{message} (values.{'.'.join(map(str, path))}, from "
                               f"spec.valuesFrom of HelmRelease {as_map(hr.get('metadata')).get('name')})", HINT, f"cluster {index.cluster.name}")
            return finding_at(ctx, root, hr, build, ["spec", "values", *written_prefix(inline, path)], "helm-values",
                              message, HINT, cluster=index.cluster.name)

        if answer.get("valuesError"):  # helm-controller cannot compose the values: it fails the release (ValuesError)
            ref = as_map(answer.get("valuesRef"))
            if ref:  # the referenced object's data (a missing object or key is cluster_refs' object-ref)
                out.append(_values_data_error(ctx, root, index, hr, ref, answer["valuesError"]))
            continue
        values = as_map(answer.get("values") or as_map(hr.get("spec")).get("values"))  # with valuesFrom, as helm-controller composes them
        if answer.get("error"):
            error = " ".join(answer["error"].split())  # Helm's template errors span lines
            if error.startswith(POST_RENDER_ERROR):  # tools/fluxbuild postrender.go: kustomize refused a post-renderer
                out.append(finding_at(ctx, root, hr, build, ["spec", "postRenderers"], "helm-values", f"helm-controller cannot apply "
                                      f"spec.postRenderers to what the {pin} chart {answer.get('version')} renders, so the release "
                                      f"fails: {error}", "make each patch's target (or the patch's own kind, name and namespace) "
                                      "match an object the chart renders, as `helm template` with these values shows",
                                      cluster=index.cluster.name))
                continue
            out.append(at(_error_path(error), f"Helm refuses to render it, so the release fails: {error}"))
            continue
        refused: dict[tuple, list[str]] = {}  # values path written -> the refusals it explains (one finding each path)
        for item, problem in zip(answer.get("objects") or [], problems[key]):
            if problem is None or problem.rule == "schema-unknown-kind":
                continue  # a kind the gate has no CRD for (cert-manager's Certificate, a ServiceMonitor) may come from outside
            for err in problem.errors:
                obj = item["object"]
                what = f"{obj.get('kind')} {as_map(obj.get('metadata')).get('name')} ({item['template']}, {problem.rule})"
                refused.setdefault(tuple(_holding(values, obj, err)), []).append(f"{what}: {err.get('message')}")
        for path, why in refused.items():
            shown = "; ".join(why[:3]) + (f"; and {len(why) - 3} more" if len(why) > 3 else "")
            out.append(at(list(path), f"it renders {'an object' if len(why) == 1 else f'{len(why)} objects'} the apiserver refuses, "
                                      f"so the release fails: {shown}"))
    return (out + _health_checks(ctx, root, releases, answers) + _unused(ctx, root, releases, answers)
            + version_rules.rendered_image_findings(ctx, root, releases, answers)
            + operator_placement.placement_findings(ctx, root, releases, answers, problems)
            + kueue_webhooks.scope_findings(ctx, root, releases, answers, chart_answer))


def _not_judged(ctx, root: Path, index: ClusterIndex, build, hr: dict, pin: str, failed: str = "") -> list[Finding]:
    """A warning that a HelmRelease's values are not rendered: its chart's module could not be fetched (`failed`), or
    the chart version it installs is in no module this gate lists, said only when that version is the checked
    repository's own pin (else versions-drift is the one finding)."""
    installed = index.chart_version_of(hr)
    production = pin_schema.production(version_rules.pins(root), pin)
    if not failed and production and production.removeprefix("v") != str(installed).removeprefix("v"):
        return []
    listed = [versions.chart_version(pin, v) for v in [versions.pinned(pin), *(c["version"] for c in versions.candidates(pin))]]
    why = failed or f"this gate carries the {pin} chart at {', '.join(listed)} only (its versions.yaml's pin and candidates)"
    spec = as_map(hr.get("spec"))
    return [finding_at(ctx, root, hr, build, ["spec", "chartRef" if spec.get("chartRef") else "chart"], "helm-values",
                       f"HelmRelease {as_map(hr.get('metadata')).get('name')} installs the {pin} chart {installed}, and {why}: the "
                       "values are not rendered, so helm-values, helm-values-unused, operator-placement and versions-drift's image do not judge them",
                       "run the gate where the Go module proxy (or its module cache) serves that module" if failed else
                       f"validate with a gate whose versions.yaml lists {pin} {installed} (as its pin or a candidate)",
                       cluster=index.cluster.name, severity="warning")]


def _unused(ctx, root: Path, releases: list, answers: dict) -> list[Finding]:
    """helm-values-unused: values keys the chart's values.yaml does not know (below a mapping it fills in; one it leaves
    empty, such as nodeSelector, takes any key) that change nothing when left out, as Helm's own rendering shows."""
    out, renders = [], {}
    for index, build, hr, pin, key in releases:
        if answers[key].get("error"):
            continue
        request = json.loads(key)
        defaults = chart_values.chart_defaults(request["chart"])
        if defaults is None:
            continue
        for path, known in _unknown_keys(request["values"], defaults, []):
            without = json.loads(key)
            parent = without["values"]
            for step in path[:-1]:
                parent = parent[step]
            del parent[path[-1]]
            probe = json.dumps(without, sort_keys=True)
            if probe not in renders:
                renders[probe] = submit_kept("fluxbuild", "helm", HelmError, helm=without, kubernetes_version=schema_check.KUBERNETES_VERSION)
            if renders[probe].result().get("objects") != answers[key].get("objects"):
                continue  # a template reads it (a key the chart's values.yaml leaves out): not unused
            close = difflib.get_close_matches(str(path[-1]), known, n=1)
            out.append(finding_at(ctx, root, hr, build, ["spec", "values", *path], "helm-values-unused",
                                  f"values.{'.'.join(map(str, path))} is read by no template of the {pin} chart "
                                  f"{answers[key].get('version')}: Helm renders the same without it, so what it sets keeps the "
                                  f"chart's default" + (f" (did you mean {'.'.join(map(str, [*path[:-1], close[0]]))}?)" if close else ""),
                                  "spell the key as the chart's values.yaml does, or remove it", cluster=index.cluster.name, severity="warning"))
    return out


def _source_of(ctx, root: Path, index: ClusterIndex, hr: dict, path: list) -> tuple[str, int | None, dict] | None:
    """(file, line, object) where the last valuesFrom object whose values write `path` writes it (helm-controller merges
    them in order, the last winning): the line inside its values key's block, or in the file a kustomize generator made
    the key from; None when none does."""
    namespace = str(as_map(hr.get("metadata")).get("namespace") or "default")
    found = None
    for ref in (as_map(r) for r in as_list(as_map(hr.get("spec")).get("valuesFrom"))):
        entry, key = index.named.get((str(ref.get("kind")), namespace, str(ref.get("name")))), str(ref.get("valuesKey") or "values.yaml")
        raw = as_map(as_stored(entry[1]).get("data")).get(key) if entry else None
        if raw is None:
            continue
        try:
            text = str(raw) if entry[1].get("kind") == "ConfigMap" else base64.b64decode(str(raw)).decode()
        except ValueError:
            continue
        target = [p for p in str(ref.get("targetPath") or "").split(".") if p]
        if (target and [str(p) for p in path[:len(target)]] == target) or (not target and path and _writes(text, path)):
            found = (entry, key, text, [] if target else path)
    if found is None:
        return None
    (build, obj), key, text, inner = found
    at = ctx.finding(obj, build, "", "", "", field=f"data[{key}]")
    if at.line:  # the object is written in the repository: its key's line, plus the value's line in a literal block
        lines = (root / at.file).read_text(encoding="utf-8", errors="replace").splitlines()
        block = at.line <= len(lines) and re.search(r":\s*\|[-+0-9]*\s*$", lines[at.line - 1])
        return at.file, at.line + 1 + _line_in(text, inner) if block and inner else at.line, obj
    generated = _generator_file(ctx, str(as_map(obj.get("metadata")).get("name")), str(obj.get("kind")), key)
    return (generated, 1 + _line_in(text, inner), obj) if generated else (at.file, at.line, obj)


def _values_data_error(ctx, root: Path, index: ClusterIndex, hr: dict, ref: dict, error: str) -> Finding:
    """helm-values at the key of the valuesFrom object whose data helm-controller cannot use (values that are no YAML, a
    targetPath value that does not merge)."""
    namespace = str(as_map(hr.get("metadata")).get("namespace") or "default")
    build, obj = index.named.get((str(ref.get("kind")), namespace, str(ref.get("name"))), (None, None))
    message = (f"helm-controller cannot compose the values of HelmRelease {as_map(hr.get('metadata')).get('name')} from spec.valuesFrom, "
               f"so the release fails (ValuesError): {error}")
    hint = f"fix the values under key {ref.get('key')} of {ref.get('kind')} {ref.get('name')} (a YAML mapping of the chart's values)"
    if obj is None:
        return finding_at(ctx, root, hr, None, ["spec", "valuesFrom"], "helm-values", message, hint, cluster=index.cluster.name)
    at = ctx.finding(obj, build, "helm-values", message, hint, field=f"data[{ref.get('key')}]")
    generated = None if at.line else _generator_file(ctx, str(ref.get("name")), str(ref.get("kind")), str(ref.get("key")))
    return replace(at, file=generated, line=1) if generated else at


def _writes(text: str, path: list) -> bool:
    try:
        return written_prefix(as_map(parse_yaml(text)), path) == path
    except yaml.YAMLError:
        return False


def _line_in(text: str, path: list) -> int:
    """0-based line of `path`'s key in the YAML `text` (0 when it is not there)."""
    docs = compose(text)
    key, _ = descend(docs[0], path) if docs and docs[0] is not None else (None, None)
    return key.start_mark.line if key is not None and path else 0


def _generator_file(ctx, name: str, kind: str, key: str) -> str | None:
    """The repository file a kustomization's configMapGenerator/secretGenerator made key `key` of `name` from (the
    generated name may carry kustomize's hash suffix)."""
    field = "configMapGenerator" if kind == "ConfigMap" else "secretGenerator"
    for doc in ctx.sources.docs:
        for gen in (as_map(g) for g in as_list(as_map(doc.obj).get(field))):
            if name != gen.get("name") and not re.fullmatch(re.escape(str(gen.get("name"))) + r"-[a-z0-9]{10}", name):
                continue
            for entry in (str(f) for f in as_list(gen.get("files"))):
                written_key, _, file = entry.partition("=")
                file = file or written_key
                if (written_key if "=" in entry else Path(file).name) == key:
                    return (Path(doc.file).parent / file).as_posix()
    return None


def _unknown_keys(values, defaults, path: list):
    """(path, the keys the chart knows there) of each key of `values` that the mapping of `defaults` at the same place
    lacks, when that mapping is not empty (an empty one, like nodeSelector: {}, takes any key)."""
    if not isinstance(values, dict) or not isinstance(defaults, dict) or not defaults:
        return
    for k, v in values.items():
        if k not in defaults:
            yield [*path, k], [str(d) for d in defaults]
        else:
            yield from _unknown_keys(v, defaults[k], [*path, k])


def _health_checks(ctx, root: Path, releases: list, answers: dict) -> list[Finding]:
    """flux-health-check against what the rendered charts create, per cluster (cluster_refs.chart_health_checks)."""
    out = []
    for index in {id(r[0]): r[0] for r in releases}.values():
        charted: dict[str, set[tuple]] = {}
        judged = set()
        for i, _, hr, _, key in releases:
            if i is not index or answers[key].get("error") or answers[key].get("valuesError"):
                continue
            judged.add(id(hr))
            namespace = release_of(hr)[1]
            for item in answers[key].get("objects") or []:
                obj = item["object"]
                ns = str(as_map(obj.get("metadata")).get("namespace") or namespace)
                charted.setdefault(ns, set()).add((str(obj.get("apiVersion")), obj.get("kind"), as_map(obj.get("metadata")).get("name")))
        unknown = {release_of(hr)[1] for _, hr in index.of_kind("HelmRelease") if id(hr) not in judged}
        out += chart_health_checks(ctx, root, index, charted, unknown)
    return out


def _error_path(error: str) -> list:
    """The values path a Helm error names, if it names one."""
    found = VALUES_PATH.search(error)
    if found:
        return found.group(1).strip(".").split(".")
    found = SCHEMA_PATH.search(error)
    return [int(p) if p.isdigit() else p for p in found.group(1).split("/") if p] if found else []


def _holding(values: dict, obj: dict, err: dict) -> list:
    """The path of the values entry that holds the refused value, when exactly one does: the value at the error's
    field in the rendered object, else a value the message quotes."""
    wanted = set(QUOTED.findall(err.get("message", "")))
    at = value_at(obj, segments(err.get("field") or ""))
    if isinstance(at, (str, int, float)) and not isinstance(at, bool):
        wanted = {str(at)}
    paths = [path for path, leaf in leaves(values) if isinstance(leaf, (str, int, float)) and not isinstance(leaf, bool)
             and str(leaf) in wanted]
    return paths[0] if len(paths) == 1 else []
