"""The sample RayJobs in workloads/: rendering them with their ${VAR} values.

The samples use the ${VAR} form the Azure example's envsubst templates use; Python's
string.Template is that same syntax, and `substitute` refuses to leave a variable unset.
"""
from __future__ import annotations

import string
from decimal import Decimal
from pathlib import Path

from harness.core import HarnessError, parse_quantity
from harness.gate.sources import parse_yaml

from harness.core import REPO_ROOT

WORKLOADS_DIR = "workloads"
# KubeRay's default submitter container resources (ray-operator/controllers/ray/common/job.go).
SUBMITTER_DEFAULT_REQUESTS = {"cpu": parse_quantity("500m"), "memory": parse_quantity("200Mi")}


class WorkloadError(HarnessError, ValueError):
    pass


def sample_names(root: Path = REPO_ROOT) -> list[str]:
    return sorted(p.stem for p in (root / WORKLOADS_DIR).glob("*.yaml") if p.name != "defaults.yaml")


def defaults(root: Path = REPO_ROOT) -> dict[str, str]:
    path = root / WORKLOADS_DIR / "defaults.yaml"
    return {k: str(v) for k, v in (parse_yaml(path.read_text()) or {}).items()} if path.exists() else {}


def render(sample: str, queue: str, values: dict[str, str] | None = None, root: Path = REPO_ROOT) -> dict:
    """The RayJob object for `sample` submitted to LocalQueue `queue`."""
    path = root / WORKLOADS_DIR / f"{sample}.yaml"
    if not path.exists():
        raise WorkloadError(f"no sample named {sample!r} (have: {', '.join(sample_names(root))})")
    mapping = {**defaults(root), "JOB_NAME": sample, "QUEUE_NAME": queue, **(values or {})}
    try:
        text = string.Template(path.read_text()).substitute(mapping)
    except KeyError as err:
        raise WorkloadError(f"{path.relative_to(root)}: variable ${{{err.args[0]}}} has no value; pass it with --set {err.args[0]}=...") from None
    except ValueError as err:
        raise WorkloadError(f"{path.relative_to(root)}: {err}") from None
    return parse_yaml(text)


def pod_sets(rayjob: dict) -> list[tuple[str, int, dict[str, Decimal]]]:
    """(name, count, per-pod requests) for each group of pods Kueue will charge to the queue."""
    spec = rayjob.get("spec") or {}
    cluster = spec.get("rayClusterSpec") or {}
    sets = [("head", 1, _pod_requests((cluster.get("headGroupSpec") or {}).get("template")))]
    for group in cluster.get("workerGroupSpecs") or []:
        count = int(group.get("replicas", 0) or 0) * int(group.get("numOfHosts", 1) or 1)
        sets.append((group.get("groupName", "?"), count, _pod_requests(group.get("template"))))
    if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
        # Without a submitterPodTemplate, Kueue charges KubeRay's default submitter; a template
        # without resources is charged nothing (seen on the real Kueue: usage stays at 68 CPU).
        template = spec.get("submitterPodTemplate")
        submitter = _pod_requests(template) if template else dict(SUBMITTER_DEFAULT_REQUESTS)
        sets.append(("submitter", 1, submitter))
    return sets


def _pod_requests(template: dict | None) -> dict[str, Decimal]:
    """Sum of container requests (limits stand in where requests are absent, as the apiserver defaults)."""
    total: dict[str, Decimal] = {}
    for c in ((template or {}).get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, qty in merged.items():
            total[name] = total.get(name, 0) + parse_quantity(qty)
    return total


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
        values = dict(item.split("=", 1) for item in args.set)
        job = render(args.sample, args.queue, values)
        job["metadata"]["namespace"] = args.namespace
    except (HarnessError, ValueError) as err:  # WorkloadError, or a --set without '='
        print(f"submit-workload: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(yaml.safe_dump(job, sort_keys=False), end="")
        return 0
    from kubernetes import client, config

    config.load_kube_config()
    try:
        created = client.CustomObjectsApi().create_namespaced_custom_object("ray.io", "v1", job["metadata"]["namespace"], "rayjobs", job)
    except client.ApiException as err:
        print(f"submit-workload: the cluster refused RayJob {job['metadata']['name']}: {err.status} {err.reason}: {err.body}", file=sys.stderr)
        return 1
    print(f"rayjob.ray.io/{created['metadata']['name']} created in {created['metadata']['namespace']} on LocalQueue {args.queue}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
