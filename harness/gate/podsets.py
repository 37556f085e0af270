"""The sample RayJobs' pod sets (clusters/<name>/samples.yaml) against the node pools: per pod
set, whether Kueue can give it flavors at all, whether those flavors land it on a pool with
nodes, whether one pod fits one node's allocatable, and whether all its pods fit the pools'
nodes at once (at max_count; at min_count only is a scale-up warning). Placement semantics are
harness.gate.placement's; findings point at the line of the workload file (or samples.yaml
entry) where the offending value is written.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.core import format_quantity
from harness.gate import fit_hints, kueue_fit, scheduling, workloads
from harness.gate.findings import Finding
from harness.gate.config import GateConfig
from harness.gate.pod_refs import charged_overhead, overhead_text, runtime_class
from harness.gate.placement import Flavor, Problem, PodView, flavor, flavors_of, groups_of, landing, pod_templates, pod_view
from harness.gate.render import ClusterRender
from harness.gate.schema_check import Checker
from harness.gate.matching import taint_text
from harness.gate.pools import Pool, node_matches, untolerated
from harness.gate.sku import allocatable, sku_table
from harness.gate.podset_lines import PodSetLines, entry_var_lines, request_line, workload_lines
from harness.gate.sources import POD_ADMISSION_KINDS, QUEUE_LABEL, SourceError, as_map, in_namespace_of, load_yaml, name_key, read_source, resource_id



def _rejections(pod: PodView, combo, pools: list[Pool]) -> str:
    """Why each pool refuses the pods of one flavor combination."""
    labels: dict[str, str] = {}
    for f in combo:
        labels.update(f.labels)
    selector = {**labels, **pod.node_selector}
    tolerations = list(pod.tolerations) + [t for f in combo for t in f.tolerations]
    why = []
    for p in pools:
        if not node_matches(p.labels, selector, pod.affinity):
            missing = [f"{k}={v}" for k, v in selector.items() if p.labels.get(k) != v]
            why.append(f"{p.name} lacks {', '.join(missing)}" if missing else f"{p.name} does not match the pod's node affinity")
        elif (taint := untolerated(p.node_taints(), tolerations)) is not None:
            why.append(f"{p.name} has taint {taint_text(taint)}, not tolerated")
        elif not p.linux:
            why.append(f"{p.name} runs Windows (kubernetes.io/os={p.os}), where Ray's Linux images cannot start")
        elif p.count == 0:
            why.append(f"{p.name} has 0 nodes")
    names = " + ".join(f.name for f in combo)
    return f"flavors {names} (nodeSelector {selector or '{}'}): " + "; ".join(why)


BLOCKED_HINT = ("add the flavor's nodeTaints to the pod templates' tolerations (or to the flavor's spec.tolerations to give them "
                "to every pod it admits), or fix the pods' nodeSelector/affinity")
POD_NO_POOL_HINT = ("fix the pod template's nodeSelector/affinity/tolerations to match a pool's labels and taints "
                    "(listed in the message), or give a pool the labels it asks for (terraform node_labels)")
NO_POOL_HINT = ("make a pool carry the flavors' nodeLabels (terraform node_labels) and let the pods tolerate its taints "
                "(flavor spec.tolerations), or add nodes to the pool they need")
LINUX_HINT = "; the pool must be a Linux pool (os_type \"Linux\", the default): Ray's images do not run on Windows nodes"


def sample_problems(root: Path, cluster: ClusterRender, objects: list[dict], pools: list[Pool], rel: str, ctx: str,
                    unreachable: set[str], locate: Callable[..., tuple[str, int | None]], gate_config: GateConfig,
                    fits: kueue_fit.Fits | None = None) -> tuple[list[Problem], list[Problem]]:
    """(errors, scale-up warnings) of the sample pod sets in the cluster's samples file: no flavor, no pool, a pod larger
    than a node, more pods than the pools' nodes take. The flavors each pod set gets are Kueue's flavor assigner's
    (`fits`, from sample_rules; asked here when not given). Pods with no placement constraints of their own that fail
    for the same flavor reason share one finding at the flavor (`locate` finds its file and line)."""
    errors: list[Problem] = []
    scale: list[Problem] = []
    samples_rel = gate_config.samples_file(cluster.name)
    try:
        entries = load_yaml(root / samples_rel, root) if (root / samples_rel).exists() else []
        var_lines = entry_var_lines(read_source(root / samples_rel, root)) if entries else []
    except SourceError:
        return errors, scale  # yaml-syntax reports it
    flavors = flavors_of(objects)
    shared: dict[tuple[str, str], tuple[set, list[str]]] = {}  # (flavor to blame, message) -> (causes, pod sets)

    def share(blame: str, message: str, causes: set, label: str) -> None:
        entry = shared.setdefault((blame, message), (set(), []))
        entry[0].update(causes)
        entry[1].append(label)

    windows: list[Problem] = []  # capacity-pod-os warnings
    to_place: list[tuple[dict, dict, dict, str, str]] = []  # (job, Kueue's additions per role, role -> (lines, pod set), head, sample)
    submitted = _submitted(root, entries, objects, flavors)
    if fits is None:
        fits = kueue_fit.fits(Checker(tuple(gate_config.crd_files(root))).start(), root, cluster, [
            kueue_fit.Candidate(job, cq, in_namespace_of(job, objects, POD_ADMISSION_KINDS), samples_rel, None, "", "", i)
            for i, _, _, job, cq in submitted], gate_config)
    for i, entry, sample, job, cq in submitted:
        answer = fits.answer(i)
        if not answer or answer.get("mode") not in ("Fit", "Preempt", "NoFit"):
            continue  # not judged: its own finding says why (an invalid Workload, a queue Kueue keeps inactive)
        assigned = {ps.get("name"): ps for ps in answer.get("pod_sets") or []}
        wfile = f"{workloads.WORKLOADS_DIR}/{sample}.yaml"
        try:
            lines = workload_lines(read_source(root / wfile, root))
        except SourceError:
            lines = []
        templates = pod_templates(job)
        context = f"{ctx}, sample {sample} on {entry['queue']}"
        related = in_namespace_of(job, objects, POD_ADMISSION_KINDS)
        sets = workloads.pod_sets(job, limit_ranges=related)
        groups = groups_of(cq)
        before = (len(errors), sum(len(labels) for _, labels in shared.values()))
        assign, roles = {}, {}
        for idx, (set_name, count, requests) in enumerate(sets):
            where = lines[idx] if idx < len(lines) else PodSetLines()
            role = "head" if idx == 0 else "submitter" if set_name == "submitter" and idx == len(sets) - 1 else f"worker {set_name}"
            roles[role] = (where, set_name)
            need = {r: q for r, q in requests.items() if q > 0}
            given = assigned.get(set_name.lower()) or {}  # Kueue names pod sets lowercased
            if count < 1 or not need or not any(set(covered) & set(need) for covered, _ in groups):
                continue  # nothing to place, or only resources no group covers (sample-fits reports those)
            # Kueue's flavor assigner judges the template as written; kube-scheduler the admitted pod (RuntimeClass scheduling merged).
            template = templates[idx] if idx < len(templates) else None
            own, pod = pod_view(template), pod_view(template, objects)
            head = f"cluster {cluster.name}: ClusterQueue {cq['metadata']['name']}: pod {set_name} of sample {sample}"
            asked = ", ".join(f"{r} {format_quantity(r, q)}" for r, q in sorted(need.items()))
            if overhead := charged_overhead(as_map(as_map(templates[idx] if idx < len(templates) else None).get("spec")), related):
                asked += f" ({overhead_text(overhead)} included, which its runtimeClassName adds to every such pod)"

            def finding(rule: str, line, message: str, hint: str, file: str = wfile, severity: str = "error") -> Finding:
                return Finding(file, line, resource_id(job), rule, f"{head}{message}", hint, context, severity=severity)

            label = f"{sample}/{set_name}"
            if given.get("reasons"):
                refused = kueue_fit.placement_reasons(given)
                if refused is None:
                    continue  # quota, not placement: sample-fits reports it
                because = "; ".join(_readable(r, flavors.get(f)) for r, f in refused)
                if own.unconstrained and refused[0][1] in flavors:  # the flavors' doing, the same for every such pod: one finding at the flavor
                    share(refused[0][1], f"Kueue's flavor assigner gives pods without tolerations no flavor (\"{because}\"), so their "
                          "workloads would wait in their queues forever", set(), label)
                    continue
                errors.append(Problem([finding("capacity-pod-placement", where.template,
                                               f": Kueue's flavor assigner gives it no flavor (\"{because}\"); the workload would wait in its "
                                               "queue forever", BLOCKED_HINT)]))
                continue
            if answer["mode"] == "NoFit" or not given.get("flavors"):
                continue  # another pod set is never admitted: the job never starts (sample-fits says why)
            combo = tuple(flavor(flavors, n) for n in dict.fromkeys(given["flavors"][r] for r in sorted(given["flavors"])))
            if clash := _class_clash(template, related, own, combo):
                rc, key, wants, fl = clash
                rc_name = as_map(rc.get("metadata")).get("name")
                file, line = locate(rc, "scheduling.nodeSelector")
                errors.append(Problem([finding(
                    "capacity-pod-placement", line,
                    f" (template at {wfile}:{where.template}) names RuntimeClass {rc_name}, whose scheduling.nodeSelector sets "
                    f"{key}={wants}; Kueue writes flavor {fl.name}'s nodeLabels ({key}={fl.labels[key]}) into the template on admission, and "
                    "the apiserver's RuntimeClass admission then refuses every such pod (\"conflict: runtimeClass.scheduling.nodeSelector"
                    f"[{key}] = {wants}; pod.spec.nodeSelector[{key}] = {fl.labels[key]}\"): Kueue would admit the job and hold its quota "
                    "while KubeRay creates none of these pods",
                    f"make RuntimeClass {rc_name}'s scheduling.nodeSelector agree with flavor {fl.name}'s nodeLabels ({key}: "
                    f"{fl.labels[key]}) or drop {key} from it, or drop runtimeClassName from the pod template", file)], pod=label))
                continue
            landed = landing(pod, combo, pools)
            options = [(combo, [p for p in landed if p.linux])]  # Ray's pods are Linux pods
            on_windows = [p for p in landed if not p.linux and p.count > 0]
            live = [(combo, [p for p in ps if p.count > 0]) for combo, ps in options]
            live = [(combo, ps) for combo, ps in live if ps]
            if not live:
                empty = {p.address for _, ps in options for p in ps if p.count == 0}
                causes = {("pool", a) for a in empty} | {("flavor", f.name) for f in combo if f.name in unreachable}
                why = _rejections(pod, combo, pools)
                if pod.unconstrained:
                    blame = next((f.name for f in combo if f.labels or f.tolerations), combo[0].name)
                    share(blame, f"pods that get these flavors land on no node pool with nodes in {rel} ({why}); "
                          "Kueue would admit them and they would stay Pending", causes, label)
                    continue
                errors.append(Problem([finding("capacity-pod-placement", where.constraints or where.template,
                                               f" lands on no node pool with nodes in {rel} (its own constraints with {why}); "
                                               "Kueue would admit it and the pod would stay Pending",
                                               POD_NO_POOL_HINT + (LINUX_HINT if on_windows else ""))], frozenset(causes), pod=label))
                continue
            if on_windows:
                names = ", ".join(f"{p.name} ({p.where()})" for p in on_windows)
                fls = " or ".join(f"flavor {f.name}" for f in combo)
                windows.append(Problem([finding("capacity-pod-os", where.template,
                                                f": the scheduler may also place its pods on the Windows nodes of {names}: AKS labels them "
                                                "kubernetes.io/os=windows and taints nothing, and the pod selects no operating system; "
                                                "Ray's Linux images cannot start there and the pod would fail",
                                                "add `kubernetes.io/os: linux` to the pod template's nodeSelector (or to the nodeLabels of "
                                                f"{fls}, which Kueue adds to every pod it admits)", severity="warning")]))
            fitting, unjudged = [], []
            for combo, ps in live:
                for p in ps:
                    alloc = p.node_allocatable()
                    if fit_hints.fits(p, need):
                        fitting.append((combo, p, min((int(alloc[r] // need[r]) for r in need if alloc.get(r)), default=count)))
                        unjudged.extend((p, r) for r in sorted(p.unjudged & set(need)))
            if not fitting:
                seen = list({p.address: p for _, ps in live for p in ps}.values())
                short = next(r for r in sorted(need) if any(need[r] > p.node_allocatable().get(r, 0) for p in seen))
                if not any(short in p.node_allocatable() or short in p.unjudged for p in pools):  # no size, driver or setting of a pool gives it: no node helps
                    errors.append(Problem([finding("capacity-pod-fits-node", request_line(where, short), f" requests {asked}, but no node "
                                                   f"of any pool in {rel} offers {short}; Kueue would admit it and the pod would stay Pending",
                                                   fit_hints.missing_resource(short, pools, "request"))], frozenset({("resource", short)}), pod=label))
                    continue
                offer = "; ".join(f"{p.where()} with allocatable " + ", ".join(f"{r} {format_quantity(r, p.node_allocatable()[r])}"
                                                                            for r in sorted(need) if r in p.node_allocatable()) for p in seen)
                combos = ", ".join(" + ".join(f.name for f in combo) for combo, _ in live)
                errors.append(Problem([finding("capacity-pod-fits-node", request_line(where, short),
                                               f" requests {asked}, but it can land only on pools whose one node offers less: {offer} "
                                               f"(flavors {combos}); Kueue would admit it and the pod would stay Pending",
                                               fit_hints.fits_node_hint(pools, seen, need, short, pod, where.constraints and f"{wfile}:{where.constraints}",
                                                                        combo, cq, flavors, _max_pods_hint(seen, need))
                                               + (f"; or lower RuntimeClass {overhead[0]}'s overhead.podFixed, or drop runtimeClassName" if overhead else ""))]))
                continue
            for p, r in unjudged[:1]:  # said once per pod set: the verdict on that resource is not given
                errors.append(Problem([finding("capacity-pod-fits-node", request_line(where, r),
                                               f" requests {r} {format_quantity(r, need[r])} and may land on {p.where()}, which keeps the kubelet's "
                                               f"storage on the VM's temp disk ({p.settings['kubelet_disk_type'][1].text} at "
                                               f"{p.settings['kubelet_disk_type'][1].where()}); the gate does not know {p.vm_size}'s temp disk size, "
                                               f"so whether the pod fits its node's {r} is not judged",
                                               f"add temp_disk_gib (the Azure size page's temporary storage, GiB) to {p.vm_size} under `skus:` of "
                                               ".ray-kueue-gate.yaml, to have it judged", severity="warning")]))
            combo = fitting[0][0]  # the flavors Kueue tries first: on admission their labels and tolerations join the pods'
            assign[role] = {"nodeSelector": {k: v for f in combo for k, v in f.labels.items()},
                            "tolerations": [t for f in combo for t in f.tolerations]}
            by_combo: dict[tuple, list[tuple[Pool, int]]] = {}
            for combo, p, ppn in fitting:
                by_combo.setdefault(tuple(f.name for f in combo), []).append((p, ppn))
            at_max = max(sum(p.count * n for p, n in v) for v in by_combo.values())
            at_min = max(sum(p.min_nodes * n for p, n in v) for v in by_combo.values())
            if count > at_max:
                file, line = wfile, where.replicas[0] if where.replicas else where.template
                var = where.replicas[1][2:-1] if where.replicas and where.replicas[1].startswith("${") and where.replicas[1].endswith("}") else None
                if var and i < len(var_lines) and var in var_lines[i]:
                    file, line = samples_rel, var_lines[i][var]
                detail = "; ".join(f"{p.where()}: {n} per node" for v in by_combo.values() for p, n in v)
                errors.append(Problem([finding("capacity-pod-set-nodes", line,
                                               f": {count} pods of {asked} each, but the pools it can land on take at most {at_max} at once "
                                               f"({detail}); Kueue would admit all of them and the rest would stay Pending",
                                               f"lower the replicas (the `vars` of the {gate_config.samples} entry) or add nodes to the pool "
                                               "(node_count, or max_count when it autoscales, in the cluster's tfvars)", file)]))
            elif count > at_min:
                scale.append(Problem([], frozenset(("scale", p.address) for v in by_combo.values() for p, _ in v if p.min_nodes < p.count),
                                     pod=f"{label} ({count} pod{'s' if count > 1 else ''}, {at_min} at min_count)"))
        if answer["mode"] != "NoFit" and (len(errors), sum(len(labels) for _, labels in shared.values())) == before:
            # admitted, and each pod set alone lands: now all together
            to_place.append((job, assign, roles, f"cluster {cluster.name}: ClusterQueue {cq['metadata']['name']}: sample {sample}", sample))
    errors += _scheduled(pools, rel, to_place, objects) + windows
    objs = {name_key(as_map(o.get("metadata")).get("name")): o for o in objects if o.get("kind") == "ResourceFlavor"}
    for (blame, message), (causes, labels) in shared.items():
        spec = as_map(objs[blame].get("spec"))
        # At the flavor's setting the message names: its nodeTaints when they are what the pods do not tolerate, else its nodeLabels.
        field = "spec.nodeTaints" if "untolerated taint" in message and spec.get("nodeTaints") else "spec.nodeLabels" if spec.get("nodeLabels") else None
        file, line = locate(objs[blame], field)
        hint = BLOCKED_HINT if message.startswith("Kueue's flavor assigner gives") else NO_POOL_HINT + (LINUX_HINT * ("runs Windows" in message))
        errors.append(Problem([Finding(file, line, f"ResourceFlavor/{blame}", "capacity-pod-placement",
                                       f"cluster {cluster.name}: {message}: sample pods {', '.join(labels)}", hint, ctx)],
                              frozenset(causes), pod=", ".join(labels)))
    return errors, scale


def _max_pods_hint(pools: list[Pool], need: dict) -> str:
    """The pools' max_pods when it is what keeps the pod off them: AKS reserves memory per pod slot (kube-reserved
    20 MiB x max_pods + 50 MiB), and at the default max_pods the pod's memory would fit."""
    default = sku_table()[1]["max_pods_assumed"]
    raised = [p for p in pools if p.sku and p.max_pods > default and "memory" in need
              and need["memory"] > p.node_allocatable()["memory"] and need["memory"] <= allocatable(p.sku, default)["memory"]]
    at = [p.settings["max_pods"][1] for p in raised if "max_pods" in p.settings]
    return "".join(f"; or lower {o.text} at {o.where()} (pool {raised[0].name}): AKS reserves 20 MiB of memory per pod slot, and at "
                   f"max_pods {default} the pod fits" for o in at[:1])


def _readable(reason: str, fl: Flavor | None) -> str:
    """A reason of Kueue's flavor assigner, with the flavor's nodeTaints as written when it names an untolerated taint
    (Kueue prints the Go struct)."""
    if fl and reason.startswith("untolerated taint") and fl.taints:
        return f"{reason} (its nodeTaints: {', '.join(taint_text(t) for t in fl.taints)})"
    return reason


def sample_jobs(root: Path, cluster: ClusterRender, gate_config: GateConfig) -> list[dict]:
    """The RayJobs of the cluster's samples file that render (the other sample rules report the rest)."""
    try:
        rel = gate_config.samples_file(cluster.name)
        entries = load_yaml(root / rel, root) if (root / rel).exists() else []
    except SourceError:
        return []
    jobs = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            jobs.append(workloads.render_entry(entry, root)[1])
        except workloads.WorkloadError:
            continue
    return jobs


def _submitted(root: Path, entries, objects: list[dict], flavors: dict) -> list[tuple[int, dict, str, dict, dict]]:
    """(index, entry, sample, RayJob, ClusterQueue) of each samples-file entry that renders and whose LocalQueue and
    ClusterQueue (with all its flavors) the cluster has: what the other sample rules report is left out."""
    lqs = {(name_key(as_map(o.get("metadata")).get("namespace")), name_key(o["metadata"]["name"])): o for o in objects if o.get("kind") == "LocalQueue"}
    cqs = {name_key(o["metadata"]["name"]): o for o in objects if o.get("kind") == "ClusterQueue"}
    out = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):  # sample-render reports a non-list
        try:
            sample, job = workloads.render_entry(entry, root)
        except workloads.WorkloadError:
            continue  # sample-render reports it
        meta = as_map(job.get("metadata"))
        ns = name_key(meta.get("namespace", "default"))
        # Without the label, Kueue's webhook gives it its namespace's LocalQueue "default" (LocalQueueDefaulting, as sample_rules)
        lq = lqs.get((ns, name_key(as_map(meta.get("labels")).get(QUEUE_LABEL, "default"))))
        cq = cqs.get(name_key(as_map(as_map(lq).get("spec")).get("clusterQueue")))
        if cq is None or any(not flavor(flavors, n).exists for _, names in groups_of(cq) for n in names):
            continue  # sample-queue / clusterqueue-flavor report it
        out.append((i, entry, sample, job, cq))
    return out


def _class_clash(template: dict | None, related: list[dict], own, combo) -> tuple[dict, str, str, Flavor] | None:
    """(RuntimeClass, key, its value, flavor) when the RuntimeClass the template names sets a nodeSelector key that a flavor
    Kueue assigns the pod set labels otherwise, and the template leaves the key unset (Kueue merges the flavor's nodeLabels
    into the template, podset.Merge, refusing only a conflict with the template's own; the RuntimeClass admission then
    refuses each pod whose nodeSelector contradicts its class's, setScheduling)."""
    rc = runtime_class(as_map(as_map(template).get("spec")), related)
    wanted = as_map(as_map(as_map(rc).get("scheduling")).get("nodeSelector"))
    for fl in combo:
        for key, value in fl.labels.items():
            if key in wanted and str(wanted[key]) != value and key not in own.node_selector:
                return rc, key, str(wanted[key]), fl
    return None


SCHEDULED_HINT = ("let the nodes hold the job's pods together: relax a required pod (anti-)affinity or topology spread "
                  "(preferred..., whenUnsatisfiable: ScheduleAnyway), lower the replicas or requests, or add nodes to the pool "
                  "(node_count, or max_count when it autoscales, in the cluster's tfvars)")


def _scheduled(pools: list[Pool], rel: str, to_place: list[tuple[dict, dict, dict, str, str]], objects: list[dict]) -> list[Problem]:
    """The samples whose pod sets each land somewhere, all their pods placed one after another by kube-scheduler's
    own plugins on the cluster's nodes (harness.gate.scheduling): pods it places nowhere, at their pod set's template."""
    out = []
    answers = scheduling.unplaced(pools, [job for job, *_ in to_place], [assign for _, assign, *_ in to_place], objects)
    for (job, assign, roles, head, sample), found in zip(to_place, answers):
        for s in found or []:
            where, set_name = roles.get(s["role"], (PodSetLines(), s["role"]))
            message = (f"{head}: kube-scheduler's own plugins place {s['pods']} of the {s['of']} pod(s) of {set_name} on no node "
                       f"of {rel}, with the job's other pods placed first: \"{s['message']}\"; Kueue would admit the job and those "
                       "pods would stay Pending") if s["role"] else f"{head}: {s['message']}"
            hint = SCHEDULED_HINT
            if s["role"] == "submitter" and "submitter" not in assign and "untolerated taint" in s["message"]:
                hint = ("the submitter requests nothing, so Kueue gives it no flavor and none of the flavors' tolerations: add the "
                        "toleration of the nodes' taint to spec.submitterPodTemplate's spec.tolerations (or give its container "
                        "requests, so that Kueue assigns it a flavor and adds that flavor's tolerations)")
            if s["message"].startswith("schedulerName "):  # a scheduler the cluster does not run: its pods are never bound
                message = f"{head}: {s['pods']} of the {s['of']} pod(s) of {set_name}: {s['message']}; Kueue would admit the job and hold its quota"
                hint = "remove schedulerName from the pod template (KubeRay sets it itself when its operator is given a batchScheduler)"
            out.append(Problem([Finding(f"{workloads.WORKLOADS_DIR}/{sample}.yaml", where.template, resource_id(job),
                                        "capacity-pods-scheduled", message, hint, head)], pod=f"{sample}/{set_name}"))
    return out
