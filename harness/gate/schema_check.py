"""Validation of rendered objects as the cluster would validate them on create, offline.

tools/fluxbuild (the gate's one Go process, check.go) runs the pinned kube-apiserver's own code for custom resources (strict decoding,
pruning, defaulting, the OpenAPI schema, x-kubernetes-validations CEL rules, metadata) and Kueue's
validating webhooks at the pinned version, then KubeRay's own RayJob validation (what its controller
checks before it acts) and Kueue's scheduler's own check of a RayJob's Workload, and kubeconform's validator on the offline schemas for
built-in kinds (`harness.gate.schemas`) followed by apimachinery's own metadata validation of them. It is told the expected kinds before rendering
(`Checker.expect`) so that it loads the CRDs while it renders, and is handed the objects once they are known.
Beside it, tools/kubecheck (a process apart: Kubernetes' and Kueue's feature gates cannot share one) runs the
pinned apiserver's REST strategy of a built-in object's kind on its spec, and builds the pods KubeRay would
create for each RayJob, RayCluster and RayService with KubeRay's own builders, then takes them through the apiserver's
create path for pods and the ResourceQuota admission of their namespace.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from harness.core import HarnessError, versions
from harness.gate import quota_scope, schemas, workloads
from harness.gate.findings import Finding
from harness.gate.origin import dotted, mentioned_fields, segments, value_at
from harness.gate.sources import POD_ADMISSION_KINDS, as_map, resource_id
from harness.gate.helper import helper, submit_each, submit_kept, warm
from harness.gate.schema_texts import HINTS, WARNING_RULES, WHAT, hint_for, what_for

KUBERNETES_VERSION = versions.module("kubernetes")[1].removeprefix("v")
# The apiserver's note that other errors kept it from running the CEL rules: not a cause of its own.
CEL_SKIPPED = "some validation rules were not checked because the object was invalid"

# The checker's stages, in the order the apiserver runs them, and the rule each is reported under.
STAGE_RULES = {
    "unknown": "schema-unknown-kind",  # no such apiVersion/kind served
    "decode": "schema",  # strict decoding: unknown or duplicate fields
    "schema": "schema",  # built-in kinds: kubeconform, strict
    "validation": "api-validation",  # the apiserver's validation: a custom resource's (schema, CEL, metadata), a built-in's metadata
    "webhook": "kueue-webhook",  # Kueue's validating webhook
    "controller": "kuberay-validation",  # what KubeRay's controllers validate before they act on a RayJob, RayCluster or RayService
    "scheduler": "kueue-inadmissible",  # what Kueue's scheduler checks of the job's Workload before it looks for quota
    "accounting": "kueue-unaccounted-pods",  # pods KubeRay creates for a queued Ray object beyond those Kueue charges
    "idle-quota": "kueue-idle-quota",  # (warning) quota Kueue charges a queued Ray object for pods KubeRay never creates
    "pod": "pod-validation",  # the apiserver's validation of the pods KubeRay creates once Kueue admits the job (tools/kubecheck)
    "security": "pod-security",  # the PodSecurity admission of those pods by their namespace's level (tools/kubecheck)
    "quota": "resource-quota",  # the ResourceQuota admission of those pods and the other objects KubeRay creates (tools/kubecheck)
}

ACCOUNTING_STAGES = ("accounting", "idle-quota")  # about the pods KubeRay creates once admitted: after kubecheck's stages

# What a Ray object's admission reads in its namespace (sources.in_namespace_of): the pods' admission (LimitRanges,
# ResourceQuotas, the Namespace's PodSecurity labels, the cluster's RuntimeClasses) and Kueue's mutating webhook (a
# LocalQueue named `default`).
RELATED_KINDS = ("LimitRange", "ResourceQuota", "Namespace", "LocalQueue", "RuntimeClass")
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"  # the namespace label of the level the PodSecurity admission enforces

# The kinds whose pods KubeRay creates, validated as pods by tools/kubecheck.
RAY_WORKLOADS = {("ray.io/v1", "RayJob"), ("ray.io/v1", "RayCluster"), ("ray.io/v1", "RayService")}


def is_ray_workload(obj) -> bool:
    """A RayJob, RayCluster or RayService, whose pods tools/kubecheck builds (any value where the kind is written)."""
    return isinstance(obj, dict) and any(obj.get("apiVersion") == api and obj.get("kind") == kind for api, kind in RAY_WORKLOADS)


def is_builtin(obj) -> bool:
    """An object of a Kubernetes API group (core, apps, *.k8s.io; not a CRD's *.x-k8s.io), whose create
    validation tools/kubecheck runs with the apiserver's REST strategy of its kind."""
    if not isinstance(obj, dict) or not isinstance(obj.get("apiVersion"), str):
        return False
    group = obj["apiVersion"].rpartition("/")[0]
    return "." not in group or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"))


class CheckError(HarnessError, RuntimeError):
    pass


@dataclass(frozen=True)
class Problem:
    """One rejection: the stage that rejected the object and the field errors it gave."""
    stage: str
    errors: tuple[dict, ...]  # {"field", "type", "detail", "message"}

    @property
    def rule(self) -> str:
        return STAGE_RULES[self.stage]


def kubeconform_args(schema_dir: Path) -> list[str]:
    """The flags of the reference pipeline (`make bench-validate`) and of the helper's check of built-in kinds."""
    return [
        "-strict",
        "-kubernetes-version", KUBERNETES_VERSION,
        "-schema-location", str(schema_dir) + "/{{ .ResourceKind }}{{ .KindSuffix }}.json",
    ]


class Checker:
    """The checks of one gate run, in the gate's Go helper: `start()` early, `expect(kinds)` as soon as
    the kinds are known (their validators are built while the caller renders), `check(objects)` once."""

    def __init__(self, extra_crds: tuple[Path, ...] = ()) -> None:
        """`extra_crds`: CRD YAML files of the checked repository (the configuration's `crds`), known besides the pinned ones."""
        self._extra_crds = extra_crds
        self._schema_dir: str | None = None
        self._ahead: dict[str, bool] = {}  # per helper, whether start() prepared it ahead

    def schema_request(self) -> dict[str, str]:
        """The schema directory and Kubernetes version a helper request about these CRDs carries."""
        if self._schema_dir is None:
            self._schema_dir = str(schemas.schema_dir(self._extra_crds))
        return {"schema_dir": self._schema_dir, "kubernetes_version": KUBERNETES_VERSION}

    def start(self) -> "Checker":
        """Has the helper load the CRDs now, while the caller reads and renders (and starts kubecheck), unless the helpers
        as built now answered before (helper.warm): their verdicts on unchanged objects are kept, and what is asked anew
        loads only what it needs."""
        self._ahead = {name: not warm(name) for name in ("fluxbuild", "kubecheck")}
        if self._ahead["fluxbuild"]:
            helper().submit("prepare", CheckError, kinds=[], **self.schema_request())
        if self._ahead["kubecheck"]:
            helper("kubecheck").start()
        return self

    def expect(self, kinds: set[tuple[str, str]]) -> None:
        """The (apiVersion, kind) pairs the objects will have, to prepare their validators (with a RayJob's, the Workload's:
        its check validates the Workload Kueue makes of it)."""
        if not self._ahead.get("fluxbuild", True):
            return
        if ("ray.io/v1", "RayJob") in kinds:
            kinds = kinds | {("kueue.x-k8s.io/v1beta2", "Workload")}
        helper().submit("prepare", CheckError, kinds=sorted(kinds), **self.schema_request())

    def check(self, objects: list[dict], related: list[list[dict]] | None = None, managers: list[dict | None] | None = None) -> list[Problem | None]:
        """One result per object, in order: None when the cluster would accept it. `related`, in the
        same order: the objects of its cluster an object's admission depends on (a RayJob's namespace's
        LimitRanges, which Kueue's scheduler and the pods' admission apply, and ResourceQuotas). `managers`, in the
        same order: the Kueue manager of its cluster (kueue_fit.manager_ref: its feature gates; None: the defaults)."""
        return self.submit(objects, related, managers)()

    def submit(self, objects: list[dict], related: list[list[dict]] | None = None,
               managers: list[dict | None] | None = None) -> Callable[[], list[Problem | None]]:
        """`check`, sent now: the returned function waits for its results."""
        related = related or [[] for _ in objects]
        managers = managers or [None for _ in objects]
        keys = [json.dumps([obj, others, manager], sort_keys=True, default=str) for obj, others, manager in zip(objects, related, managers)]
        unique: dict[str, int] = {}
        for key in keys:
            unique.setdefault(key, len(unique))
        triples = [json.loads(k) for k in unique]
        pairs = [(o, r) for o, r, _ in triples]
        # One check request per Kueue manager (its feature gates are process-wide in the helper).
        groups: dict[str, list[int]] = {}
        for i, (_, _, manager) in enumerate(triples):
            groups.setdefault(json.dumps(manager, sort_keys=True), []).append(i)
        # Kueue's mutating webhook (fluxbuild) reads the namespace's LocalQueue `default`, its scheduler the LimitRanges and
        # RuntimeClasses; kubecheck takes the ResourceQuotas and the Namespace too.
        # Each object's verdict is kept (helper.submit_each): only objects not judged before are sent.
        answers = [(members, submit_each("fluxbuild", "check", CheckError, {
            "objects": [pairs[i][0] for i in members],
            "related": [[o for o in pairs[i][1] if isinstance(o, dict) and o.get("kind") in ("LocalQueue", *POD_ADMISSION_KINDS)] for i in members]},
            kueue_manager=triples[members[0]][2], **self.schema_request())) for members in groups.values()]
        ray = [i for i, (o, _) in enumerate(pairs) if is_ray_workload(o)]
        builtin = [i for i, (o, _) in enumerate(pairs) if is_builtin(o)]
        pods = submit_each("kubecheck", "pods", CheckError, {"objects": [pairs[i][0] for i in ray], "related": [
            [o for o in pairs[i][1] if not (isinstance(o, dict) and o.get("kind") == "LocalQueue")] for i in ray]}) if ray else None
        server = submit_each("kubecheck", "builtin", CheckError, {"objects": [pairs[i][0] for i in builtin]}) if builtin else None

        def results() -> list[Problem | None]:
            # kubecheck's verdicts count once fluxbuild accepted the object: the pods exist only once it passed
            # every stage before them (and Kueue admitted it); a built-in's spec is validated after its schema.
            later = {}
            for i, r in zip(builtin, server() if server else []):
                later[i] = Problem("validation", tuple(r["errors"])) if r["errors"] else None
            for i, r in zip(ray, pods() if pods else []):
                later[i] = next((Problem(stage, tuple(r[key])) for stage, key in (("pod", "errors"), ("security", "security"), ("quota", "quota"))
                                 if r.get(key)), None)
            problems: list[Problem | None] = [None] * len(pairs)
            for members, answer in answers:
                for i, r in zip(members, answer()):
                    # Kueue's accounting of the pods counts once they can be created at all: kubecheck's refusal first.
                    own = Problem(r["stage"], tuple(r["errors"])) if r["stage"] else None
                    problems[i] = (later.get(i) or own) if r["stage"] in ACCOUNTING_STAGES else own or later.get(i)
            return [problems[unique[key]] for key in keys]
        return results

    def close(self) -> None:
        """Nothing to end: the helper serves the whole Python process."""


def kuberay_pods(objects: list[dict], submitter_job: bool = False) -> list:
    """The pods KubeRay's own builders make of each RayJob or RayCluster, by role (head, worker GROUP,
    submitter), as tools/kubecheck validates them: {} for another kind. With `submitter_job`, (pods, the submitter Job
    KubeRay's RayJob controller would create, or None) each."""
    answers = submit_each("kubecheck", "pods", CheckError, {"objects": objects}, with_pods=True)()
    return [(r.get("pods") or {}, r.get("submitter")) if submitter_job else r.get("pods") or {} for r in answers]


_STORED: dict[str, dict] = {}


def stored(objects: list[dict]) -> list[dict]:
    """`objects` as the apiserver stores them (tools/kubecheck: the defaults of their served version; a LimitRange's
    Container limits get default = max and defaultRequest = default), each asked once per run."""
    keys = [json.dumps(o, sort_keys=True, default=str) for o in objects]
    missing = sorted({k for k in keys if k not in _STORED})
    if missing:
        answers = submit_kept("kubecheck", "stored", CheckError, objects=[json.loads(k) for k in missing]).result()
        _STORED.update(zip(missing, answers))
    return [_STORED[k] for k in keys]


def validate(objects: list[dict], related: list[list[dict]] | None = None) -> list[Problem | None]:
    """Checks `objects` with the pinned CRDs (`related`: as Checker.check)."""
    return Checker().start().check(objects, related)


def findings(ctx, checker: Checker, validated: list[tuple[object, dict, str | None]], managers: list[dict | None] | None = None) -> list[Finding]:
    """The findings of checking `validated` ((build, or a label for a sample or a variables file; object;
    the file it is written in, when not its build's)), at the line where each offending value is
    written: a sample's value filled from its samples.yaml entry's vars is reported there, once per var.
    `managers`: per entry, the Kueue manager of its cluster (as Checker.check)."""
    return submit(ctx, checker, validated, managers)()


def submit(ctx, checker: Checker, validated: list[tuple[object, dict, str | None]],
           managers: list[dict | None] | None = None) -> Callable[[], list[Finding]]:
    """`findings`, the objects sent to the helper now: the returned function waits and makes the findings
    (with `ctx` as it is then: the rules may have learnt more about the objects' origins meanwhile)."""
    pending = checker.submit([o for _, o, _ in validated], [ctx.sample_related.get(id(o), []) for _, o, _ in validated], managers)
    return lambda: _findings(ctx, validated, pending())




def deeper_fields(obj, err: dict) -> list:
    """The fields a refusal points at: a CEL rule of an object (a ClusterQueue's spec: "borrowingLimit must be nil when
    cohort is empty") names the field it is about in words only, so the fields below it that its message names come
    first (where the value is written, which may be a patch), then the field itself."""
    field = err.get("field")
    steps = segments(field) if field not in (None, "", "<nil>") else []
    extra = re.findall(r"additional propert(?:y|ies) '([^']+)'", str(err.get("message", "")))  # kubeconform names the unknown key
    if extra:
        return [dotted([*steps, extra[0]]), field]
    below = value_at(obj, steps) if len(steps) == 1 or steps[-2:-1] in (["containers"], ["initContainers"]) else None
    if not isinstance(below, (dict, list)):  # (deeper in, the field is the item the rule is about: a resource group)
        return [field]
    words = str(err.get("message", "")).split(": ")[-1]  # the rule's own message, after the field and "Invalid value"
    return [dotted([*segments(field), *segments(f)]) for f in mentioned_fields(below, words)][:3] + [field]


def _one_per_quota_cause(found: list[Finding]) -> list[Finding]:
    """resource-quota findings of several samples with the same refusal (a quota tracking a resource their
    pods do not set): one, at the first sample's entry, naming the others."""
    groups: dict[str, list[Finding]] = {}
    for f in found:
        if f.rule == "resource-quota":
            groups.setdefault(f.message, []).append(f)
    out = [f for f in found if f.rule != "resource-quota"]
    for same in groups.values():
        same.sort()
        first = (same[0].resource, same[0].file, same[0].line)
        others = ", ".join(dict.fromkeys(f"{f.resource} ({f.file}:{f.line})" for f in same[1:] if (f.resource, f.file, f.line) != first))
        message = same[0].message + (f"; the same for {others}" if others else "")
        # the same finding from another cluster (at a value of the workload file, not at a samples.yaml entry): kept for its context
        out += [replace(f, message=message) for f in same if f is same[0] or ((f.resource, f.file, f.line) == first and f.context != same[0].context)]
    return out


def pod_security_findings(ctx) -> list[Finding]:
    """The pod-security findings of every check so far (ctx.pod_security: samples and the objects layers apply): one per
    namespace, at its pod-security.kubernetes.io/enforce label, naming the first refusal in full and the other templates refused."""
    refused: dict[str, list[tuple[dict, dict, Finding]]] = {}
    for obj, err, found in ctx.pod_security:
        items = refused.setdefault(err.get("object", ""), [])
        if all((f.resource, f.file, f.line, e.get("field")) != (found.resource, found.file, found.line, err.get("field")) for _, e, f in items):
            items.append((obj, err, found))
    out = []
    for ns_id, items in sorted(refused.items()):
        items.sort(key=lambda item: item[2])
        obj, err, first = items[0]
        namespace = next((o for o in ctx.sample_related.get(id(obj), []) if resource_id(o) == ns_id), None)
        where = first if namespace is None else ctx.finding(namespace, None, "", "", "", field=f"metadata.labels[{PSA_ENFORCE}]")
        by_job: dict[tuple, list[str]] = {}  # (resource, file, line) -> its other templates refused, by their last field
        for _, e, f in items[1:]:
            templates = by_job.setdefault((f.resource, f.file, f.line), [])
            short = str(e.get("field", "")).removesuffix(".template").rsplit(".", 1)[-1]
            templates += [short] if short not in templates else []
        others = ", ".join(f"{rid} at {file}:{line} ({', '.join(t)})" for (rid, file, line), t in by_job.items())
        level = as_map(as_map(as_map(namespace).get("metadata")).get("labels")).get(PSA_ENFORCE)
        hint = first.hint if level == "restricted" else \
            "set in the pod templates the securityContext (or drop the capability, host setting or volume) the message names: " \
            f"{level or 'this'} is the namespace's level, and only privileged lets more through (rarely what a shared namespace wants)"
        out.append(replace(first, file=where.file, line=where.line, context=f"{ns_id}, label {PSA_ENFORCE}", hint=hint,
                           message=f"{first.resource} {WHAT['pod-security']}: {err.get('field')}: {err['message']} "
                                   f"(at {first.file}:{first.line}){f'; so are the pods of {others}' if others else ''}"))
    return out


def _findings(ctx, validated: list[tuple[object, dict, str | None]], problems: list[Problem | None]) -> list[Finding]:
    out, by_var, zeroed = [], {}, []
    for (build, obj, file), problem in zip(validated, problems):
        if problem is None:
            continue
        if problem.rule == "pod-security":  # the namespace's level forbids them: folded per namespace (pod_security_findings)
            for err in problem.errors:
                where = ctx.sample_entries.get(id(obj))
                found = ctx.finding(obj, None if isinstance(build, str) else build, problem.rule, "", HINTS[problem.rule], file=file,
                                    context=build if isinstance(build, str) else None, field=err.get("field") or None)
                ctx.pod_security.append((obj, err, replace(found, file=where[0], line=where[1]) if where else found))
            continue
        b, label = (None, build) if isinstance(build, str) else (build, None)
        named = {str(e["field"]) for e in problem.errors if e.get("field") not in (None, "", "<nil>")}
        typed: set[str] = set()  # fields with a type refusal: one value of one field (an int-or-string's anyOf branches add theirs)
        for err in problem.errors:
            if CEL_SKIPPED in err.get("detail", "") and len(problem.errors) > 1:
                continue
            if "must be of type" in str(err.get("message", "")) and err.get("field") not in (None, "", "<nil>"):
                if err["field"] in typed:
                    continue
                typed.add(err["field"])
            if err.get("field") in (None, "", "<nil>") and any(f in err.get("message", "") for f in named):
                continue  # the same refusal without its field (the format check after the type check): reported with it
            # KubeRay's controller errors name no field: the fields its message names are where the values are written,
            # the first one the sample's file writes itself (not through a samples.yaml var) preferred.
            fields = deeper_fields(obj, err) if err.get("field") or problem.rule != "kuberay-validation" else mentioned_fields(obj, err["message"])
            candidates = [ctx.finding(obj, b, problem.rule, f"{what_for(problem.rule, obj, str(err['message']))}: {err['message']}", hint_for(problem.rule, err), file=file,
                                      context=label, field=f or None) for f in fields or [None]]
            found = next((c for c in candidates if workloads.var_at(ctx.sources.root, c, ctx.sample_vars.get(id(obj), {})) is None), candidates[0])
            if problem.rule in WARNING_RULES:
                found = replace(found, severity="warning")
            if problem.rule == "resource-quota" and id(obj) in ctx.sample_entries:  # the sample as submitted to the namespace
                quota = next((o for o in ctx.sample_related.get(id(obj), []) if resource_id(o) == err.get("object")), None)
                if quota is not None and err.get("zero"):  # the quota keeps out every job in its scope: one finding at it (quota_scope)
                    entry = ctx.sample_entries[id(obj)]
                    zeroed.append((quota_scope.at_quota(ctx, quota, err, found), f"{resource_id(obj)} ({entry[0]}:{entry[1]})"))
                    continue
                written = ctx.finding(quota, None, "", "", "") if quota is not None else None
                found = replace(found, message=found.message + (f" (the quota is written at {written.file}:{written.line})" if written else ""))
                if not err.get("field"):  # (else at the value that makes an object count: a head Service's serviceType)
                    found = replace(found, file=ctx.sample_entries[id(obj)][0], line=ctx.sample_entries[id(obj)][1])
            var = workloads.var_at(ctx.sources.root, found, ctx.sample_vars.get(id(obj), {}))
            if var is None:
                out.append(found)
                continue
            # (VAR, file, line, entry key, rule, resource); a default of workloads/defaults.yaml: one for every sample that uses it
            key = (*var, found.rule, "" if var[3].startswith("default ") else found.resource)
            first, errors, uses, _ = by_var.setdefault(key, (found, [], [], obj))
            errors.append(err["message"])
            uses.append((f"{found.file}:{found.line}", found.resource, found.context))
    out = _one_per_quota_cause(out) + quota_scope.fold(zeroed)
    for (name, file, line, given, _, _), (first, errors, uses, obj) in by_var.items():
        at = ", ".join(sorted({u[0] for u in uses}))
        if given.startswith("default "):  # the value of workloads/defaults.yaml, which every sample not setting it in `vars` takes
            out.append(replace(first, file=file, line=line, resource=", ".join(dict.fromkeys(u[1] for u in uses)),
                               context="; ".join(dict.fromkeys(u[2] for u in uses if u[2])),
                               message=f"{what_for(first.rule, obj, errors[0])}: {'; '.join(dict.fromkeys(errors))} (with the default "
                                       f"{name} of {file}, which fills ${{{name}}} at {at} for the samples that do not set it in `vars`)",
                               hint=f"give {name} in {file} a value those fields accept (a string or number, substituted into the "
                                    "workloads: see the message)"))
            continue
        out.append(replace(first, file=file, line=line, message=f"{what_for(first.rule, obj, errors[0])}: {'; '.join(errors)} "
                                                                 f"(with {given}, which fills ${{{name}}} at {at})",
                           hint=f"give {given} of this entry a value those fields accept (see the message)"
                                + (", or drop it to use the default" if given.startswith("vars ") else "")))
    return out
