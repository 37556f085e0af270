"""What the gate assumes of a Cohort's own quota (kueue.x-k8s.io/v1beta2 Cohort resourceGroups),
checked on the real Kueue: a ClusterQueue with no nominal quota of its own borrows the Cohort's
(so sample-fits counts it as borrowable), and what the Cohort holds is admitted on the same
nodes (so capacity-quota adds it to the ClusterQueues' quotas). A Workload that needs more than
the ClusterQueue plus the Cohort can give stays pending."""
from __future__ import annotations

import pytest

from harness.k8s import WORKLOAD, Kube, condition, describe_conditions, is_true

pytestmark = pytest.mark.integration


def _objects(prefix: str, namespace: str) -> list[dict]:
    api = WORKLOAD.api_version
    cpu = lambda q: [{"name": "cpu", "nominalQuota": q}]  # noqa: E731
    return [
        {"apiVersion": api, "kind": "Cohort", "metadata": {"name": f"{prefix}cohort"},
         "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": f"{prefix}flavor", "resources": cpu("2")}]}]}},
        {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": f"{prefix}flavor"}, "spec": {}},
        {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": f"{prefix}cq"},
         "spec": {"namespaceSelector": {}, "cohortName": f"{prefix}cohort",
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": f"{prefix}flavor", "resources": cpu("0")}]}]}},
        {"apiVersion": api, "kind": "LocalQueue", "metadata": {"name": f"{prefix}lq", "namespace": namespace}, "spec": {"clusterQueue": f"{prefix}cq"}},
    ]


def _workload(prefix: str, namespace: str, name: str, cpu: str) -> dict:
    pod = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    return {"apiVersion": WORKLOAD.api_version, "kind": "Workload", "metadata": {"name": f"{prefix}{name}", "namespace": namespace},
            "spec": {"queueName": f"{prefix}lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": pod}}]}}


def test_a_clusterqueue_borrows_its_cohorts_own_quota(kube: Kube, names, create):
    prefix = f"{names.prefix}cohort-quota-"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    create(_objects(prefix, names.namespace))
    create([_workload(prefix, names.namespace, "fits", "2"), _workload(prefix, names.namespace, "too-big", "3")])

    def decided(wls):
        mine = {w["metadata"]["name"]: w for w in wls if w["metadata"]["name"].startswith(prefix)}
        fits, big = mine.get(f"{prefix}fits"), mine.get(f"{prefix}too-big")
        pending = (condition(big, "QuotaReserved") or {}).get("status") == "False"
        return (fits, big) if is_true(fits, "QuotaReserved") and pending else None

    fits, big = kube.wait_for(*WORKLOAD, decided, "the 2-cpu Workload admitted on the Cohort's quota, the 3-cpu one pending",
                              names.namespace, show=describe_conditions)
    assert "insufficient quota" in condition(big, "QuotaReserved")["message"], describe_conditions(big)
