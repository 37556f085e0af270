"""Queue configurations under which a sample can never be admitted although every object is
valid: Kueue creates the Workload and it pends forever (or is never created at all).

Per sample of clusters/<name>/samples.yaml (what sample_rules.sample_rules rendered, with its entry line), and per
queued Ray object a layer applies; a finding about the queue is at the queue's value, once for every job queued there,
the others at the sample's entry (or the workload line that writes the value):
- the ClusterQueue's namespaceSelector does not select the LocalQueue's namespace (evaluated
  against the rendered Namespace's labels plus kubernetes.io/metadata.name, which the apiserver
  adds), or is a selector Kueue refuses (at the selector);
- the ClusterQueue or LocalQueue is stopped (spec.stopPolicy Hold or HoldAndDrain; at the stopPolicy);
- the RayJob names a WorkloadPriorityClass (label kueue.x-k8s.io/priority-class) or its pods a
  PriorityClass that the cluster does not define (Kueue fails to create the Workload);
- its spec.managedBy hands it to another controller than KubeRay's while its ClusterQueue has no MultiKueue
  admission check (KubeRay skips it; Kueue admits it and nothing runs it);
- its pods name a ServiceAccount the namespace does not have or a RuntimeClass the cluster does not have (the
  apiserver refuses the pods), mount a PersistentVolumeClaim it does not have (the scheduler places none of them),
  or name a ConfigMap or Secret the cluster's set does not create (nothing creates it with the job: the pods stay
  ContainerCreating; one finding per object, at the first name line), or a key one of the set's does not have (the
  kubelet cannot start them), or one the layer generates with kustomize's content-hash suffix (one finding, at the
  generator); its entrypoint runs a file the mounted ConfigMap does not hold (entrypoint-file, a warning);
- its label kueue.x-k8s.io/prebuilt-workload-name names a Workload its namespace does not have (Kueue builds none).
A queued RayJob, RayCluster or RayService a layer applies (of an integration the Kueue manager runs) meets the same
queue checks (namespaceSelector, stopPolicy, managedBy, prebuilt Workload) at its label's line, and workload-queue when
its LocalQueue is missing; a queued Ray object of an integration the manager leaves out is kueue-integration-off.
Per cluster: a ClusterQueue no LocalQueue points at (warning), and the Kueue HelmRelease's manager
configuration (harness.gate.kueue_manager: the manager refuses it, or it leaves out ray.io/rayjob; harness.gate.kueue_wiring:
it disagrees with the chart, gates the pods of other namespaces, or drops a resource the queues have quota for).

Label selectors are evaluated by apimachinery's own LabelSelectorAsSelector in tools/fluxbuild
(harness.gate.matching), which also refuses what the apiserver refuses.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.gate import kueue_manager, kueue_wiring, matching
from harness.gate.cluster_index import ClusterIndex, finding_at
from harness.gate.cluster_refs import KEY_HINT, RUNTIME_CLASS_HINT, missing_key, size_problems
from harness.gate.pod_refs import missing_run_files, pod_key_refs, pod_spec_refs, pod_templates
from harness.gate.origin import dotted, line_at
from harness.gate.findings import Finding
from harness.gate.render import ClusterRender
from harness.gate.sources import QUEUE_LABEL, as_list, as_map, as_maps, name_key, queue_name, resource_id
from harness.gate.workload_identity import annotated_accounts
from harness.gate.workloads import WORKLOADS_DIR, var_at

RULES = {
    "queue-namespace-selector": "a sample's (or a queued Ray object a layer applies) ClusterQueue selects the namespace of its LocalQueue (namespaceSelector against the Namespace's labels)",
    "queue-stopped": "a sample's (or a queued Ray object a layer applies) ClusterQueue and LocalQueue are not stopped (spec.stopPolicy Hold or HoldAndDrain)",
    "sample-managed-by": "a sample's spec.managedBy is KubeRay's (or unset), unless its ClusterQueue has a MultiKueue admission check",
    "sample-priority-class": "the WorkloadPriorityClass (label kueue.x-k8s.io/priority-class) or PriorityClass a sample names exists on the cluster",
    "clusterqueue-unreachable": "(warning) every ClusterQueue is the spec.clusterQueue of some LocalQueue, or shares a cohort with "
                                "one that is (a lender-only queue: its quota is borrowed)",
    "workload-queue": "a RayJob, RayCluster or RayService a layer applies (not a sample) names, by label kueue.x-k8s.io/queue-name, a LocalQueue of its namespace",
    "kueue-integration-off": "a queued Ray object (label kueue.x-k8s.io/queue-name; a sample or applied by a layer) is of a kind whose "
                             "integration the cluster's Kueue manager enables (a RayCluster needs ray.io/raycluster, a RayService "
                             "ray.io/rayservice in integrations.frameworks); else Kueue ignores the label and its pods run outside every quota",
    "kueue-prebuilt-workload": "a sample or a queued Ray object a layer applies with label kueue.x-k8s.io/prebuilt-workload-name names a "
                               "Workload of its namespace that the cluster's layers apply; else Kueue's job reconciler builds none and "
                               "waits for it (ErrPrebuiltWorkloadNotFound): the job stays suspended forever",
}
INTEGRATIONS = kueue_manager.INTEGRATIONS  # the Kueue integration that manages each Ray kind (RayJob, RayCluster, RayService)
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"  # constants.PrebuiltWorkloadLabel
STOPPED = ("Hold", "HoldAndDrain")
KUBERAY_CONTROLLER = "ray.io/kuberay-operator"  # utils.KubeRayController: the managedBy KubeRay's RayJob controller acts on
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


def selector_verdict(selector: dict, labels: dict[str, str]) -> tuple[bool, str]:
    """(selects, the requirement that fails) for a label selector, by apimachinery's
    LabelSelectorAsSelector (harness.gate.matching); ValueError for a selector it refuses (Kueue's
    webhook rejects such a ClusterQueue)."""
    selects, error = matching.selector_matches(selector, labels)
    if error:
        raise ValueError(error)
    if selects:
        return True, ""
    for key, value in as_map(selector.get("matchLabels")).items():
        if not matching.selector_matches({"matchLabels": {key: value}}, labels)[0]:
            return False, f"matchLabels {key}={value}"
    for expr in as_maps(selector.get("matchExpressions")):
        if not matching.selector_matches({"matchExpressions": [expr]}, labels)[0]:
            values = as_list(expr.get("values"))
            return False, f"matchExpressions {expr.get('key')} {expr.get('operator')}{' ' + str(values) if values else ''}"
    return False, "the selector"


def _check_controllers(index: ClusterIndex, cq: dict) -> set[str]:
    """The controllerName of every AdmissionCheck the ClusterQueue names (admissionChecks, or admissionChecksStrategy)."""
    spec = as_map(cq.get("spec"))
    names = [*as_list(spec.get("admissionChecks")), *(as_map(c).get("name") for c in as_list(as_map(spec.get("admissionChecksStrategy")).get("admissionChecks")))]
    checks = [index.named.get(("AdmissionCheck", None, name_key(n))) for n in names]
    return {str(as_map(ac.get("spec")).get("controllerName")) for _, ac in (c for c in checks if c)}


def _hashed(ctx, root: Path, index: ClusterIndex, kind: str, ns: str, name) -> tuple[str, int | None, str] | None:
    """(file and line where the generator is written, the name it makes) when a kustomization generates `kind` `name` with kustomize's
    content-hash suffix and the cluster's set has it under that suffixed name; else None."""
    made = [n for (k, kns, n) in index.named if k == kind and kns == ns and str(n).startswith(f"{name}-")]
    field = "configMapGenerator" if kind == "ConfigMap" else "secretGenerator"
    for doc in ctx.sources.docs if made else []:
        off = as_map(as_map(doc.obj).get("generatorOptions")).get("disableNameSuffixHash") is True
        for i, gen in enumerate(as_list(as_map(doc.obj).get(field))):
            gen = as_map(gen)
            if gen.get("name") == name and not as_map(gen.get("options")).get("disableNameSuffixHash", off):
                return doc.file, line_at(root, doc.file, doc.line, [field, i, "name"]), str(made[0])
    return None


def _where(ctx, root: Path, build, obj: dict, path: list | None = None) -> str:
    """file:line where `obj` (or the value at `path` in it) is written: the line of a patch that writes it, if one does."""
    return ctx.finding(obj, build, "", "", "", field=dotted(path) if path else None).location()


def _sample_rules(ctx, root: Path, index: ClusterIndex, samples_file: str, line: int | None, sample: str, job: dict,
                  keys: dict[tuple, list[Finding]], generated: dict[tuple, set[str]]) -> list[Finding]:
    meta = as_map(job.get("metadata"))
    ns = name_key(meta.get("namespace", "default"))
    queue = as_map(meta.get("labels")).get(QUEUE_LABEL)
    context = f"cluster {index.cluster.name}, sample {sample} on {queue}"
    out = []

    def finding(rule: str, message: str, hint: str, field: str | None = None) -> None:
        """At the samples.yaml entry; with `field`, at the line of the workload file that writes it (or of the entry's
        var that fills it)."""
        if field:
            found = ctx.finding(job, None, rule, message, hint, file=f"{WORKLOADS_DIR}/{sample}.yaml", context=context, field=field)
            var = var_at(root, found, ctx.sample_vars.get(id(job), {}))
            out.append(replace(found, file=var[1], line=var[2]) if var else found)
        else:
            out.append(Finding(samples_file, line, resource_id(job), rule, message, hint, context))

    wpc = as_map(meta.get("labels")).get(PRIORITY_LABEL)
    if wpc is not None and not index.has("WorkloadPriorityClass", None, wpc):
        have = sorted(str(as_map(o.get("metadata")).get("name")) for _, o in index.of_kind("WorkloadPriorityClass"))
        finding("sample-priority-class", f"label {PRIORITY_LABEL}={wpc!r} names no WorkloadPriorityClass of the cluster "
                f"(have: {', '.join(have) or 'none'}): Kueue cannot create its Workload, so it is never admitted",
                "use one of the cluster's WorkloadPriorityClasses or add it beside them",
                field=f"metadata.labels[{PRIORITY_LABEL}]")
    missing: dict[tuple[str, str], list[str]] = {}  # (kind, name) -> the fields that name it
    for path, pod in pod_templates(job):
        pc = pod.get("priorityClassName")
        if pc and not index.has("PriorityClass", None, pc):
            missing.setdefault(("PriorityClass", name_key(pc)), []).append(f"{dotted(path)}.priorityClassName")
        for where, kind, name in pod_spec_refs(path, pod):
            if kind in ("ServiceAccount", "PersistentVolumeClaim", "RuntimeClass") and not index.has(kind, None if kind == "RuntimeClass" else ns, name):
                missing.setdefault((kind, name_key(name)), []).append(dotted(where))
            made = _hashed(ctx, root, index, kind, ns, name) if kind in ("ConfigMap", "Secret") and not index.has(kind, ns, name) else None
            if made:  # one finding per generator, at its line (admission_rules)
                generated.setdefault((kind, ns, name_key(name), *made), set()).add(sample)
            elif kind in ("ConfigMap", "Secret") and not index.has(kind, ns, name) and ns in index.namespaces:
                missing.setdefault((kind, name_key(name)), []).append(dotted(where))  # (a missing namespace: namespace-missing)
        for ref in pod_key_refs(path, pod):  # of the set's ConfigMaps and Secrets (a missing one is reported once, below)
            message, hint = missing_key(index, ns, ref), KEY_HINT.format(kind=ref[1])
            if message:  # at the workload's line that names the key; admission_rules folds those naming the same key
                keys.setdefault((ref[1], ns, name_key(ref[2]), str(ref[3])), []).append(
                    ctx.finding(job, None, "object-ref", f"{message}; the admitted job holds its quota", hint,
                                file=f"{WORKLOADS_DIR}/{sample}.yaml", context=context, field=dotted(ref[0])))
    # A ServiceAccount, ConfigMap or Secret a namePrefix/suffix renamed is that finding's (kustomize-rename), and a
    # ServiceAccount a namespace change moved the move's, not one more per sample.
    named = lambda kind: {n for (k, kns, n) in index.named if k == kind and kns == ns}  # noqa: E731
    reference = lambda kind, name, fields: (f"sample {sample} ({samples_file}:{line}) "  # noqa: E731
                                            f"{'serviceAccountName' if kind == 'ServiceAccount' else fields[0].rsplit('.', 1)[-1]} {ns}/{name}")
    missing = {(kind, name): fields for (kind, name), fields in missing.items()
               if kind not in ("ServiceAccount", "ConfigMap", "Secret")
               or not (ctx.renamed(kind, name, named(kind), reference(kind, name, fields))
                       or (kind == "ServiceAccount" and ctx.moved(index.cluster.name, kind, ns, name, reference(kind, name, fields),
                                                                   lambda other, n=name: index.has("ServiceAccount", other, n))))}
    for (kind, name), fields in missing.items():
        if kind == "PriorityClass":
            finding("sample-priority-class", f"{', '.join(fields)} {name!r} is not a PriorityClass of the cluster: "
                    "Kueue cannot create its Workload and the apiserver refuses its pods",
                    f"use the label {PRIORITY_LABEL} with a WorkloadPriorityClass instead, or define the PriorityClass", fields[0])
        elif kind == "RuntimeClass":
            finding("object-ref", f"{', '.join(fields)} names RuntimeClass {name}, which the cluster does not have: the "
                    "apiserver's RuntimeClass admission refuses the job's pods, and the admitted job holds its quota", RUNTIME_CLASS_HINT, fields[0])
        elif kind == "PersistentVolumeClaim":
            finding("object-ref", f"{', '.join(fields)} names PersistentVolumeClaim {ns}/{name}, which the cluster does "
                    "not have: the scheduler places none of the pods that mount it, and the admitted job holds its quota",
                    f"add the PersistentVolumeClaim to the layer that creates namespace {ns} or fix claimName", fields[0])
        elif kind in ("ConfigMap", "Secret"):
            effect = ("the kubelet cannot mount the volume, so the pods stay ContainerCreating" if ".volumes[" in fields[0]
                      else "the kubelet cannot start the containers (CreateContainerConfigError)")
            other = sorted(str(kns) for (k, kns, n) in index.named if k == kind and n == name and kns != ns)
            finding("object-ref", f"{', '.join(fields)} names {kind} {ns}/{name}, which the cluster does not have ("
                    + (f"the set has it in namespace {', '.join(other)}" if other else "no layer applies it; the sample is submitted alone")
                    + f"): {effect}, and the admitted job holds its quota",
                    f"add {kind} {name} to namespace {ns} as it is written for {other[0]} ({_where(ctx, root, *index.named[(kind, other[0], name)])})"
                    if other else f"add {kind} {name} to namespace {ns} in a layer every cluster applies (the samples' scripts: a "
                    "configMapGenerator entry of base/scripts/kustomization.yaml), fix the name, or mark the "
                    "reference optional", fields[0])
            out[-1] = replace(out[-1], presumes=(*out[-1].presumes, f"{kind}/{ns}/{name}"))  # (folding: its absence's cause)
        else:
            finding("object-ref", f"{', '.join(fields)} names ServiceAccount {ns}/{name}, which the cluster does not "
                    "have: the apiserver refuses the job's pods", _account_hint(ctx, ns), fields[0])
            out[-1] = replace(out[-1], presumes=(*out[-1].presumes, f"ServiceAccount/{ns}/{name}"))  # (folding: its absence's cause)

    for path, message, hint in missing_run_files(job, lambda kind, name: index.keys_of(kind, ns, name)):
        finding("entrypoint-file", message, hint, dotted(path))
        out[-1] = replace(out[-1], severity="warning")
    for rule, message, hint, _ in size_problems(job):
        finding(rule, message, hint)

    prebuilt = _prebuilt(index, job, ns)
    if prebuilt:
        finding("kueue-prebuilt-workload", *prebuilt, field=f"metadata.labels[{PREBUILT_LABEL}]")
    before = len(out)
    queues = _queue_rules(ctx, root, index, job, ns, queue, finding, out)
    if queues:  # these judge the sample by its queues: a queue the apiserver or Kueue's webhook refuses is the cause instead
        out[before:] = [replace(f, presumes=tuple(resource_id(q) for q in queues)) for f in out[before:]]
    return out


def _account_hint(ctx, ns: str) -> str:
    """Use the workload ServiceAccount (the one with the workload identity annotation, wherever the repository writes it)."""
    found = annotated_accounts(ctx.sources)
    account = next((a for a in found if a.namespace == ns), None) or next(iter(found), None)
    return (f"use the workload ServiceAccount {account.name} ({account.where()}), or add this ServiceAccount beside it" if account else
            f"add the ServiceAccount to the layer that creates namespace {ns}, or name one the cluster has")


def _prebuilt(index: ClusterIndex, job: dict, ns: str) -> tuple[str, str] | None:
    """(message, hint) of kueue-prebuilt-workload when `job` names by PREBUILT_LABEL a Workload its namespace does not have
    on the cluster: Kueue's job reconciler then only looks that Workload up and never builds one (jobframework
    reconciler.go, ErrPrebuiltWorkloadNotFound), so the job is never admitted."""
    name = as_map(as_map(job.get("metadata")).get("labels")).get(PREBUILT_LABEL)
    if name is None or index.has("Workload", ns, name):
        return None
    return (f"label {PREBUILT_LABEL}={name!r} names a Workload that namespace {ns} does not have on cluster {index.cluster.name}: Kueue's "
            "job reconciler builds no Workload for a job with this label, it waits for the one named (ErrPrebuiltWorkloadNotFound), "
            "so the job stays suspended and is never admitted",
            f"remove the label (Kueue then builds the job's Workload itself), or create Workload {ns}/{name} in the queue layer")


def _queue_rules(ctx, root: Path, index: ClusterIndex, job: dict, ns: str, queue, finding, out: list) -> tuple[dict, dict] | None:
    """What the queues of a queued Ray object (a sample, or one a layer applies) do to it: its spec.managedBy (reported
    through `finding(rule, message, hint)`, at the job), a stopped ClusterQueue or LocalQueue, a namespaceSelector that leaves
    its namespace out (added to `out` at the queue's value, the same finding for every job queued there, so one);
    (its ClusterQueue, LocalQueue) when both exist, else None."""
    lq_entry = index.named.get(("LocalQueue", ns, name_key(queue)))
    if lq_entry is None:
        return None  # sample-queue (workload-queue) reports it
    lq_build, lq = lq_entry
    cq_entry = index.named.get(("ClusterQueue", None, name_key(as_map(lq.get("spec")).get("clusterQueue"))))
    if cq_entry is None:
        return None  # localqueue-clusterqueue reports it
    cq_build, cq = cq_entry
    cq_name = as_map(cq.get("metadata")).get("name")
    managed_by = as_map(job.get("spec")).get("managedBy")
    if managed_by not in (None, KUBERAY_CONTROLLER) and MULTIKUEUE_CONTROLLER not in _check_controllers(index, cq):
        finding("sample-managed-by", f"spec.managedBy is {managed_by!r}: KubeRay's operator skips the RayJob, and ClusterQueue {cq_name} has "
                f"no {MULTIKUEUE_CONTROLLER} admission check to dispatch it to a worker cluster: it never runs (admitted, it holds its quota)",
                f"drop spec.managedBy (or set {KUBERAY_CONTROLLER}), or submit it to a ClusterQueue with a MultiKueue admission check")
    for build, obj, what in ((cq_build, cq, f"ClusterQueue {cq_name}"), (lq_build, lq, f"LocalQueue {ns}/{queue}")):
        policy = as_map(obj.get("spec")).get("stopPolicy")
        if policy in STOPPED:
            out.append(ctx.finding(obj, build, "queue-stopped", f"{what} has stopPolicy {policy}: it admits nothing, so every job "
                                   "queued to it (the cluster's samples and the Ray objects its layers apply) pends forever",
                                   f"remove spec.stopPolicy from {what} (or set it to None) once the hold is over",
                                   cluster=index.cluster.name, field="spec.stopPolicy"))
    selector = as_map(cq.get("spec")).get("namespaceSelector")
    labels = index.namespaces.get(ns)
    if isinstance(selector, dict) and labels is not None:
        try:
            selects, failed = selector_verdict(selector, labels)
        except ValueError as err:
            out.append(ctx.finding(cq, cq_build, "queue-namespace-selector", f"the namespaceSelector of ClusterQueue {cq_name} is invalid: "
                                   f"{err}; Kueue's webhook refuses the ClusterQueue, so no job queued to it is ever admitted",
                                   "fix the matchExpressions: operators are In, NotIn, Exists and DoesNotExist; In/NotIn need values, "
                                   "Exists/DoesNotExist take none", cluster=index.cluster.name, field="spec.namespaceSelector"))
            selects = True
        if not selects:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
            ns_entry = index.named.get(("Namespace", None, ns))
            ns_at = _where(ctx, root, *ns_entry) if ns_entry else "created by Kubernetes or Flux"
            out.append(ctx.finding(cq, cq_build, "queue-namespace-selector",
                                   f"the namespaceSelector of ClusterQueue {cq_name} does not select namespace {ns} ({ns_at}) of LocalQueue "
                                   f"{queue} ({_where(ctx, root, lq_build, lq)}): {failed} fails on its labels {{{shown}}}; Kueue leaves "
                                   "every job queued there pending forever", f"change the namespaceSelector of ClusterQueue {cq_name} so that "
                                   f"it selects namespace {ns} (`{{}}` selects every namespace), or label Namespace {ns} to match it",
                                   cluster=index.cluster.name, field="spec.namespaceSelector"))
    return cq, lq


def _unreachable(ctx, index: ClusterIndex) -> list[Finding]:
    targets = {name_key(as_map(lq.get("spec")).get("clusterQueue")) for _, lq in index.of_kind("LocalQueue")}
    names = {name_key(as_map(cq.get("metadata")).get("name")) for _, cq in index.of_kind("ClusterQueue")}
    if targets - names:
        return []  # a LocalQueue names a missing ClusterQueue (localqueue-clusterqueue): that is the cause to fix
    out = []
    cohort_of = {name_key(as_map(cq.get("metadata")).get("name")): as_map(cq.get("spec")).get("cohortName") for _, cq in index.of_kind("ClusterQueue")}
    lending = {cohort_of.get(t) for t in targets} - {None, ""}  # cohorts a reachable queue borrows in
    for build, cq in index.of_kind("ClusterQueue"):
        name = name_key(as_map(cq.get("metadata")).get("name"))
        if name not in targets and cohort_of.get(name) not in lending:
            f = ctx.finding(cq, build, "clusterqueue-unreachable",
                            f"no LocalQueue of the cluster has spec.clusterQueue {name}: no workload can reach its quota",
                            f"add a LocalQueue with spec.clusterQueue: {name} in the team's namespace, or remove the ClusterQueue",
                            cluster=index.cluster.name)
            out.append(replace(f, severity="warning"))
    return out


def admission_rules(ctx, root: Path, cluster: ClusterRender, samples: list[tuple[str, dict, int | None]]) -> list[Finding]:
    """Never-admittable samples and queues of one cluster (`ctx`: rules.Context; `samples`: what
    sample_rules.sample_rules rendered, with the samples.yaml line of each entry)."""
    index = ClusterIndex.build(root, cluster)
    samples_file = ctx.config.samples_file(cluster.name)
    out = kueue_manager.manager_config_rules(ctx, root, index)
    if not index.complete:
        return out  # a layer did not render (kustomize-build says why): what it would apply is unknown
    out += _unreachable(ctx, index) + kueue_wiring.wiring_rules(ctx, root, index) + _applied_job_queues(ctx, root, index)
    out += _integrations_off(ctx, root, index, samples)
    keys: dict[tuple, list[Finding]] = {}  # (kind, namespace, name, key) missing -> the findings of the references naming it
    generated: dict[tuple, set[str]] = {}  # (kind, namespace, name, generator file, line, name made) -> the samples naming it
    for sample, job, line in samples:
        out += _sample_rules(ctx, root, index, samples_file, line, sample, job, keys, generated)
    for (kind, ns, name, file, at, made), users in generated.items():
        out.append(Finding(file, at, f"{kind}/{ns}/{name}", "object-ref",
                           f"the layer generates {kind} {ns}/{name} as {made} (kustomize's content-hash suffix), but the samples "
                           f"{', '.join(sorted(users))} name {name}: kustomize rewrites the name only in the objects of its own build, so "
                           "their pods find none and never start, while the admitted jobs hold their quota",
                           "set options.disableNameSuffixHash: true on this generator (or generatorOptions), so that the name stays"))
    for same in keys.values():  # one key missing (often renamed in the ConfigMap): one finding, at the first reference
        same.sort()
        others = ", ".join(f"{f.file}:{f.line}" for f in same[1:])
        out.append(replace(same[0], message=same[0].message + (f"; {len(same) - 1} more reference(s) name it: {others}" if others else "")))
    return out


def _integrations_off(ctx, root: Path, index: ClusterIndex, samples: list[tuple[str, dict, int | None]]) -> list[Finding]:
    """kueue-integration-off: queued Ray objects of a kind the manager's integrations.frameworks leaves out (judged where
    the configuration is written; the chart's own enables every Ray kind)."""
    manager = kueue_manager.manager_of(index)
    if kueue_manager.loaded(manager.get("config")) is None:
        return []  # the chart's configuration (every Ray integration), or one the manager refuses (kueue-config)
    queued = [(None, sample, job) for sample, job, _ in samples] + [(b, None, o) for kind in INTEGRATIONS for b, o in index.of_kind(kind)]
    out = []
    for build, sample, obj in queued:
        framework = INTEGRATIONS.get(str(obj.get("kind")))  # (RayJob's missing is the configuration's kueue-rayjob-integration)
        if framework is None or obj.get("kind") == "RayJob" or queue_name(obj) is None or kueue_manager.integration_on(manager, obj.get("kind")):
            continue
        message = (f"{obj.get('kind')} {as_map(obj.get('metadata')).get('name')} has label {QUEUE_LABEL}, but the Kueue manager of cluster "
                   f"{index.cluster.name} leaves {framework} out of integrations.frameworks: Kueue ignores the label, never suspends "
                   "it, and its pods run outside every quota (while the jobs Kueue admits count on nodes they take)")
        hint = f"add {framework} to the manager configuration's integrations.frameworks, or submit it as a RayJob (which Kueue queues)"
        where = {"file": f"{WORKLOADS_DIR}/{sample}.yaml", "context": f"cluster {index.cluster.name}, sample {sample}"} if sample else {}
        found = ctx.finding(obj, build, "kueue-integration-off", message, hint, cluster=None if sample else index.cluster.name,
                            field=f"metadata.labels[{QUEUE_LABEL}]", **where)
        out.append(found)
    return out


def _applied_job_queues(ctx, root: Path, index: ClusterIndex) -> list[Finding]:
    """A queued RayJob, RayCluster or RayService a layer applies (of an integration the manager runs): workload-queue when
    its queue label names no LocalQueue of its namespace (Kueue leaves its Workload inadmissible for good; a missing label
    is Kueue's default LocalQueue, or no queue: not judged here), else what its queues do to it (_queue_rules), each at
    its label's line; whether it fits its ClusterQueue is sample-fits (sample_rules.layer_candidates)."""
    out = []
    manager = kueue_manager.manager_of(index)
    for build, job in [(b, o) for kind in INTEGRATIONS for b, o in index.of_kind(kind) if kueue_manager.integration_on(manager, kind)]:
        meta = as_map(job.get("metadata"))
        queue, ns = as_map(meta.get("labels")).get(QUEUE_LABEL), name_key(meta.get("namespace", "default"))
        if queue is None:
            continue

        def finding(rule: str, message: str, hint: str, label: str = QUEUE_LABEL, job=job, build=build) -> None:
            out.append(finding_at(ctx, root, job, build, ["metadata", "labels", label], rule, message, hint, cluster=index.cluster.name))
        prebuilt = _prebuilt(index, job, ns)
        if prebuilt:
            finding("kueue-prebuilt-workload", *prebuilt, label=PREBUILT_LABEL)
        if index.has("LocalQueue", ns, queue):
            _queue_rules(ctx, root, index, job, ns, queue, finding, out)
            continue
        have = sorted(str(as_map(o.get("metadata")).get("name")) for _, o in index.of_kind("LocalQueue")
                      if name_key(as_map(o.get("metadata")).get("namespace")) == ns)
        finding("workload-queue", f"label {QUEUE_LABEL}={queue!r} names no LocalQueue of namespace {ns} on cluster {index.cluster.name} "
                f"(have: {', '.join(have) or 'none'}): Kueue never admits the {job.get('kind')}, and suspended it never runs",
                "name one of the namespace's LocalQueues, or add that LocalQueue to the queue layer")
    return out
