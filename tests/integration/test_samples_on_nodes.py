"""Every sample of every cluster (clusters/<name>/samples.yaml, with its entry's vars), on that cluster's
own queue layer and pool nodes: the real Kueue admits it, and the real kube-scheduler binds every pod
KubeRay creates for it to a KWOK node built from the cluster's Terraform pools (at max_count).

The static gate places the same pods offline with kube-scheduler's own plugins (capacity-pods-scheduled,
tools/kubecheck) after its capacity-pod-* rules; this holds each sample the repository promises to run to the
real scheduler, and a sample the gate says cannot be placed in full to the same count of Pending pods."""
from __future__ import annotations

import re

import pytest

from harness.core import REPO_ROOT, parse_quantity
from harness.gate import cluster_dirs, parse_yaml, pod_sets, render_cluster, render_sample, validate_repository
from harness.gate.workloads import render_entry
from harness.k8s import is_true
from harness.testing import copy_config

pytestmark = pytest.mark.integration

# What a cluster's layers put on the plane for its samples: the queues, and what their pods' admission reads.
APPLIED = {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "WorkloadPriorityClass", "ServiceAccount",
           "LimitRange", "ResourceQuota", "PriorityClass"}


def _entries() -> list[tuple[str, int, dict]]:
    """(cluster, index, entry) of every samples.yaml entry of the repository."""
    out = []
    for cdir in cluster_dirs(REPO_ROOT):
        path = cdir / "samples.yaml"
        entries = parse_yaml(path.read_text()) if path.is_file() else None
        out += [(cdir.name, i, e) for i, e in enumerate(entries or [])]
    return out


ENTRIES = _entries()


def test_the_repository_has_samples_to_place():
    assert len({c for c, _, _ in ENTRIES}) >= 2 and len(ENTRIES) >= 4, ENTRIES


@pytest.mark.parametrize("cluster,index,entry", ENTRIES, ids=[f"{c}-{e['sample']}-{i}" for c, i, e in ENTRIES])
def test_sample_is_admitted_and_every_pod_bound_on_its_cluster(layout, queues, nodes, cluster, index, entry):
    objects = [o for _, o in render_cluster(REPO_ROOT, cluster, f"clusters/{cluster}").applied()]
    queue_namespaces = {o["metadata"].get("namespace") for o in objects if o.get("kind") == "LocalQueue"}
    queues.apply_objects([o for o in objects if o.get("kind") in APPLIED
                          or (o.get("kind") == "Namespace" and o["metadata"]["name"] in queue_namespaces)])
    nodes(REPO_ROOT, cluster)
    name = f"{entry['sample']}-{index}"
    job = render_sample(entry["sample"], entry["queue"], {**{str(k): str(v) for k, v in (entry.get("vars") or {}).items()},
                                                          "JOB_NAME": name})
    expected = sum(count for _, count, _ in pod_sets(job))
    queues.submit(job)
    queues.wait_admitted(name)
    pods = queues.wait_pods(name, lambda ps: len(ps) >= expected and all(p["spec"].get("nodeName") and is_true(p, "Ready") for p in ps),
                            f"all {expected} pods bound to a node and Ready")
    assert len(pods) == expected, [p["metadata"]["name"] for p in pods]


WORKERS_APART = """            affinity:
              podAntiAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  - labelSelector: {matchLabels: {ray.io/group: gpu-workers}}
                    topologyKey: kubernetes.io/hostname
"""


def test_unplaced_offline_is_pending_on_the_real_scheduler(tmp_path, layout, queues, nodes):
    """4 workers that must not share a node, on prod-eastus2's one GPU node: the gate's offline placement says how many
    stay Pending, and the real kube-scheduler leaves exactly that many unbound (Unschedulable), binding the rest."""
    root, cluster = copy_config(tmp_path / "repo"), "prod-eastus2"
    workload = root / "workloads" / "llm-training.yaml"
    text = workload.read_text()
    worker = text.index("            containers:\n              - name: ray-worker")
    workload.write_text(text[:worker] + WORKERS_APART + text[worker:])
    found = [f for f in validate_repository(root).findings if f.rule == "capacity-pods-scheduled" and f"cluster {cluster}" in f.message]
    assert len(found) == 1, "\n".join(f.text() for f in found)
    unplaced = int(re.search(r"place (\d+) of the \d+ pod", found[0].message).group(1))
    assert unplaced == 3, found[0].message

    objects = [o for _, o in render_cluster(root, cluster, f"clusters/{cluster}").applied()]
    queue_namespaces = {o["metadata"].get("namespace") for o in objects if o.get("kind") == "LocalQueue"}
    queues.apply_objects([o for o in objects if o.get("kind") in APPLIED
                          or (o.get("kind") == "Namespace" and o["metadata"]["name"] in queue_namespaces)])
    nodes(root, cluster)
    entry = next(e for c, _, e in ENTRIES if c == cluster and e["sample"] == "llm-training")
    _, job = render_entry({**entry, "vars": {**(entry.get("vars") or {}), "JOB_NAME": "apart"}}, root)
    queues.submit(job)
    queues.wait_admitted("apart")

    def settled(pods: list[dict]) -> bool:
        workers = [p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/group") == "gpu-workers"]
        refused = [p for p in workers if any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                                             for c in (p.get("status") or {}).get("conditions") or [])]
        return len(workers) == 4 and len(refused) + sum(bool(p["spec"].get("nodeName")) for p in workers) == 4

    pods = queues.wait_pods("apart", settled, "the 4 workers each bound or Unschedulable")
    workers = [p for p in pods if (p["metadata"].get("labels") or {}).get("ray.io/group") == "gpu-workers"]
    assert sum(not p["spec"].get("nodeName") for p in workers) == unplaced, [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in workers]


LIMIT_RANGE = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "ray"},
               "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "1", "memory": "1Gi"},
                                    "default": {"cpu": "1", "memory": "1Gi"}}]}}


def test_the_gate_charges_a_sample_as_the_real_kueue_does(layout, queues, nodes):
    """What the gate counts for each pod set of a sample (workloads.pod_sets: Kueue's workload.NewInfo after AdjustResources, in
    tools/fluxbuild) is what the real Kueue reserves for it, here with the namespace's LimitRange defaults filling the
    submitter, which asks for nothing of its own."""
    cluster = "dev-westus3"
    objects = [o for _, o in render_cluster(REPO_ROOT, cluster, f"clusters/{cluster}").applied()]
    queue_namespaces = {o["metadata"].get("namespace") for o in objects if o.get("kind") == "LocalQueue"}
    queues.apply_objects([o for o in objects if o.get("kind") in APPLIED
                          or (o.get("kind") == "Namespace" and o["metadata"]["name"] in queue_namespaces)] + [LIMIT_RANGE])
    nodes(REPO_ROOT, cluster)
    entry = next(e for c, _, e in ENTRIES if c == cluster and e["sample"] == "aurora-finetune")
    _, job = render_entry({**entry, "vars": {**(entry.get("vars") or {}), "JOB_NAME": "charged"}})
    assert not (job["spec"]["submitterPodTemplate"]["spec"]["containers"][0].get("resources")), "the case needs a submitter without requests"
    expected = {name: {r: q * count for r, q in requests.items()} for name, count, requests in pod_sets(job, limit_ranges=[LIMIT_RANGE])}
    assert expected["submitter"]["cpu"] == 1, expected
    queues.submit(job)
    wl = queues.wait_admitted("charged")
    reserved = {a["name"]: {r: parse_quantity(q) for r, q in (a.get("resourceUsage") or {}).items()}
                for a in wl["status"]["admission"]["podSetAssignments"]}
    assert reserved == expected, f"the real Kueue reserved {reserved}, the gate counts {expected}"
