"""Kueue's webhooks wired the way the Helm chart wires them, with Kueue's own internal cert
management (on by default in the chart) issuing the certificates.

In a cluster the chart gives Kueue a webhook Service, an empty Secret that cert-controller's
rotator fills with a CA and a serving cert for `kueue-webhook-service.kueue-system.svc`, a
kubelet that mounts that Secret into `webhook.certDir`, and CRDs whose conversion webhooks the
rotator injects with the CA. Out of a cluster the harness plays the two missing parts:
- the Service is `type: ExternalName` with `externalName: 127.0.0.1`, so kube-apiserver's own
  service resolver sends webhook calls to the Kueue process while verifying the serving cert
  against the Service's DNS name, exactly as in a cluster (no URL webhooks, no own certs);
- the kubelet's Secret volume: once the rotator has written the Secret, its tls.crt/tls.key are
  written into webhook.certDir (Kueue's readiness waits for them, as it does in a pod).

With internal cert management on, Kueue v0.17 never reads `/etc/kueue/metrics/certs` (its
cmd/kueue/main.go watches that hard-coded path only when it is off), so nothing here needs root.
"""
from __future__ import annotations

import base64
from pathlib import Path

from kubernetes import client

from harness.core import atomic_write, timeouts
from harness.k8s import CRD, SECRET, SERVICE, merge_patch, server_side_apply, wait_for

SERVICE_NAME = "kueue-webhook-service"  # the chart's names: the rotator derives the webhook
SECRET_NAME = "kueue-webhook-server-cert"  # configurations' names from the Service's
# The CRDs whose conversion webhook the rotator injects (pkg/util/cert/cert.go in Kueue v0.17);
# it blocks until each of them has a conversion clientConfig, as the chart's CRDs do.
CONVERTED_CRDS = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")


def cert_management() -> dict:
    """Kueue's `internalCertManagement` as the chart sets it."""
    return {"enable": True, "webhookServiceName": SERVICE_NAME, "webhookSecretName": SECRET_NAME}


def service_ref(namespace: str, port: int, path: str) -> dict:
    """A webhook clientConfig through the Service; no caBundle: the rotator injects it."""
    return {"service": {"name": SERVICE_NAME, "namespace": namespace, "path": path, "port": port}}


def wire_webhook_service(api: client.ApiClient, namespace: str, port: int) -> None:
    """The Service, the Secret the rotator fills, and the CRDs' conversion webhooks at `port`
    (set again on every start: the CRDs come from a seed shared by clusters on other ports)."""
    server_side_apply(api, SERVICE, {"apiVersion": "v1", "kind": "Service",
                                     "metadata": {"name": SERVICE_NAME, "namespace": namespace},
                                     "spec": {"type": "ExternalName", "externalName": "127.0.0.1"}})
    server_side_apply(api, SECRET, {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                    "metadata": {"name": SECRET_NAME, "namespace": namespace}})
    for plural in CONVERTED_CRDS:
        merge_patch(api, CRD, f"{plural}.kueue.x-k8s.io", {"spec": {"conversion": {
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": service_ref(namespace, port, "/convert")}}}})


def mount_serving_cert(api: client.ApiClient, namespace: str, cert_dir: Path, timeout: float = timeouts.WEBHOOKS_READY) -> None:
    """The kubelet's part: waits until the rotator has filled the Secret, then writes its serving
    cert and key into Kueue's webhook.certDir."""
    secret = wait_for(api, SECRET, lambda items: next((s for s in items if s["metadata"]["name"] == SECRET_NAME
                                                        and "tls.crt" in (s.get("data") or {})), None),
                      f"Kueue's cert rotator to fill Secret {namespace}/{SECRET_NAME}", namespace=namespace,
                      timeout=timeout, show=lambda s: f"Secret {s['metadata']['name']}: keys {sorted(s.get('data') or {})}")
    for key in ("tls.crt", "tls.key"):
        atomic_write(cert_dir / key, base64.b64decode(secret["data"][key]), mode=0o600)
