"""Changes the cluster refuses as an update (`--base REF`, rule `update-refused`).

The gate validates every object as a create; kustomize-controller applies a change to an object the cluster already
holds as an update, and its dry-run of every object comes first (fluxcd/pkg/ssa `ApplyAllStaged`): an update the
apiserver or Kueue refuses (a LocalQueue's `spec.clusterQueue`, immutable by the CEL transition rule `self == oldSelf`
of Kueue's CRD; a PriorityClass's `value`; a Job's template, a Deployment's selector) fails it, nothing of the layer
is applied, and later changes to the layer wait too, until the object is deleted by hand or the Flux Kustomization
sets `spec.force: true`.

With `--base REF` (a git ref of the checked repository) the tree of that ref is taken from git (harness.core.export_tree,
into a temporary directory: the user's checkout and index are not touched), rendered the same way, and per cluster every
object both renders apply that differs is sent through the update path of the same code as the create checks:
tools/fluxbuild `update` (a custom resource: rest.BeforeUpdate of the CRD's REST strategy, with ratcheting and the CEL
rules' oldSelf, then Kueue's webhook's update validation) and tools/kubecheck `builtin-update` (a built-in kind: the
apiserver's REST strategy of the kind, over the object as its create stored it).

Flux's own switches are read as kustomize-controller sets them (`internal/controller/kustomization_controller.go`,
applyOpts) and fluxcd/pkg/ssa applies them (`manager_apply.go` ApplyAll, shouldSkipApply, shouldForceApply): an object
annotated or labelled `kustomize.toolkit.fluxcd.io/ssa: Ignore` or `kustomize.toolkit.fluxcd.io/reconcile: disabled`
(the new or the held one), or `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent` (the new one; the cluster holds it), is
not applied, so not updated; a refusal `IsImmutableError` counts (`errors/immutable.go`: every Invalid of the apiserver,
a webhook's message saying "is immutable" / "immutable field") under the layer's `spec.force: true` or
`kustomize.toolkit.fluxcd.io/force: enabled` on the new or the held object is applied by deleting the held object and
creating the new one: no refusal, a warning (`update-recreates`); the new object is judged by the create checks.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from harness.core import HarnessError, TreeError, export_tree
from harness.gate.findings import Finding
from harness.gate.helper import helper
from harness.gate.render import ClusterRender, FluxBuild, object_key, render_repository
from harness.gate.schema_check import CEL_SKIPPED, CheckError, is_builtin
from harness.gate.origin import dotted, segments, value_at
from harness.gate.sources import as_map, resource_id

# An apiserver message quoting a whole object or list as the invalid value (a Job's template, with the uid its create
# made): the value is left out, the finding's line names where it changed.
_WHOLE_VALUE = re.compile(r"Invalid value: [\[{].*[\]}]: ")

RULES = {
    "update-refused": "with --base REF, every object a cluster holds from that ref and still applies changes in a way the apiserver "
                      "and Kueue accept as an update (immutable fields: a LocalQueue's clusterQueue, a PriorityClass's value, the "
                      "CRDs' transition rules, a Job's template, a selector); else kustomize-controller's dry-run fails and nothing "
                      "of the layer is applied",
    "update-recreates": "with --base REF, a change the cluster refuses as an update that Flux's force (the layer's spec.force: true, "
                        "or kustomize.toolkit.fluxcd.io/force: enabled on the object) applies by deleting the held object and "
                        "creating it anew (warning)",
}

# kustomize-controller's ApplyOptions selectors (values compared case-insensitively, labels and annotations alike: ssa
# utils.AnyInMetadata).
_FLUX = "kustomize.toolkit.fluxcd.io"
_EXCLUDED = {f"{_FLUX}/reconcile": "disabled", f"{_FLUX}/ssa": "ignore"}
_IF_NOT_PRESENT = {f"{_FLUX}/ssa": "ifnotpresent"}
_FORCED = {f"{_FLUX}/force": "enabled"}
_IMMUTABLE = re.compile(r"is\simmutable|immutable\sfield")


class BaseError(HarnessError, RuntimeError):
    """The base ref cannot be read: the gate cannot run as asked (exit 2)."""


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)


def check_ref(root: Path, ref: str) -> None:
    """Raises BaseError unless `ref` names a commit of the git repository `root` is in."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise BaseError(f"--base {ref}: no such git ref in {root.resolve()} ({missing_ref_hint(root, ref)})")


def missing_ref_hint(root: Path, ref: str) -> str:
    """How to get the commit `ref` into the clone `root` is in: in a shallow one (git's --is-shallow-repository; the
    actions/checkout default fetches one commit), deepen the history; else fetch the branch."""
    branch = ref.removeprefix("origin/")
    fetch = f"`git fetch origin {branch}`" if re.fullmatch(r"[\w.-]+(/[\w.-]+)*", branch) and not branch.startswith("HEAD") else ""
    if _git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == b"true":
        return (f"the clone is shallow, so the commits before its tip are missing: fetch the history first, with "
                f"`fetch-depth: 0` in actions/checkout, or `git fetch --deepen=N` / `git fetch --unshallow`{f', or {fetch}' if fetch else ''}")
    return f"a branch, tag or commit; in CI fetch it first{f', e.g. {fetch}' if fetch else ''}"


def render_base(root: Path, ref: str, gate_config, prefix: str = "") -> list[ClusterRender]:
    """The clusters of `root`'s tree at `ref`, rendered as the gate renders the working tree (`gate_config`'s layout;
    `prefix`: `root`'s directory in its Git work tree, render.FluxBuild.prefix, which its Flux paths start from)."""
    check_ref(root, ref)
    scratch = Path(tempfile.mkdtemp(prefix="gate-base-"))
    try:
        try:
            export_tree(root, ref, scratch)  # `root`'s own directory of that tree, paths relative to it
        except TreeError as err:
            raise BaseError(f"--base {ref}: {err}") from None
        with FluxBuild(scratch, prefix) as session:
            return render_repository(scratch, session=session, gate_config=gate_config)[1]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def update_findings(ctx, checker, clusters: list[ClusterRender], base: list[ClusterRender], ref: str,
                    refused: frozenset[str] | set[str]) -> list[Finding]:
    """Per cluster of both renders, the objects whose change the cluster refuses as an update, at the line of the value
    the refusal names. `refused`: resources whose create the checks refuse (reported as such, not again here)."""
    held = {c.name: {object_key(o): o for _, o in c.applied()} for c in base}
    pairs = []  # (cluster, build, object now, object held)
    for c in clusters:
        for b, obj in c.applied():
            old = held.get(c.name, {}).get(object_key(obj))
            if old is not None and old != obj and resource_id(obj) not in refused and not _skipped(obj, old):
                pairs.append((c, b, obj, old))
    if not pairs:
        return []
    builtin = [p for p in pairs if is_builtin(p[2])]
    custom = [p for p in pairs if not is_builtin(p[2])]
    answers = []
    if custom:
        answers.append((custom, helper().submit("update", CheckError, objects=[p[2] for p in custom], olds=[p[3] for p in custom],
                                                **checker.schema_request())))
    if builtin:
        answers.append((builtin, helper("kubecheck").submit("builtin-update", CheckError, objects=[p[2] for p in builtin],
                                                            olds=[p[3] for p in builtin])))
    out = []
    for members, answer in answers:
        for (c, b, obj, old), result in zip(members, answer.result()):
            errors = [e for e in result.get("errors") or [] if CEL_SKIPPED not in e.get("detail", "")]
            for err in errors[:1] if errors else []:  # one cause per object: the first refusal, the others in its message
                out.append(_finding(ctx, c, b, obj, old, ref, err, errors[1:], _forced(b, obj, old, result, errors)))
    return out


def _in_metadata(obj: dict, selector: dict) -> bool:
    """fluxcd/pkg/ssa utils.AnyInMetadata: a label or annotation of `obj` equal (case-insensitively) to the selector's."""
    meta = as_map(obj.get("metadata"))
    written = [as_map(meta.get("labels")), as_map(meta.get("annotations"))]
    return any(str(m.get(k) or "").lower() == v for m in written for k, v in selector.items())


def _skipped(obj: dict, old: dict) -> bool:
    """ssa shouldSkipApply: excluded (the new or the held object), or IfNotPresent on the new one (the cluster holds it)."""
    return _in_metadata(obj, _EXCLUDED) or _in_metadata(old, _EXCLUDED) or _in_metadata(obj, _IF_NOT_PRESENT)


def _forced(build, obj: dict, old: dict, result: dict, errors: list[dict]) -> str | None:
    """ssa shouldForceApply: what forces the recreation of `obj` (None when nothing does, or the refusal is not one
    IsImmutableError counts: a webhook's denial is Forbidden, counted only by its message)."""
    if result.get("stage") == "webhook" and not any(_IMMUTABLE.search(str(e.get("message"))) for e in errors):
        return None
    spec = as_map(as_map(build.flux_kustomization).get("spec"))
    if spec.get("force") is True:
        return f"spec.force: true on {_layer(build)}"
    if _in_metadata(obj, _FORCED) or _in_metadata(old, _FORCED):
        return f"{_FLUX}/force: enabled on the object{'' if _in_metadata(obj, _FORCED) else ' the cluster holds'}"
    return None


def _layer(build) -> str:
    flux = as_map(as_map(build.flux_kustomization).get("metadata"))
    return f"Kustomization {flux.get('namespace', 'flux-system')}/{flux.get('name')}" if flux.get("name") else "the Flux Kustomization that applies it"


def _finding(ctx, cluster: ClusterRender, build, obj: dict, old: dict, ref: str, err: dict, more: list[dict],
             forced: str | None) -> Finding:
    field = str(err.get("field") or "") or None
    if field and field.startswith("spec.clusterIPs") and "clusterIPs" not in as_map(obj.get("spec")):
        field = "spec.clusterIP"  # the Service storage fills clusterIPs from the clusterIP written (tools/kubecheck service.go)
    changed = _changed(value_at(old, segments(field)), value_at(obj, segments(field)), segments(field)) if field else None
    was = value_at(old, changed) if changed else None
    held = f" (the cluster holds {dotted(changed)}: {json.dumps(was)}, from {ref})" if isinstance(was, (str, int, float, bool)) \
        else f" (changed from {ref}, as the cluster holds it)"
    said = "; ".join(_WHOLE_VALUE.sub("", str(e.get("message"))) for e in [err, *more])
    where = dotted(changed) if changed else field
    if forced:
        message = (f"{said}{held}: {forced} makes kustomize-controller delete the object the cluster holds and create this "
                   f"one (fluxcd/pkg/ssa ApplyAll; the deletion's background propagation garbage-collects what it owns)")
        hint = "nothing to fix if recreating it is meant; else keep the field as the cluster holds it"
        return replace(ctx.finding(obj, build, "update-recreates", message, hint, field=where), severity="warning")
    hint = (f"keep this object as it is and add the changed one under a new name; or rename the object, so that Flux creates "
            f"it anew (with prune: true it deletes the old one); or annotate it {_FLUX}/force: enabled, or set spec.force: "
            f"true on {_layer(build)}, for this change (kustomize-controller then deletes and recreates the object)")
    message = f"{said}{held}: kustomize-controller's dry-run of the update fails and nothing of the layer is applied"
    return ctx.finding(obj, build, "update-refused", message, hint, field=where)


def _changed(was, now, path: list) -> list | None:
    """The path of the first value written differently below `path` (`was` and `now` are the values there), the
    deepest one that still exists in the new object; None when they are equal."""
    if was == now:
        return None
    if isinstance(was, dict) and isinstance(now, dict):
        for key in [*now, *(k for k in was if k not in now)]:
            if was.get(key) != now.get(key):
                return _changed(was.get(key), now.get(key), [*path, key]) if key in now else path
    if isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        for i, (a, b) in enumerate(zip(was, now)):
            if a != b:
                return _changed(a, b, [*path, i])
    return path
