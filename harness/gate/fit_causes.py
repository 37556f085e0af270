"""sample-fits at its cause when the cause is one value of the cluster's configuration, not the job: Kueue's flavor
assigner refusing every job that needs a topology-only flavor beside flavors without a topology (at that flavor's
topologyName), a resource the manager configuration's resources.transformations make that the ClusterQueue has no
quota for (at that transformation's output) or that charges the jobs more than their ClusterQueue holds (at its
multiplyBy, when Kueue's assigner admits them without it), or a LimitRange default that Kueue charges to the containers that write no
request of their own and that the jobs do not fit with (at that default: Kueue's assigner admits them without the
namespace's LimitRanges), or a RuntimeClass's pod overhead the jobs do not fit with (at the runtimeClassName that adds it).
One finding for all the jobs it keeps out, on every cluster, instead of one per sample at
samples.yaml (the findings say the same but for their context, which findings.keep_once joins). A resource the job
requests that no resource group of its ClusterQueue covers is the job's own value: one finding at the request's line in
the workload file, naming the clusters."""
from __future__ import annotations

import re
from collections.abc import Callable

import yaml
from dataclasses import replace
from pathlib import Path

from harness.gate import kueue_manager, matching
from harness.gate.cluster_index import ClusterIndex, kind_key
from harness.gate.findings import Finding
from harness.gate.kueue_fit import SHORT_QUOTA, overheads
from harness.gate.origin import dotted
from harness.gate.pod_refs import overhead_text, pod_templates
from harness.gate.render import ClusterRender
from harness.gate.sources import SafeDumper, as_map, as_maps, parse_yaml, resource_id

_TAS_ONLY = re.compile(r'Flavor "([^"]+)" supports only TopologyAwareScheduling')
_UNAVAILABLE = re.compile(r"resource (\S+) unavailable in ClusterQueue")


def relocator(ctx, root: Path, cluster: ClusterRender, fits=None) -> Callable:
    """fn(finding, candidate, answer) -> the finding at its cause in the cluster's configuration (or at the job's own
    request), or as it is. `fits`: the kueue_fit.Fits the answers are from (it asks the what-ifs)."""
    index = ClusterIndex.build(root, cluster)
    if fits is not None:
        fits.locate = lambda obj, field: _where(ctx, index, obj, field)

    def relocate(found: Finding, candidate, answer: dict) -> Finding:
        reason = answer.get("message") or ""
        tas = _TAS_ONLY.search(reason)
        if tas and ("ResourceFlavor", None, tas[1]) in index.named:
            build, flavor = index.named[("ResourceFlavor", None, tas[1])]
            plain = sorted(str(fl.get("name")) for rg in as_maps(as_map(candidate.cq.get("spec")).get("resourceGroups"))
                           for fl in as_maps(rg.get("flavors"))
                           if not as_map(as_map(index.named.get(("ResourceFlavor", None, fl.get("name")), (None, {}))[1]).get("spec")).get("topologyName"))
            return ctx.finding(flavor, build, "sample-fits",
                               f"ResourceFlavor {tas[1]} has a topologyName while a ClusterQueue that uses it also has flavors without one "
                               f"({', '.join(plain) or 'none'}): Kueue's flavor assigner admits on {tas[1]} only pod sets that ask for a "
                               "topology, and refuses a pod set that asks for one on every flavor without a topology that covers what it "
                               f"requests, so no job that needs {tas[1]} there is ever admitted; they pend forever",
                               f"drop topologyName from ResourceFlavor {tas[1]}, or give every flavor of the ClusterQueues that use it a "
                               "topologyName (Kueue then places the pod sets that ask for none too); annotating the pod templates with a "
                               f"topology does not help while {', '.join(plain) or 'a flavor without one'} covers resources they request",
                               cluster=cluster.name, field="spec.topologyName")
        short = _UNAVAILABLE.search(reason)
        made = _transformation(index, short[1]) if short else None
        if made:
            (build, hr), i, source, strategy = made
            charged = (f"{short[1]} instead of {source}" if strategy == "Replace" else f"{short[1]} as well as {source} (strategy Retain, "
                       "the default, keeps the input)")
            located, block = kueue_manager.locate(ctx, root, index, build, hr, "sample-fits")
            return Finding(located.file, block.line(["resources", "transformations", i, "outputs", short[1]]), located.resource,
                           "sample-fits", f"the Kueue manager configuration's resources.transformations[{i}] turns {source} into "
                           f"{short[1]}, which no resource group of the jobs' ClusterQueues covers: Kueue charges every job that requests "
                           f"{source} {charged}, and admits none of them; they pend forever",
                           f"add {short[1]} to a resource group of each ClusterQueue (with the quota the transformation needs), or "
                           "change or remove the transformation", located.context)
        requested = _uncovered_request(ctx, candidate, short[1], reason) if short else None
        if requested:
            return requested
        if overhead := _overhead_cause(ctx, candidate, fits):
            return overhead
        if inflated := _inflating_transformation(ctx, root, index, candidate, fits):
            return inflated
        res = short or SHORT_QUOTA.search(reason)  # not the job's own request: a LimitRange default may be what asks it
        defaulted = _limit_range_default(ctx, index, candidate, answer, fits, res[1]) if fits is not None and res else None
        return defaulted or _quota_hint(ctx, index, found, candidate, reason)
    return relocate


def _uncovered_request(ctx, candidate, res: str, reason: str) -> Finding | None:
    """A resource no resource group of the ClusterQueue covers: at the first pod template that requests it (Kueue assigns
    the pod sets in that order and stops there), in the job's file; the ClusterQueue is named in the context."""
    for path, pod in pod_templates(candidate.job):
        for group in ("initContainers", "containers"):
            for i, container in enumerate(as_maps(pod.get(group))):
                resources = as_map(container.get("resources"))
                part = next((p for p in ("requests", "limits") if res in as_map(resources.get(p))), None)
                if part is None:
                    continue
                cq = as_map(candidate.cq.get("metadata")).get("name")
                return ctx.finding(candidate.job, None, "sample-fits",
                                   f"requests {res}, which no resource group of the job's ClusterQueue covers: Kueue's flavor assigner "
                                   f"says \"{reason}\", so the job is never admitted, not even on an idle cluster; it would pend forever",
                                   f"drop the {res} request (and limit), or add {res} to a resource group of the ClusterQueue named here, "
                                   "with quota the nodes can give (through the cluster's gpu-sku component)",
                                   file=candidate.wfile, context=f"{candidate.where}, ClusterQueue {cq}",
                                   field=f"{dotted([*path, group, i, 'resources', part])}[{res}]")
    return None


def _overhead_cause(ctx, c, fits) -> Finding | None:
    """A job Kueue would admit but for the pod overhead of the RuntimeClass its pods name (Kueue's AdjustResources charges
    it to every such pod): at the first runtimeClassName that names one, in the file the job is written in."""
    charged = overheads(c)
    bare = fits.without(c, "RuntimeClass") if charged and fits is not None else None
    if not bare or bare.get("mode") not in ("Fit", "Preempt"):
        return None  # too big without it as well: the job is the cause (the finding names the overhead)
    path, charge = next(iter(charged.values()))
    name = charge[0]
    return ctx.finding(c.job, None, "sample-fits",
                       f"{dotted(path)} names RuntimeClass {name}: Kueue charges every pod of the template {overhead_text(charge)} on "
                       f"top of its requests, and with it the job's ClusterQueue never admits {c.what or f'{c.wfile} as submitted'}, "
                       "not even on an idle cluster (without it, it would); it would pend forever",
                       f"drop runtimeClassName, lower RuntimeClass {name}'s overhead.podFixed, or make room for it (smaller pods, or more "
                       "quota through the cluster's gpu-sku component)", file=c.wfile, context=c.where, field=dotted(path))


def _limit_range_default(ctx, index: ClusterIndex, candidate, answer: dict, fits, res: str) -> Finding | None:
    """A quota the job outgrows (or a resource no resource group covers, `res`) only with what its namespace's LimitRanges
    give the containers that write no request (Kueue charges the default, workload.AdjustResources): at the LimitRange
    value the apiserver makes that default from (defaultRequest, else default, else max), when Kueue's assigner admits
    the job without the LimitRanges."""
    ranges = sorted((o for o in candidate.limit_ranges if o.get("kind") == "LimitRange"), key=resource_id)
    if not ranges:
        return None
    ranges = [index.named.get(kind_key(lr), (None, lr))[1] for lr in ranges]  # as written (the apiserver fills in default/defaultRequest)
    written = next(((lr, i, key, as_map(item.get(key))[res]) for lr in ranges
                    for i, item in enumerate(as_maps(as_map(lr.get("spec")).get("limits"))) if item.get("type") == "Container"
                    for key in ("defaultRequest", "default", "max") if res in as_map(item.get(key))), None)
    if written is None:
        return None
    bare = fits.without(candidate, "LimitRange")
    if not bare or bare.get("mode") not in ("Fit", "Preempt"):
        return None  # the job does not fit without the defaults either: a quota it outgrows (the hint names it)
    own = {ps.get("name"): as_map(ps.get("requests")).get(res) for ps in bare.get("pod_sets") or []}
    took = [ps.get("name") for ps in answer.get("pod_sets") or [] if as_map(ps.get("requests")).get(res) != own.get(ps.get("name"))]
    lr, i, key, value = written
    field = f"spec.limits[{i}].{key}[{res}]"
    build = index.named.get(kind_key(lr), (None, None))[0]
    made = {"defaultRequest": "", "default": ", which the apiserver copies into defaultRequest (not written),",
            "max": ", which the apiserver copies into default and defaultRequest (neither is written),"}[key]
    lower = (f"lower {key} {res} in this LimitRange to what such a container needs" if key != "max" else
             f"write defaultRequest {res} in this LimitRange (what such a container needs): the apiserver takes max for it only "
             "when neither default nor defaultRequest is written")
    kueue_said = (answer.get("message") or "").split(": ", 1)[-1].replace("; ", ", ")
    sets = f"pod set {took[0]} takes" if len(took) == 1 else f"pod sets {', '.join(map(str, took))} take" if took else "its pods take"
    return ctx.finding(lr, build, "sample-fits",
                       f"{key} {res} {value} of spec.limits[{i}]{made} is the {res} request Kueue charges every container that writes "
                       "none, and with it the jobs named here are never admitted by their ClusterQueue, not even on an idle cluster "
                       "(Kueue's flavor assigner admits them without the namespace's LimitRange defaults); they would pend forever",
                       f"give the containers that take the default their own {res} request (a RayJob's default submitter writes none: "
                       f"set spec.submitterPodTemplate with a container that requests what it needs), or {lower}",
                       context=f"{candidate.where}: {sets} {res} {value} from it, and Kueue's flavor assigner says \"{kueue_said}\"",
                       field=field)



def _quota_hint(ctx, index: ClusterIndex, found: Finding, candidate, reason: str) -> Finding:
    """A quota the job outgrows: the hint names the line that writes the ClusterQueue's nominalQuota of that resource and
    flavor (the gpu-sku component's patch, or wherever else it is written)."""
    short = SHORT_QUOTA.search(reason)
    cq_name = as_map(candidate.cq.get("metadata")).get("name")
    entry = index.named.get(("ClusterQueue", None, cq_name)) if short else None
    if entry is None or "through the cluster's gpu-sku component" not in found.hint:
        return found
    path = next((f"spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}].nominalQuota"
                 for gi, g in enumerate(as_maps(as_map(entry[1].get("spec")).get("resourceGroups")))
                 for fi, f in enumerate(as_maps(g.get("flavors"))) if f.get("name") == short[2]
                 for ri, r in enumerate(as_maps(f.get("resources"))) if r.get("name") == short[1]), None)
    at = _where(ctx, index, entry[1], path) if path else None
    if at is None:
        return found
    return replace(found, hint=found.hint.replace("through the cluster's gpu-sku component",
                                                  f"of ClusterQueue {cq_name} ({short[1]} in flavor {short[2]}, written at {at})"))


def ambiguous_transformations(ctx, root: Path, cluster: ClusterRender, candidates: list) -> tuple[list[Finding], list]:
    """A transformation output that a pod requesting the input requests itself: Kueue 0.17's applyResourceTransformations
    ranges over the pod's request map and writes an untransformed request over an output accumulated before it
    (workload.go), so it charges the sum or the pod's own request by Go map order, from evaluation to evaluation. One
    sample-fits finding at each such output (the same on every cluster), and the candidates left to judge: those whose
    pods request both are not judged (their verdict is a coin toss; the finding says why)."""
    index = ClusterIndex.build(root, cluster)
    out: dict = {}
    keep = []
    for c in candidates:
        hit = None
        for _, spec in pod_templates(c.job):
            requests = matching.pod_requests({"spec": spec}, c.limit_ranges)
            for made, i, t in _transformations(index):
                both = sorted(r for r in as_map(t.get("outputs")) if str(t.get("input")) in requests and r in requests and r != t.get("input"))
                for r in both:
                    hit = (made, i, t, r)
                    out.setdefault((i, r), hit)
        if hit is None:
            keep.append(c)
    found = []
    for ((build, hr), i, t, r) in out.values():
        located, block = kueue_manager.locate(ctx, root, index, build, hr, "sample-fits")
        found.append(Finding(located.file, block.line(["resources", "transformations", i, "outputs", r]), located.resource, "sample-fits",
                             f"the Kueue manager configuration's resources.transformations[{i}] outputs {r}, which the pods that request "
                             f"{t.get('input')} request themselves: Kueue 0.17 charges such a pod either the sum or its own {r} request, by "
                             "Go map order (workload.go applyResourceTransformations writes an untransformed request over the output), so "
                             "whether their jobs are admitted changes from one evaluation to the next; the gate does not judge them",
                             f"transform {t.get('input')} into a resource of its own (e.g. example.com/{str(t.get('input')).rpartition('/')[2]}"
                             f"-{r}) and give it quota in the ClusterQueues", located.context))
    return found, keep


def _where(ctx, index: ClusterIndex, obj: dict, field: str) -> str | None:
    """file:line where the cluster's set writes `field` of the Kueue object `obj` (its own document, or the patch that
    writes it); None when the object is not in the cluster's index."""
    entry = index.named.get(kind_key(obj))
    return ctx.finding(entry[1], entry[0], "", "", "", field=field).location() if entry else None


def _inflating_transformation(ctx, root: Path, index: ClusterIndex, c, fits) -> Finding | None:
    """A job Kueue would admit but for the manager configuration's transformations of what its pods request (a multiplyBy,
    or outputs that charge more than the input): at the first such transformation's multiplyBy (or outputs), when the
    assigner admits the job under the configuration without them."""
    requests = {r for _, spec in pod_templates(c.job) for r in matching.pod_requests({"spec": spec}, c.limit_ranges)}
    applied = [(made, i, t) for made, i, t in _transformations(index) if str(t.get("input")) in requests]
    text = kueue_manager.manager_text(applied[0][0][1]) if applied and fits is not None else None
    doc = parse_yaml(text) if isinstance(text, str) else None
    if not isinstance(doc, dict) or not isinstance(as_map(doc.get("resources")).get("transformations"), list):
        return None
    inputs = {str(t.get("input")) for _, _, t in applied}
    doc["resources"]["transformations"] = [t for t in doc["resources"]["transformations"] if str(as_map(t).get("input")) not in inputs]
    bare = fits.under(c, yaml.dump(doc, Dumper=SafeDumper))
    if not bare or bare.get("mode") not in ("Fit", "Preempt"):
        return None  # the job does not fit without them either: its own size or the quota is the cause
    (build, hr), i, t = applied[0]
    located, block = kueue_manager.locate(ctx, root, index, build, hr, "sample-fits")
    how = f"multiplies {t.get('input')} by the pods' {t.get('multiplyBy')}" if t.get("multiplyBy") else \
        f"charges {t.get('input')} as {', '.join(f'{k} {v}' for k, v in as_map(t.get('outputs')).items())} per unit"
    return Finding(located.file, block.line(["resources", "transformations", i, "multiplyBy" if t.get("multiplyBy") else "outputs"]),
                   located.resource, "sample-fits", f"the Kueue manager configuration's resources.transformations[{i}] {how}: Kueue "
                   f"charges the jobs that request {t.get('input')} more than their ClusterQueue can ever admit (without the "
                   "transformation it would admit them), so they pend forever",
                   f"remove {'multiplyBy' if t.get('multiplyBy') else 'the outputs that inflate the charge'} from transformations[{i}] "
                   "(or the transformation), or give the ClusterQueues quota for what it charges", located.context)


def _transformations(index: ClusterIndex):
    """((build, HelmRelease), index, transformation) of the Kueue manager configurations' transformations, as loaded."""
    for build, hr in index.of_kind("HelmRelease"):
        if index.chart_of(hr) == "kueue":
            config = kueue_manager.loaded(kueue_manager.manager_text(hr))
            for i, t in enumerate(as_maps(as_map(as_map(config).get("resources")).get("transformations"))):
                yield (build, hr), i, t


def _transformation(index: ClusterIndex, resource: str):
    """((build, HelmRelease), index, input, strategy as written) of the manager configuration's transformation that outputs
    `resource`."""
    return next(((made, i, t.get("input"), t.get("strategy")) for made, i, t in _transformations(index)
                 if resource in as_map(t.get("outputs"))), None)
