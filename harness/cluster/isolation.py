"""Names the behavioural tests use, so a run on a shared (existing) cluster stays in its own lane.

On the local and kind backends the cluster belongs to the test run and the repository's names
are used as they are. On an existing staging cluster the run gets its own namespace and a prefix
for the cluster-scoped Kueue objects (ClusterQueues, flavors, cohort, priority classes), so it
never touches the cluster's real queues; everything it creates is deleted afterwards.
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass

REPO_NAMESPACE = "ray"
CLUSTER_SCOPED = {"ClusterQueue", "ResourceFlavor", "WorkloadPriorityClass", "Cohort"}
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True)
class Names:
    namespace: str = REPO_NAMESPACE
    prefix: str = ""

    @classmethod
    def for_backend(cls, backend: str) -> "Names":
        if backend != "existing":
            return cls()
        run = os.environ.get("RAY_KUEUE_RUN_ID") or f"{os.getpid()}"
        return cls(namespace=f"ray-e2e-{run}", prefix=f"e2e-{run}-")

    def cq(self, name: str) -> str:
        return self.prefix + name

    flavor = cohort = priority = cq

    def localize(self, obj: dict) -> dict:
        """The object with the run's namespace and prefixed cluster-scoped names and references."""
        obj = copy.deepcopy(obj)
        if not self.prefix and self.namespace == REPO_NAMESPACE:
            return obj
        meta = obj.setdefault("metadata", {})
        kind = obj.get("kind")
        if kind == "Namespace" and meta.get("name") == REPO_NAMESPACE:
            meta["name"] = self.namespace
        if meta.get("namespace") == REPO_NAMESPACE:
            meta["namespace"] = self.namespace
        if kind in CLUSTER_SCOPED:
            meta["name"] = self.prefix + meta["name"]
        spec = obj.get("spec") or {}
        if kind == "LocalQueue":
            spec["clusterQueue"] = self.cq(spec["clusterQueue"])
        if kind == "ClusterQueue":
            if spec.get("cohortName"):
                spec["cohortName"] = self.cohort(spec["cohortName"])
            spec["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}}
            for group in spec.get("resourceGroups") or []:
                for flavor in group.get("flavors") or []:
                    flavor["name"] = self.flavor(flavor["name"])
        labels = meta.get("labels") or {}
        if PRIORITY_LABEL in labels:
            labels[PRIORITY_LABEL] = self.priority(labels[PRIORITY_LABEL])
        return obj
