"""The samples each cluster submits (clusters/<name>/samples.yaml, the configuration's samples file),
rendered from workloads/ as scripts/submit-workload renders them and judged against the cluster's
queues: the LocalQueue their label names (after Kueue's LocalQueueDefaulting), their TTL, and
whether Kueue's own flavor assigner could ever admit them in their ClusterQueue (`sample-fits`, kueue_fit.py). The
rule ids are documented in harness.gate.rules (RULES), with the rest of the cluster rules.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness.gate import fit_causes, kueue_fit, kueue_manager, workloads
from harness.gate.cluster_index import finding_at
from harness.gate.findings import Finding
from harness.gate.origin import line_at
from harness.gate.render import ClusterRender
from harness.gate.rules import Context
from harness.gate.schema_check import Checker
from harness.gate.sources import (POD_ADMISSION_KINDS, QUEUE_LABEL, SourceError, as_list, as_map, in_namespace_of, is_kustomization_file, load_yaml, name_key,
                                  queue_name, resource_id)


# -- Kueue objects ----------------------------------------------------------------------------


def sample_rules(ctx: Context, root: Path, cluster: ClusterRender) -> tuple[list[Finding], list[tuple[str, dict, int | None]], kueue_fit.Fits]:
    """Checks clusters/<name>/samples.yaml against the cluster's queues; returns (sample, RayJob,
    samples.yaml line of its entry) for every entry that renders too, and Kueue's flavor assigner's answers for the
    samples (kueue_fit.Fits: it answers in the gate's helper meanwhile; its sample-fits findings each come with the
    ClusterQueue they presume (resource id): one the apiserver or Kueue's webhook rejects is the cause, and the caller
    drops them then)."""
    out, rendered = [], []
    fits = kueue_fit.Fits()
    samples_file = ctx.config.samples_file(cluster.name)
    defaults_file = f"{workloads.WORKLOADS_DIR}/defaults.yaml"
    path = root / samples_file
    if not path.exists():
        return out, rendered, fits
    try:
        entries = load_yaml(path, root) or []
    except SourceError as err:
        return [err.finding], rendered, fits
    if not isinstance(entries, list):
        return [Finding(samples_file, None, "", "sample-render", f"is a {type(entries).__name__}, not a list of samples",
                        f"make {ctx.config.samples} a list of entries `- sample: NAME` / `queue: LQ` / `vars: {{...}}`", f"cluster {cluster.name}")], rendered, fits
    objects = [o for _, o in cluster.applied()]
    complete = cluster.complete
    lqs = {(name_key(as_map(o.get("metadata")).get("namespace")), name_key(o["metadata"]["name"])): o for o in objects if o.get("kind") == "LocalQueue"}
    cqs = {name_key(o["metadata"]["name"]): o for o in objects if o.get("kind") == "ClusterQueue"}
    candidates: list[kueue_fit.Candidate] = []  # the samples whose ClusterQueue is known: Kueue's flavor assigner judges them below
    missing: dict[str, list[tuple[int | None, dict, workloads.MissingVariable]]] = {}  # ${VAR} -> the entries it leaves unrendered
    names: dict[tuple, tuple[int | None, str]] = {}  # (namespace, name) rendered -> (line, sample) of the first entry
    for i, entry in enumerate(entries):
        e = entry if isinstance(entry, dict) else {}
        where = f"cluster {cluster.name}, sample {e.get('sample')} on {e.get('queue')}"
        # A sample's findings point at its entry (what is submitted where, with which vars); a
        # value written in the workload file, at that file's line.
        entry_line = line_at(root, samples_file, None, [i])
        if f"{workloads.WORKLOADS_DIR}/{e.get('sample')}.yaml" in ctx.sources.broken_files():
            continue  # its YAML error is the finding; what PyYAML made of the file is not what kubectl would submit
        try:
            sample, job = workloads.render_entry(entry, root)
        except workloads.MissingVariable as err:  # often one cause for several entries: folded below
            missing.setdefault(err.name, []).append((entry_line, e, err))
            continue
        except workloads.UnknownKey as err:
            out.append(Finding(samples_file, line_at(root, samples_file, None, [i, err.key]) or entry_line, f"sample/{e.get('sample')}",
                               "sample-render", str(err), err.hint, where))
            continue
        except workloads.FileError as err:  # written in a file of workloads/: one finding there, whichever entries use it
            if err.file not in ctx.sources.broken_files():  # (a file that does not parse is reported as such, once)
                out.append(err.finding or Finding(err.file, err.line, "", "sample-render", str(err), err.hint, f"cluster {cluster.name}"))
            continue
        except workloads.WorkloadError as err:
            out.append(Finding(samples_file, entry_line, f"sample/{e.get('sample')}", "sample-render", str(err),
                               "each entry needs `sample` (a file in workloads/) and `queue`; pass every ${VAR} in `vars`", where))
            continue
        wfile = f"workloads/{sample}.yaml"
        meta = as_map(job.get("metadata"))
        key = (name_key(meta.get("namespace", "default")), name_key(meta.get("name")))
        if meta.get("name") and key in names:  # the same object twice: the second `kubectl create` is refused
            first, first_sample = names[key]
            named = "JOB_NAME" in workloads.used_vars(sample, root)
            out.append(Finding(samples_file, entry_line, resource_id(job), "sample-duplicate",
                               f"renders {job.get('kind')} {key[0]}/{key[1]}, as the entry at line {first} ({first_sample}) does: the apiserver "
                               "refuses the second while the first exists (AlreadyExists), so this entry never runs",
                               f"give the entry a name of its own: `vars: {{JOB_NAME: {sample}-2}}`" if named else
                               f"give the entry a name of its own (metadata.name of {wfile} is fixed: add a ${{JOB_NAME}} there)", where))
            continue
        names[key] = (entry_line, sample)
        for name, near in workloads.unused_vars(sample, e.get("vars") or {}, root).items():
            meant = f"did you mean {near[0]}?" if len(near) == 1 else f"it uses {', '.join(near)}"
            out.append(Finding(samples_file, line_at(root, samples_file, None, [i, "vars", name]) or entry_line, f"sample/{sample}",
                               "sample-vars", f"vars sets {name}, which {wfile} does not use ({meant}): the sample is checked "
                               "with its default instead", f"spell the variable as {wfile} does, or remove it from `vars`", where))
        # A label written as a fixed value and not ${QUEUE_NAME}: the entry's `queue` (and submit-workload --queue) is not what is submitted.
        fixed = queue_name(job) is not None and str(queue_name(job)) != str(as_map(e.get("vars")).get("QUEUE_NAME", e.get("queue")))
        if fixed:
            out.append(ctx.finding(job, None, "sample-vars", f"label {QUEUE_LABEL} is written as {queue_name(job)!r}, not ${{QUEUE_NAME}}: "
                                   f"the `queue` of its {ctx.config.samples} entries (and scripts/submit-workload --queue) is not used, every "
                                   f"one is submitted to LocalQueue {queue_name(job)}", f"write {QUEUE_LABEL}: ${{QUEUE_NAME}} in {wfile}",
                                   file=wfile, context=where, field=f"metadata.labels[{QUEUE_LABEL}]"))
        rendered.append((sample, job, entry_line))
        ctx.sample_entries[id(job)] = (samples_file, entry_line)
        # Where each ${VAR} this entry gives is written: its `queue` fills QUEUE_NAME (unless `vars` sets it); one it does not
        # set takes its value from workloads/defaults.yaml.
        ctx.sample_vars[id(job)] = {str(k): (defaults_file, line_at(root, defaults_file, None, [k]), f"default {k}")
                                    for k in workloads.defaults(root)} | {
            "QUEUE_NAME": (samples_file, line_at(root, samples_file, None, [i, "queue"]) or entry_line, "queue")} | {
            str(k): (samples_file, line_at(root, samples_file, None, [i, "vars", k]) or entry_line, f"vars {k}") for k in as_map(e.get("vars"))}
        ctx.sample_related[id(job)] = in_namespace_of(job, objects)
        spec = as_map(job.get("spec"))
        ttl = spec.get("ttlSecondsAfterFinished")
        if spec.get("shutdownAfterJobFinishes") is True and isinstance(ttl, int) and ttl > 0:
            # Kueue marks the Workload Finished when the RayJob ends and admits the next job at once;
            # KubeRay deletes the RayCluster only ttlSecondsAfterFinished later (kueue#3994).
            found = ctx.finding(job, None, "sample-ttl-holds-nodes",
                                f"ttlSecondsAfterFinished is {ttl}: Kueue frees the job's quota when it ends, but its RayCluster keeps "
                                f"its nodes for {ttl} s more, so the job admitted next waits Pending for them",
                                "set spec.ttlSecondsAfterFinished: 0 (keep logs outside the cluster), or leave headroom in the pools for it",
                                file=wfile, context=where, field="spec.ttlSecondsAfterFinished")
            out.append(replace(found, severity="warning"))
        if not complete:
            continue  # a layer did not render (its own finding says why): the cluster's queues are unknown
        ns = as_map(job.get("metadata")).get("namespace", "default")
        qname = queue_name(job)
        if qname is None and (name_key(ns), "default") in lqs and isinstance(meta := job.get("metadata"), dict):
            # Kueue's RayJob webhook labels it with its namespace's LocalQueue "default" (LocalQueueDefaulting, GA in 0.17)
            meta["labels"], qname = {**as_map(meta.get("labels")), QUEUE_LABEL: "default"}, "default"
        if qname is None:  # Kueue manages no job without it (manageJobsWithoutQueueName aside): suspended, it never starts
            out.append(ctx.finding(job, None, "sample-queue", f"has no label {QUEUE_LABEL} and namespace {ns} has no LocalQueue "
                                   "named default (which Kueue's webhook would put there): Kueue never admits it, and with spec.suspend: "
                                   "true it never starts", f"add metadata.labels {QUEUE_LABEL}: ${{QUEUE_NAME}} "
                                   f"(scripts/submit-workload fills it from {ctx.config.samples} `queue`)", file=wfile, context=where, field="metadata.labels"))
            continue
        lq = lqs.get((name_key(ns), name_key(qname)))
        reference = f"sample {sample} ({samples_file}:{entry_line}) queue {ns}/{qname}"
        if lq is None and (ctx.renamed("LocalQueue", qname, {n for (lns, n) in lqs if lns == ns}, reference)
                           or ctx.moved(cluster.name, "LocalQueue", ns, qname, reference, lambda other: (other, qname) in lqs)):
            continue
        if lq is None and fixed:
            continue  # the fixed label is the cause (sample-vars above)
        if lq is None:
            have = ", ".join(sorted(n for (lns, n) in lqs if lns == ns)) or "none"
            unapplied = next((d.file for d in ctx.sources.docs if d.obj.get("kind") == "LocalQueue"  # in a file its kustomization does not list
                              and as_map(d.obj.get("metadata")).get("name") == qname and _unlisted(ctx, d.file)), None)
            text = (f"label {QUEUE_LABEL}={qname!r}: no such LocalQueue in namespace {ns} on this cluster (have: {have})",
                    f"submit to one of the cluster's LocalQueues ({ctx.config.samples} `queue`)" + (
                        f", or list {unapplied}, which writes LocalQueue {qname} and no layer of the cluster applies, in the resources of "
                        f"the kustomization beside it" if unapplied else ""))
            elsewhere = sorted(lns for (lns, n) in lqs if n == qname and lns != ns)
            if elsewhere and "queue" in e and any(lns == ns for (lns, _) in lqs):
                # The entry names another namespace's queue while the sample's namespace has queues of its own (a team in its
                # own namespace): the entry is what to change, not the workload every other entry submits as it is.
                var = "NAMESPACE" in workloads.used_vars(sample, root)
                out.append(Finding(samples_file, line_at(root, samples_file, None, [i, "queue"]), resource_id(job), "sample-queue",
                                   f"{text[0]}; it is in namespace {', '.join(map(str, elsewhere))}",
                                   f"set `vars: {{NAMESPACE: {elsewhere[0]}}}` in this entry" if var else
                                   f"submit to a LocalQueue of namespace {ns} ({have}), or write `namespace: ${{NAMESPACE}}` in {wfile} with "
                                   f"NAMESPACE: {ns} in {workloads.WORKLOADS_DIR}/defaults.yaml and set `vars: {{NAMESPACE: {elsewhere[0]}}}` "
                                   "in this entry", where))
            elif elsewhere:  # the queue exists, in another namespace, and the job's has none: the job's namespace is what is wrong
                out.append(ctx.finding(job, None, "sample-queue", f"{text[0]}; it is in namespace {', '.join(map(str, elsewhere))}",
                                       f"submit the sample in namespace {elsewhere[0]} (metadata.namespace of {wfile})",
                                       file=wfile, context=where, field="metadata.namespace"))
            elif "queue" in e:  # the entry's queue fills the label
                out.append(Finding(samples_file, line_at(root, samples_file, None, [i, "queue"]), resource_id(job), "sample-queue", *text, where))
            else:
                out.append(ctx.finding(job, None, "sample-queue", *text, file=wfile, context=where, field=f"metadata.labels[{QUEUE_LABEL}]"))
            continue
        cq = cqs.get(name_key(as_map(lq.get("spec")).get("clusterQueue")))
        if cq:
            candidates.append(kueue_fit.Candidate(job, cq, in_namespace_of(job, objects, POD_ADMISSION_KINDS), samples_file, entry_line, wfile, where, i))
    for name, uses in missing.items():
        (line, e, err), files = uses[0], sorted({u[2].file for u in uses})
        message = str(err) if len(uses) == 1 else (
            f"variable ${{{name}}} has no value for {len(uses)} entries (lines {', '.join(str(u[0]) for u in uses)}): {', '.join(files)} use it, "
            f"and neither {workloads.WORKLOADS_DIR}/defaults.yaml nor the entries' `vars` set it")
        out.append(Finding(samples_file, line, f"sample/{e.get('sample')}", "sample-render", message,
                           f"set {name} in {workloads.WORKLOADS_DIR}/defaults.yaml, or in the `vars` of each entry", f"cluster {cluster.name}"))
    manager = kueue_fit.manager_ref(root, cluster)  # a kind whose integration it leaves out is kueue-integration-off instead
    candidates = [c for c in candidates if kueue_manager.integration_on(manager, c.job.get("kind"))]
    if complete:
        candidates += _layer_candidates(ctx, root, cluster, objects, lqs, cqs, manager)
    ambiguous, candidates = fit_causes.ambiguous_transformations(ctx, root, cluster, candidates)  # a coin toss in Kueue: not judged
    out += ambiguous
    fits = kueue_fit.fits(ctx.checker or Checker(tuple(ctx.config.crd_files(root))).start(), root, cluster, candidates, ctx.config)
    fits.relocate = fit_causes.relocator(ctx, root, cluster, fits)
    return out, rendered, fits


def _layer_candidates(ctx: Context, root: Path, cluster: ClusterRender, objects: list[dict], lqs: dict, cqs: dict,
                      manager: dict) -> list[kueue_fit.Candidate]:
    """The queued Ray objects the cluster's layers apply (a RayJob, RayCluster or RayService of an integration the manager
    runs, whose queue label names a LocalQueue of its namespace): Kueue's flavor assigner judges them as it judges the
    samples (sample-fits), each at its label's line (workload-queue reports a LocalQueue that is not there)."""
    out = []
    for build, obj in cluster.applied():
        kind, meta = obj.get("kind"), as_map(obj.get("metadata"))
        if not str(obj.get("apiVersion", "")).startswith("ray.io/") or not kueue_manager.integration_on(manager, kind) or queue_name(obj) is None:
            continue
        ns = meta.get("namespace", "default")
        lq = lqs.get((name_key(ns), name_key(queue_name(obj))))
        cq = cqs.get(name_key(as_map(as_map(lq).get("spec")).get("clusterQueue")))
        if cq is None:
            continue  # workload-queue / localqueue-clusterqueue report it
        at = finding_at(ctx, root, obj, build, ["metadata", "labels", QUEUE_LABEL], "sample-fits", "", "", cluster=cluster.name)
        out.append(kueue_fit.Candidate(obj, cq, in_namespace_of(obj, objects, POD_ADMISSION_KINDS), at.file, at.line, at.file, at.context,
                                       what=f"{kind} {ns}/{meta.get('name')} as its layer applies it"))
    return out


def _unlisted(ctx: Context, file: str) -> bool:
    """Whether the kustomization beside `file` (one there) lists it in none of its resources."""
    folder, _, name = file.rpartition("/")
    listed = [d.obj for d in ctx.sources.docs if is_kustomization_file(d.file) and d.file.rpartition("/")[0] == folder]
    return bool(listed) and not any(str(r).removeprefix("./") == name for k in listed for r in as_list(k.get("resources")))


def sample_queues(root: Path, cluster: str) -> dict[str, set[str]]:
    """sample -> the LocalQueues a cluster's samples file (clusters/<name>/samples.yaml, as the gate configuration names
    it) submits it to; {} when there is no such file or it is no list (sample-render reports it)."""
    from harness.gate import config  # the configuration reads this package's names: loaded on use

    try:
        entries = load_yaml(Path(root) / config.load(root).samples_file(cluster), root)
    except (SourceError, OSError):
        return {}
    out: dict[str, set[str]] = {}
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, dict) and isinstance(e.get("sample"), str) and isinstance(e.get("queue"), str):
            out.setdefault(e["sample"], set()).add(e["queue"])
    return out
