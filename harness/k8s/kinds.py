"""The one way to name a resource type: `ResourceType(api_version, kind, plural, namespaced)`.

It unpacks like the (api_version, kind) pair the client's calls take (`kube.list(*RAYJOB)`),
and carries what raw API paths and watches need (group, version, plural, scope).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResourceType:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    def __iter__(self):
        """Unpacking (`*RAYJOB`) gives (api_version, kind), the pair the client's calls take."""
        return iter((self.api_version, self.kind))

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path: /apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>] (/api/v1 for core)."""
        base = f"/apis/{self.api_version}" if self.group else f"/api/{self.version}"
        ns = f"/namespaces/{namespace}" if namespace and self.namespaced else ""
        return f"{base}{ns}/{self.plural}" + (f"/{name}" if name else "")

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


KUEUE_API = "kueue.x-k8s.io/v1beta2"

NAMESPACE = ResourceType("v1", "Namespace", "namespaces", namespaced=False)
SECRET = ResourceType("v1", "Secret", "secrets")
SERVICE = ResourceType("v1", "Service", "services")
POD = ResourceType("v1", "Pod", "pods")
NODE = ResourceType("v1", "Node", "nodes", namespaced=False)
CRD = ResourceType("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False)
RAYJOB = ResourceType("ray.io/v1", "RayJob", "rayjobs")
RAYCLUSTER = ResourceType("ray.io/v1", "RayCluster", "rayclusters")
WORKLOAD = ResourceType(KUEUE_API, "Workload", "workloads")
LOCAL_QUEUE = ResourceType(KUEUE_API, "LocalQueue", "localqueues")
CLUSTER_QUEUE = ResourceType(KUEUE_API, "ClusterQueue", "clusterqueues", namespaced=False)
COHORT = ResourceType(KUEUE_API, "Cohort", "cohorts", namespaced=False)
RESOURCE_FLAVOR = ResourceType(KUEUE_API, "ResourceFlavor", "resourceflavors", namespaced=False)
PRIORITY_CLASS = ResourceType(KUEUE_API, "WorkloadPriorityClass", "workloadpriorityclasses", namespaced=False)
KUSTOMIZATION = ResourceType("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "kustomizations")
GIT_REPOSITORY = ResourceType("source.toolkit.fluxcd.io/v1", "GitRepository", "gitrepositories")
MUTATING_WEBHOOK = ResourceType("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
                                "mutatingwebhookconfigurations", namespaced=False)
VALIDATING_WEBHOOK = ResourceType("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                                  "validatingwebhookconfigurations", namespaced=False)
