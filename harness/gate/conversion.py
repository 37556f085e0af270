"""Kueue objects written in the older version Kueue still serves (kueue.x-k8s.io/v1beta1), seen as
Kueue stores them.

The apiserver converts such an object to v1beta2 with Kueue's conversion code before Kueue's webhook,
its controllers and its scheduler see it (`cohort` becomes `cohortName`, `admissionChecks` becomes
`admissionChecksStrategy`, a Cohort's `parent` becomes `parentName`). The gate does the same in its Go
helper (tools/fluxbuild convert.go, Kueue's own conversion functions), so the rules judge what Kueue
would judge: a v1beta1 ClusterQueue in a cohort is in that cohort. The objects' schema checks run on
what was written, before this.
"""
from __future__ import annotations

from dataclasses import replace

from harness.gate.findings import Finding
from harness.gate.helper import helper
from harness.gate.render import Build, ClusterRender, RenderError
from harness.gate.rules import KUEUE_API, Context

OLD_KUEUE_API = "kueue.x-k8s.io/v1beta1"
KUEUE_KINDS = {"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass", "Cohort", "AdmissionCheck", "Topology"}

RULES = {
    "kueue-api-version": f"(warning) Kueue objects use {KUEUE_API}, not the older served v1beta1, deprecated (the other rules judge "
                         "them as converted)",
}


def _applied(builds: list[Build], clusters: list[ClusterRender]) -> list[Build]:
    """Every build whose objects the rules read, once (a cluster's entry point is a plain build unless
    `flux bootstrap` wrote it)."""
    return [*builds, *(c.entry for c in clusters if c.bootstrap), *(fb for c in clusters for fb in c.flux)]


def convert_stored(ctx: Context, builds: list[Build], clusters: list[ClusterRender]) -> list[Finding]:
    """Each v1beta1 Kueue object of the rendered builds reported once, then replaced in place by its
    v1beta2 conversion. An object Kueue cannot convert stays as written: its schema check reports why."""
    old: dict[int, tuple[Build, dict]] = {}
    for b in _applied(builds, clusters):
        for o in b.objects:
            if isinstance(o, dict) and o.get("apiVersion") == OLD_KUEUE_API and o.get("kind") in KUEUE_KINDS:
                old.setdefault(id(o), (b, o))
    if not old:
        return []
    # A warning: Kueue 0.17 (and 0.18, 0.19) still serve v1beta1, deprecated, and convert it; the cluster accepts it.
    found = [replace(ctx.finding(o, b, "kueue-api-version",
                                 f"uses {OLD_KUEUE_API}, deprecated: Kueue 0.17 still serves it, stores {KUEUE_API} and converts it "
                                 "(the gate checks it as converted)",
                                 f"change apiVersion to {KUEUE_API} and rename the fields that moved (cohort -> cohortName, "
                                 "admissionChecks -> admissionChecksStrategy.admissionChecks, a Cohort's parent -> parentName; "
                                 "flavorFungibility whenCanBorrow Borrow -> MayStopSearch, whenCanPreempt Preempt -> MayStopSearch)"),
                     severity="warning")
             for b, o in old.values()]
    objects = [o for _, o in old.values()]
    for obj, answer in zip(objects, helper().call("convert", RenderError, objects=objects)):
        if answer.get("object"):
            obj.clear()
            obj.update(answer["object"])
    return found
