"""Every sample of every cluster (clusters/<name>/samples.yaml, with its entry's vars), on that cluster's
own queue layer and pool nodes: the real Kueue admits it, and the real kube-scheduler binds every pod
KubeRay creates for it to a KWOK node built from the cluster's Terraform pools (at max_count).

The static gate restates placement for its capacity-pod-* rules (labels, taints, sizes, counts); this holds
each sample the repository promises to run to the real scheduler, including what the gate does not model
(pod affinity and anti-affinity, topology spread). A change that leaves a sample's pods pending fails here."""
from __future__ import annotations

import pytest

from harness.core import REPO_ROOT
from harness.gate import cluster_dirs, parse_yaml, pod_sets, render_cluster, render_sample
from harness.k8s import is_true

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
