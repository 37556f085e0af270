"""The smallest queue stack a behavioural test can submit to: a Namespace, a ResourceFlavor, a
ClusterQueue over cpu and memory that selects every namespace, and a LocalQueue pointing at it."""
from __future__ import annotations

from harness.k8s import CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, RESOURCE_FLAVOR


def minimal_queue(prefix: str, namespace: str, cpu: str, memory: str) -> list[dict]:
    """Objects <prefix>-flavor, <prefix>-cq and LocalQueue <prefix>-lq in `namespace`, in apply order."""
    return [
        {"apiVersion": NAMESPACE.api_version, "kind": NAMESPACE.kind, "metadata": {"name": namespace}},
        {"apiVersion": RESOURCE_FLAVOR.api_version, "kind": RESOURCE_FLAVOR.kind, "metadata": {"name": f"{prefix}-flavor"}},
        {"apiVersion": CLUSTER_QUEUE.api_version, "kind": CLUSTER_QUEUE.kind, "metadata": {"name": f"{prefix}-cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{
             "name": f"{prefix}-flavor",
             "resources": [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]}]}]}},
        {"apiVersion": LOCAL_QUEUE.api_version, "kind": LOCAL_QUEUE.kind, "metadata": {"name": f"{prefix}-lq", "namespace": namespace},
         "spec": {"clusterQueue": f"{prefix}-cq"}},
    ]
