"""Follow-on findings folded under their root cause, once every area of the gate has reported.

An object the apiserver or Kueue's webhook rejects never exists, and a Workload Kueue's scheduler finds
inadmissible never gets quota: what would follow from their values (a quota measured against capacity, a
sample measured against a queue, where their pods land) is not reported beside the refusal. The same for a
sample Kueue never admits on a cluster (sample-fits: its placement there), pods the apiserver refuses (their
placement), a Flux Kustomization the apiserver refuses (kustomize-controller never builds it) and a sample the
apiserver or Kueue's webhook refuses on a cluster (its queue, quota and settings there: it is never created).
"""
from __future__ import annotations

from harness.gate.findings import Finding
from harness.gate.flux_tenancy import BOOTSTRAPPED

PLACEMENT = ("capacity-pod-", "capacity-pods-")
ENTRY_RULES = ("sample-vars", "sample-duplicate", "sample-render")


def _on(f: Finding) -> tuple[str, str]:
    """(resource, "cluster NAME") of a finding whose context starts with its cluster."""
    return f.resource, f.context.split(",")[0].split(":")[0]


def fold(per_area: dict[str, list[Finding]], presuming: list[tuple[Finding, tuple[str, ...]]]) -> None:
    """Folds, in place, the follow-ons in `per_area` (area -> findings): a finding whose `presumes` names a rejected
    object, and of `presuming` (finding, the flavors its reasons name when they are all where pods may land) the ones a
    capacity-pod-placement finding names (the same sample, or one of those flavors), the rest added to the rules."""
    schema = per_area["schema"]
    rejected = {f.resource for f in schema if f.rule in ("schema", "api-validation", "kueue-webhook", "kueue-inadmissible")}
    # A ${VAR} set nowhere fails the Flux Kustomization's build (strict substitution): nothing of it reaches the apiserver, so a
    # refusal of the value the gate substituted for it ("") at the same line is no finding of its own (what presumes the
    # object still folds under it, above).
    unset_at = {(f.file, f.line) for f in per_area["rules"] if f.rule == "flux-variable-undefined"}
    per_area["schema"] = schema = [f for f in schema if not (f.rule in ("schema", "api-validation", "kueue-webhook") and (f.file, f.line) in unset_at)]
    # Kueue placing a sample on no flavor (taints, affinity) is reported where the pods or flavors say so, at their line.
    # (At the pod, or at the flavor for every pod that fails alike: a sample-fits whose reasons are that flavor's folds.)
    placed = {_on(f) for f in per_area["capacity"] if f.rule == "capacity-pod-placement"}
    per_area["rules"] += [f for f, flavors in presuming
                          if not set(f.presumes) & rejected
                          and not (flavors and (_on(f) in placed or any((f"ResourceFlavor/{fl}", _on(f)[1]) in placed for fl in flavors)))]
    # `flux bootstrap`'s files on an extension cluster (flux_tenancy.bootstrap_collisions): what else is found in them follows.
    bootstrapped = {(f.file, _on(f)[1]) for f in per_area["rules"] if f.rule == "object-collision" and f.message.startswith(BOOTSTRAPPED)}
    per_area["rules"] = [f for f in per_area["rules"] if f.message.startswith(BOOTSTRAPPED) or not any(
        f.file and f.file.startswith(file.rsplit("/", 1)[0] + "/") and c in f.context for file, c in bootstrapped)]
    never = {_on(f) for f in per_area["rules"] if f.rule == "sample-fits"}
    # Pods the apiserver refuses, or of a RayJob KubeRay refuses (it creates none): where they would land is moot.
    refused_pods = {f.resource for f in schema if f.rule in ("pod-validation", "kuberay-validation")} | rejected
    per_area["capacity"] = [f for f in per_area["capacity"]
                            if not (f.rule == "capacity-quota" and f.resource in rejected)
                            and not (f.rule.startswith(PLACEMENT) and (_on(f) in never or f.resource in refused_pods))]
    # A sample's findings on a cluster where it is refused, but for its entry's own mistakes (sample-vars, -duplicate, -render).
    never_created = {_on(f) for f in schema if f.rule in ("api-validation", "kueue-webhook")}
    per_area["rules"] = [f for f in per_area["rules"]
                         if not (f.rule.startswith("sample-") and f.rule not in ENTRY_RULES and _on(f) in never_created)]
    # What a finding presumes the cluster accepted, refused: the refusal is the cause. Or absent, where another finding says
    # why (the deleted workload ServiceAccount, which every workload names): that one is.
    absent = {r for found in per_area.values() for f in found for r in f.absent}
    for area, found in per_area.items():
        if area != "schema":
            per_area[area] = [f for f in found if not set(f.presumes) & (rejected | absent) or f.absent]
    refused_at = {(f.resource, f.file) for f in schema if f.rule == "api-validation"}
    per_area["rules"] = [f for f in per_area["rules"] if not (f.rule == "kustomize-build" and (f.resource, f.file) in refused_at)]
    # The apiserver's own size refusal of a ConfigMap's or Secret's data: data-size says it with its fix.
    sized = {f.resource for f in per_area["rules"] if f.rule == "data-size"}
    per_area["schema"] = [f for f in per_area["schema"] if not (f.rule == "api-validation" and f.resource in sized and "1048576" in f.message)]
