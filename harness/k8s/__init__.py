"""Talking to a Kubernetes apiserver: the dynamic client with server-side apply, bounded
watch-driven waits, and condition helpers."""
from harness.k8s.kinds import (CLUSTER_QUEUE, CRD, GIT_REPOSITORY, KUSTOMIZATION, LOCAL_QUEUE, NAMESPACE, PRIORITY_CLASS,
                               RAYCLUSTER, RAYJOB, RESOURCE_FLAVOR, WORKLOAD, ResourceType)
from harness.k8s.client import Kube, WaitTimeout, apply_order, condition, is_true, owned_by, summary

__all__ = ["CLUSTER_QUEUE", "CRD", "GIT_REPOSITORY", "KUSTOMIZATION", "LOCAL_QUEUE", "NAMESPACE", "PRIORITY_CLASS",
           "RAYCLUSTER", "RAYJOB", "RESOURCE_FLAVOR", "WORKLOAD", "ResourceType",
           "Kube", "WaitTimeout", "apply_order", "condition", "is_true", "owned_by", "summary"]
