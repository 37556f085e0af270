"""Talking to a Kubernetes apiserver: the dynamic client with server-side apply, bounded
watch-driven waits, and condition helpers."""
from harness.k8s.client import Kube, WaitTimeout, apply_order, condition, is_true, owned_by, summary

__all__ = ["Kube", "WaitTimeout", "apply_order", "condition", "is_true", "owned_by", "summary"]
