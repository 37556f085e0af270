"""The sample RayJobs in workloads/: rendering them with their ${VAR} values.

The samples use the ${VAR} form the Azure example's envsubst templates use; Python's
string.Template is that same syntax, and `substitute` refuses to leave a variable unset.
"""
from __future__ import annotations

import difflib
import re
import string
from decimal import Decimal
from pathlib import Path

import yaml

from harness.core import HarnessError, parse_quantity, releases, versions
from harness.gate import matching
from harness.gate.pod_refs import pod_spec_refs, pod_templates
from harness.gate.sources import SourceError, load_yaml, parse_yaml, ray_cluster_spec, read_source

from harness.core import REPO_ROOT

WORKLOADS_DIR = "workloads"
# KubeRay's default submitter container resources (ray-operator/controllers/ray/common/job.go).
SUBMITTER_DEFAULT_REQUESTS = {"cpu": parse_quantity("500m"), "memory": parse_quantity("200Mi")}


class WorkloadError(HarnessError, ValueError):
    pass


class MissingVariable(WorkloadError):
    """A ${VAR} of a workload file that neither workloads/defaults.yaml, an entry's vars nor --set gives a value."""

    def __init__(self, message: str, name: str, file: str):
        super().__init__(message)
        self.name, self.file = name, file


class FileError(WorkloadError):
    """A mistake written in a file of workloads/ (a sample's file, or defaults.yaml) that no entry renders past, whatever
    its values: one finding at `file`:`line` (with `hint`), whichever entries and clusters use the file. `finding` is set
    when the file cannot be read or parsed at all (sources.SourceError: the gate reports that finding for every file)."""

    def __init__(self, message: str, file: str, line: int | None, hint: str, finding=None):
        super().__init__(message)
        self.file, self.line, self.hint, self.finding = file, line, hint, finding

    @classmethod
    def unreadable(cls, err: SourceError) -> "FileError":
        return cls(str(err), err.finding.file, err.finding.line, err.finding.hint, err.finding)


class TemplateSyntax(FileError):
    """A `$` of a workload file that string.Template (envsubst's ${VAR} form) cannot read, such as a shell default
    `${QUEUE_NAME:=team-a}`: written in the workload file, at `line`."""

    def __init__(self, file: str, text: str, at: int):
        line_start, line_end = text.rfind("\n", 0, at) + 1, (text.find("\n", at) + 1 or len(text) + 1) - 1
        close = text.find("}", at, line_end)
        written = text[at:close + 1] if close >= 0 else text[at:line_end].strip()
        named = re.match(string.Template.idpattern, text[at + 2:], re.IGNORECASE | re.ASCII) if written.startswith("${") else None
        name = named.group(0) if named else None
        given = {"QUEUE_NAME": "the samples.yaml entry's `queue` gives it", "JOB_NAME": "the entry's `sample` name gives it"}
        super().__init__(f"{file}: {written} is not a ${{VAR}} the samples' substitution reads (envsubst's form: no defaults, "
                         "no shell expansions), so no sample of this file renders", file, text.count("\n", 0, line_start) + 1,
                         (f"write ${{{name}}}: " + (given.get(name) or f"put its default in {WORKLOADS_DIR}/defaults.yaml (`{name}: ...`); "
                                                                      "an entry's `vars` sets it per sample")
                          if name else "write $$ for a literal $, or ${VAR} for a value the samples set"))


def sample_names(root: Path = REPO_ROOT) -> list[str]:
    return sorted(p.stem for p in (root / WORKLOADS_DIR).glob("*.yaml") if p.name != "defaults.yaml")


def defaults(root: Path = REPO_ROOT) -> dict[str, str]:
    path, rel = root / WORKLOADS_DIR / "defaults.yaml", f"{WORKLOADS_DIR}/defaults.yaml"
    if not path.exists():
        return {}
    try:
        doc = load_yaml(path, root) or {}
    except SourceError as err:
        raise FileError.unreadable(err) from None
    if not isinstance(doc, dict):
        raise FileError(f"{rel} is a {type(doc).__name__}, not a mapping of VAR: value, so no sample renders", rel, 1,
                        f"write {rel} as one mapping of the samples' ${{VAR}} defaults, a line `NAME: value` each")
    return {str(k): str(v) for k, v in doc.items()}


ENTRY_KEYS = ("sample", "queue", "vars")  # what scripts/submit-workload reads of a samples.yaml entry


class UnknownKey(WorkloadError):
    """A key of a samples.yaml entry other than sample, queue and vars (a misspelt `vars` would leave every default in place)."""

    def __init__(self, key: str):
        near = [] if key.lower() == "namespace" else difflib.get_close_matches(key.lower(), ENTRY_KEYS, n=1, cutoff=0.5)
        super().__init__(f"the entry has a key `{key}`, which is ignored (an entry has only "
                         f"{', '.join(ENTRY_KEYS)}): the sample would be checked without it" + (f"; did you mean `{near[0]}`?" if near else ""))
        self.key = key
        self.hint = (f"spell it `{near[0]}`" if near else "remove it") + (
            "; the namespace is the workload's metadata.namespace: write `namespace: ${NAMESPACE}` there, with a default in "
            f"{WORKLOADS_DIR}/defaults.yaml, and set it with `vars: {{NAMESPACE: ...}}`" if key.lower() == "namespace" else "")


def render_entry(entry, root: Path = REPO_ROOT) -> tuple[str, dict]:
    """(sample, RayJob) for one entry of clusters/<name>/samples.yaml; WorkloadError when the entry is malformed
    (UnknownKey for a key it does not read)."""
    if not isinstance(entry, dict):
        raise WorkloadError(f"entry {entry!r} is not a mapping with `sample` and `queue`")
    for key in entry:
        if key not in ENTRY_KEYS:
            raise UnknownKey(str(key))
    sample, queue, values = entry.get("sample"), entry.get("queue"), entry.get("vars") or {}
    for key, value in (("sample", sample), ("queue", queue)):
        if not isinstance(value, str) or not value:
            raise WorkloadError(f"`{key}` is {value!r}, not a name")
    if not isinstance(values, dict):
        raise WorkloadError(f"`vars` is {values!r}, not a mapping of VAR: value")
    return sample, render(sample, queue, {str(k): str(v) for k, v in values.items()}, root)


def render(sample: str, queue: str, values: dict[str, str] | None = None, root: Path = REPO_ROOT) -> dict:
    """The RayJob object for `sample` submitted to LocalQueue `queue`."""
    path = root / WORKLOADS_DIR / f"{sample}.yaml"
    if not _plain_name(sample) or not path.is_file():
        raise WorkloadError(f"no sample named {sample!r} (have: {', '.join(sample_names(root))})")
    mapping = {**defaults(root), "JOB_NAME": sample, "QUEUE_NAME": queue, **(values or {})}
    try:
        source = read_source(path, root)
        text = string.Template(source).substitute(mapping)
    except SourceError as err:
        raise FileError.unreadable(err) from None
    except KeyError as err:
        raise MissingVariable(f"{path.relative_to(root)}: variable ${{{err.args[0]}}} has no value; pass it with --set {err.args[0]}=...",
                              str(err.args[0]), str(path.relative_to(root))) from None
    except ValueError as err:  # string.Template's own pattern finds the `$` it cannot read
        bad = next((m for m in string.Template.pattern.finditer(source) if m.group("invalid") is not None), None)
        if bad is None:
            raise WorkloadError(f"{path.relative_to(root)}: {err}") from None
        raise TemplateSyntax(path.relative_to(root).as_posix(), source, bad.start()) from None
    try:
        job = parse_yaml(text)
    except yaml.YAMLError as err:
        raise WorkloadError(f"{path.relative_to(root)} with its values is not valid YAML: {getattr(err, 'problem', None) or err}") from None
    if not isinstance(job, dict) or not isinstance(job.get("metadata"), dict):
        rel = path.relative_to(root).as_posix()
        raise FileError(f"{rel} does not render to one object with metadata" + (f" (it is a {type(job).__name__})" if not isinstance(job, dict) else ""),
                        rel, 1, f"write {rel} as one RayJob document (apiVersion, kind, metadata, spec), as the other samples are")
    return job


def used_vars(sample: str, root: Path = REPO_ROOT) -> list[str]:
    """The ${VAR} names of `sample`'s file (it renders: render_entry said so)."""
    return string.Template(read_source(root / WORKLOADS_DIR / f"{sample}.yaml", root)).get_identifiers()


def unused_vars(sample: str, values: dict, root: Path = REPO_ROOT) -> dict[str, list[str]]:
    """The names in `values` that `sample` has no ${VAR} for, each with the sample's variables closest
    to it (a misspelling leaves the default in place); the sample renders (render_entry said so)."""
    used = used_vars(sample, root)
    return {str(k): difflib.get_close_matches(str(k), used, n=1) or sorted(used) for k in values if str(k) not in used}


def var_at(root: Path, finding, var_lines: dict[str, tuple[str, int | None, str]]) -> tuple[str, str, int | None, str] | None:
    """(VAR, file, line, entry key) when the line of a sample's template `finding` points at takes its value from
    a ${VAR} the samples.yaml entry sets (`var_lines`: VAR -> (file, line, the entry's key that sets it)); else None."""
    if not finding.line or not var_lines:
        return None
    try:
        text = read_source(root / finding.file, root).splitlines()[finding.line - 1]
    except (SourceError, IndexError):
        return None
    return next(((name, *var_lines[name]) for name in string.Template(text).get_identifiers() if name in var_lines), None)


def _plain_name(name: str) -> bool:
    return bool(name) and not name.startswith(".") and all(c.isalnum() or c in "-_." for c in name)


def pod_sets(rayjob: dict, kueue_version: str | None = None, limit_ranges: list[dict] = ()) -> list[tuple[str, int, dict[str, Decimal]]]:
    """(name, count, per-pod requests) for each group of pods Kueue will charge to the queue for a RayJob (or a RayCluster,
    RayService: head and workers, no submitter), as
    `kueue_version` (default: the one validated, versions.module("kueue")) counts them, with the defaults of
    `limit_ranges` (the LimitRanges of the job's namespace on its cluster).
    Values of the wrong type or that are no quantity count as absent: the schema check reports them."""
    spec = _dict(rayjob.get("spec"))
    cluster = ray_cluster_spec(rayjob)[1]
    head = pod_requests(_dict(cluster.get("headGroupSpec")).get("template"), limit_ranges)
    mode = spec.get("submissionMode", "K8sJobMode") if rayjob.get("kind", "RayJob") == "RayJob" else None  # (a RayCluster's, RayService's: none)
    if mode == "SidecarMode" and releases.has("kueue", "sidecar-submitter-counted", kueue_version or versions.module("kueue")[1]):
        # KubeRay injects its default submitter container into the head pod (kueue#12726).
        for name, qty in SUBMITTER_DEFAULT_REQUESTS.items():
            head[name] = head.get(name, 0) + qty
    sets = [("head", 1, head)]
    groups = cluster.get("workerGroupSpecs")
    for group in (g for g in (groups if isinstance(groups, list) else []) if isinstance(g, dict)):
        count = _count(group.get("replicas", 0)) * _count(group.get("numOfHosts", 1), default=1)
        sets.append((str(group.get("groupName", "?")), count, pod_requests(group.get("template"), limit_ranges)))
    if mode == "K8sJobMode":
        # Without a submitterPodTemplate, Kueue charges KubeRay's default submitter; a template
        # without resources is charged nothing (seen on the real Kueue: usage stays at 68 CPU).
        template = spec.get("submitterPodTemplate")
        submitter = pod_requests(template, limit_ranges) if template else dict(SUBMITTER_DEFAULT_REQUESTS)
        sets.append(("submitter", 1, submitter))
    return sets


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _count(value, default: int = 0) -> int:
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def pod_requests(template: dict | None, limit_ranges: list[dict] = ()) -> dict[str, Decimal]:
    """Per-pod requests as the pinned Kueue charges them (harness.gate.matching.pod_requests)."""
    return {name: parse_quantity(qty) for name, qty in matching.pod_requests(template, limit_ranges).items()}


def _absent_config_maps(core, job: dict) -> list[str]:
    """The ConfigMaps the job's pods need (not optional: harness.gate.pod_refs) that its namespace does not have."""
    from kubernetes.client import ApiException

    names = sorted({str(name) for path, pod in pod_templates(job) for _, kind, name in pod_spec_refs(path, pod) if kind == "ConfigMap"})
    absent = []
    for name in names:
        try:
            core.read_namespaced_config_map(name, job["metadata"]["namespace"])
        except ApiException as err:
            if err.status != 404:
                raise
            absent.append(name)
    return absent


def main(argv: list[str] | None = None) -> int:
    """scripts/submit-workload SAMPLE --queue LQ [--set VAR=value ...] [--dry-run]"""
    import argparse
    import sys

    import yaml

    parser = argparse.ArgumentParser(prog="submit-workload", description="Render a sample RayJob and submit it to a LocalQueue.")
    parser.add_argument("sample", help=f"one of: {', '.join(sample_names())}")
    parser.add_argument("--queue", required=True, help="LocalQueue in namespace ray (default, team-a, team-b, ...)")
    parser.add_argument("--set", action="append", default=[], metavar="VAR=value", help="value for a ${VAR} placeholder")
    parser.add_argument("--namespace", default="ray", help="namespace of the LocalQueue (default: ray)")
    parser.add_argument("--dry-run", action="store_true", help="print the RayJob instead of creating it")
    args = parser.parse_args(argv)
    try:
        bad = [item for item in args.set if "=" not in item]
        if bad:
            raise WorkloadError(f"--set {bad[0]}: give VAR=value (e.g. --set NUM_WORKERS=2)")
        values = dict(item.split("=", 1) for item in args.set)
        job = render(args.sample, args.queue, values)
        job["metadata"]["namespace"] = args.namespace
    except (HarnessError, ValueError) as err:  # WorkloadError, or a --set without '='
        print(f"submit-workload: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(yaml.safe_dump(job, sort_keys=False), end="")
        return 0
    import os

    from kubernetes import client, config
    from urllib3.exceptions import HTTPError

    where = f"KUBECONFIG={os.environ['KUBECONFIG']}" if os.environ.get("KUBECONFIG") else "~/.kube/config (KUBECONFIG is not set)"
    hint = "export the KUBECONFIG=<path> line that `make cluster` prints (and keep that cluster running)"
    try:
        config.load_kube_config()
    except (config.ConfigException, OSError, ValueError, TypeError) as err:
        print(f"submit-workload: no cluster to submit to: {where}: {str(err).splitlines()[0] if str(err) else type(err).__name__}; {hint}",
              file=sys.stderr)
        return 2
    try:
        absent = _absent_config_maps(client.CoreV1Api(), job)
        if absent:  # admitted, the job would hold its quota with its pods ContainerCreating for good
            print(f"submit-workload: RayJob {job['metadata']['name']} mounts ConfigMap {', '.join(absent)}, which namespace "
                  f"{job['metadata']['namespace']} does not have: the cluster's queues layer applies the samples' scripts "
                  "(base/scripts); wait until Flux has applied it, or check its Kustomization", file=sys.stderr)
            return 1
        created = client.CustomObjectsApi().create_namespaced_custom_object("ray.io", "v1", job["metadata"]["namespace"], "rayjobs", job)
    except client.ApiException as err:
        print(f"submit-workload: the cluster refused RayJob {job['metadata']['name']}: {err.status} {err.reason}: {err.body}", file=sys.stderr)
        return 1
    except (HTTPError, OSError) as err:  # MaxRetryError (connection refused: the cluster is stopped), TLS, DNS
        reason = getattr(err, "reason", None) or err
        print(f"submit-workload: cannot reach the cluster of {where}: {reason}; {hint}", file=sys.stderr)
        return 2
    print(f"rayjob.ray.io/{created['metadata']['name']} created in {created['metadata']['namespace']} on LocalQueue {args.queue}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
