"""Talking to a Kubernetes apiserver: the dynamic client with server-side apply, requests at a
resource type's path, the one list-then-watch loop and the bounded waits built on it, condition
helpers, and CRDs (documents from the Go modules, install, the wait until Established)."""
from harness.k8s.kinds import (CLUSTER_QUEUE, COHORT, CRD, GIT_REPOSITORY, KUSTOMIZATION, LOCAL_QUEUE, MUTATING_WEBHOOK, NAMESPACE,
                               NODE, POD, PRIORITY_CLASS, RAYCLUSTER, RAYJOB, RESOURCE_FLAVOR, SECRET, SERVICE, VALIDATING_WEBHOOK,
                               WORKLOAD, ResourceType)
from harness.k8s.conditions import condition, conditions, describe_conditions, is_false, is_true
from harness.k8s.rest import RAW_APPLY_MANAGER, ApiUnreachable, ensure_namespace, get_object, list_objects, merge_patch, server_side_apply
from harness.k8s.watch import ListWatch, WaitTimeout, summary, wait_for
from harness.k8s.client import Kube, apply_order, owned_by
from harness.k8s.crds import crd_documents, install_crds, wait_crds_established

__all__ = ["CLUSTER_QUEUE", "COHORT", "CRD", "GIT_REPOSITORY", "KUSTOMIZATION", "LOCAL_QUEUE", "MUTATING_WEBHOOK", "NAMESPACE",
           "NODE", "POD", "PRIORITY_CLASS", "RAYCLUSTER", "RAYJOB", "RESOURCE_FLAVOR", "SECRET", "SERVICE", "VALIDATING_WEBHOOK", "WORKLOAD",
           "ResourceType",
           "condition", "conditions", "describe_conditions", "is_false", "is_true",
           "RAW_APPLY_MANAGER", "ApiUnreachable", "ensure_namespace", "get_object", "list_objects", "merge_patch", "server_side_apply",
           "ListWatch", "WaitTimeout", "summary", "wait_for",
           "Kube", "apply_order", "owned_by",
           "crd_documents", "install_crds", "wait_crds_established"]
