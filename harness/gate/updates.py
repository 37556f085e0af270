"""Changes the cluster refuses as an update (`--base REF`, rule `update-refused`).

The gate validates every object as a create; kustomize-controller applies a change to an object the cluster already
holds as an update, and its dry-run of every object comes first (fluxcd/pkg/ssa `ApplyAllStaged`): an update the
apiserver or Kueue refuses (a LocalQueue's `spec.clusterQueue`, immutable by the CEL transition rule `self == oldSelf`
of Kueue's CRD; a PriorityClass's `value`; a Job's template, a Deployment's selector) fails it, nothing of the layer
is applied, and later changes to the layer wait too, until the object is deleted by hand or the Flux Kustomization
sets `spec.force: true`.

With `--base REF` (a git ref of the checked repository) the tree of that ref is taken from git (`git archive`, into a
temporary directory: the user's checkout and index are not touched), rendered the same way, and per cluster every
object both renders apply that differs is sent through the update path of the same code as the create checks:
tools/fluxbuild `update` (a custom resource: rest.BeforeUpdate of the CRD's REST strategy, with ratcheting and the CEL
rules' oldSelf, then Kueue's webhook's update validation) and tools/kubecheck `builtin-update` (a built-in kind: the
apiserver's REST strategy of the kind, over the object as its create stored it).
"""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from harness.core import HarnessError
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
}


class BaseError(HarnessError, RuntimeError):
    """The base ref cannot be read: the gate cannot run as asked (exit 2)."""


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)


def check_ref(root: Path, ref: str) -> None:
    """Raises BaseError unless `ref` names a commit of the git repository `root` is in."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise BaseError(f"--base {ref}: no such git ref in {root.resolve()}")


def render_base(root: Path, ref: str, gate_config) -> list[ClusterRender]:
    """The clusters of `root`'s tree at `ref`, rendered as the gate renders the working tree (`gate_config`'s layout)."""
    check_ref(root, ref)
    prefix = _git(root, "rev-parse", "--show-prefix").stdout.decode().strip()  # `root` below the work tree's top
    archive = _git(root, "archive", "--format=tar", ref, *([prefix] if prefix else []))
    if archive.returncode != 0:
        raise BaseError(f"--base {ref}: git archive failed: {archive.stderr.decode(errors='replace').strip()}")
    scratch = Path(tempfile.mkdtemp(prefix="gate-base-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(scratch, filter="tar")
        tree = scratch / prefix
        with FluxBuild(tree) as session:
            return render_repository(tree, session=session, gate_config=gate_config)[1]
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
            if old is not None and old != obj and resource_id(obj) not in refused:
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
                out.append(_finding(ctx, c, b, obj, old, ref, err, errors[1:]))
    return out


def _finding(ctx, cluster: ClusterRender, build, obj: dict, old: dict, ref: str, err: dict, more: list[dict]) -> Finding:
    field = str(err.get("field") or "") or None
    changed = _changed(value_at(old, segments(field)), value_at(obj, segments(field)), segments(field)) if field else None
    was = value_at(old, changed) if changed else None
    held = f" (the cluster holds {dotted(changed)}: {json.dumps(was)}, from {ref})" if isinstance(was, (str, int, float, bool)) \
        else f" (changed from {ref}, as the cluster holds it)"
    said = "; ".join(_WHOLE_VALUE.sub("", str(e.get("message"))) for e in [err, *more])
    flux = as_map(as_map(build.flux_kustomization).get("metadata"))
    layer = f"Kustomization {flux.get('namespace', 'flux-system')}/{flux.get('name')}" if flux.get("name") else "the Flux Kustomization that applies it"
    hint = (f"keep this object as it is and add the changed one under a new name; or rename the object, so that Flux creates "
            f"it anew (with prune: true it deletes the old one); or set spec.force: true on {layer} for this change "
            f"(kustomize-controller then deletes and recreates the object)")
    message = f"{said}{held}: kustomize-controller's dry-run of the update fails and nothing of the layer is applied"
    return ctx.finding(obj, build, "update-refused", message, hint, field=dotted(changed) if changed else field)


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
