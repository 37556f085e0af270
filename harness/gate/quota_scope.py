"""A ResourceQuota that allows none (hard 0) of a resource the jobs' pods or objects use keeps out every job in its scope,
whatever its size: the cause is the quota's value, not the jobs. tools/kubecheck (the apiserver's quota evaluators, with
their scope matching: k8s.io/kubernetes pkg/quota/v1/evaluator/core podMatchesScopeFunc) says so by listing those
resources (`zero`); here the refusals of all the samples it keeps out, on every cluster, become one finding at the
quota's hard limit, naming the samples, with a hint that can fix it: raise the limit, or narrow the quota's scope, or
change the pods so that its scope no longer matches them."""
from __future__ import annotations

from dataclasses import replace

from harness.gate.findings import Finding
from harness.gate.sources import as_list, as_map, as_maps, resource_id

# What takes a pod out of a quota scope (podMatchesScopeFunc), by scope name.
_LEAVE = {"NotTerminating": "set activeDeadlineSeconds in the pod templates",
          "Terminating": "drop activeDeadlineSeconds from the pod templates",
          "BestEffort": "give every container requests or limits",
          "CrossNamespacePodAffinity": "drop the pods' cross-namespace affinity terms (namespaces, namespaceSelector)"}


def _priority_exit(expr: dict) -> str:
    values = ", ".join(str(v) for v in as_list(expr.get("values")))
    return {"DoesNotExist": "give the pod templates a priorityClassName",
            "Exists": "drop priorityClassName from the pod templates",
            "In": f"give the pod templates a priorityClassName other than {values}",
            "NotIn": f"give the pod templates priorityClassName {values}"}.get(str(expr.get("operator")), "")


def _scope(quota: dict) -> tuple[str, list[str]]:
    """(the quota's scope as written, what takes a pod out of it)."""
    spec = as_map(quota.get("spec"))
    scopes = [str(s) for s in as_list(spec.get("scopes"))]
    exprs = as_maps(as_map(spec.get("scopeSelector")).get("matchExpressions"))
    text = [f"scopes [{', '.join(scopes)}]"] if scopes else []
    text += [f"scopeSelector {e.get('scopeName')} {e.get('operator')}" + (f" [{', '.join(map(str, as_list(e.get('values'))))}]"
                                                                          if e.get("values") else "") for e in exprs]
    leave = [_LEAVE[s] for s in scopes if s in _LEAVE]
    leave += [x for e in exprs for x in [_priority_exit(e) if e.get("scopeName") == "PriorityClass" else _LEAVE.get(str(e.get("scopeName")), "")] if x]
    return "; ".join(text), leave


def at_quota(ctx, quota: dict, err: dict, found: Finding) -> Finding:
    """The refusal `found` (at a sample) of a quota that allows none of err["zero"]: at that hard limit of the quota."""
    zero = [str(r) for r in err["zero"]]
    scope, leave = _scope(quota)
    where = f"in its scope ({scope})" if scope else "in the namespace"
    hint = (f"raise spec.hard {', '.join(zero)} of {resource_id(quota)} above 0 (or drop {'them' if len(zero) > 1 else 'it'} from its "
            f"hard limits): at 0 it forbids {'every pod' if zero == ['pods'] else 'what it counts'} {where}, whatever the job's size")
    if scope:
        hint += "; or narrow its scope to the pods it is meant for" + (f", or {' and '.join(dict.fromkeys(leave))}, so that the "
                                                                      "jobs' pods fall outside it" if leave else "")
    if "submitter Job" in err["message"]:
        hint += "; or use submissionMode HTTPMode or SidecarMode, which create no submitter Job"
    message = (f"{err['message']} {where}, and what KubeRay creates for each of these jobs falls in it: the apiserver forbids that, "
               "so Kueue (which does not look at ResourceQuotas) admits the job and it holds its quota without running")
    return ctx.finding(quota, None, found.rule, message, hint, field=f"spec.hard[{zero[0]}]", context=found.context)


def fold(zeroed: list[tuple[Finding, str]]) -> list[Finding]:
    """One finding per quota hard limit (a Finding from at_quota, the sample it keeps out), naming the samples."""
    groups: dict[tuple, list[tuple[Finding, str]]] = {}
    for found, sample in zeroed:
        groups.setdefault((found.file, found.line, found.message, found.hint), []).append((found, sample))
    out = []
    for same in groups.values():
        samples = ", ".join(dict.fromkeys(s for _, s in same))
        contexts = "; ".join(dict.fromkeys(f.context for f, _ in same if f.context))
        out.append(replace(same[0][0], message=f"{same[0][0].message}: samples {samples}", context=contexts))
    return out
