"""The one thing Ray would do that the harness does instead: report a RayJob's result.

No Ray runs on the simulated nodes, so no job ever ends by itself. `finish_rayjob` writes what
KubeRay would learn from the Ray dashboard when the job ends: `jobStatus` (SUCCEEDED or FAILED),
`jobDeploymentStatus` (Complete or Failed), `endTime` and a message, on the RayJob's status
subresource. From there everything is the real components': KubeRay runs its end-of-job branch
(with `shutdownAfterJobFinishes`, it deletes the RayCluster once `ttlSecondsAfterFinished` has
passed since `endTime`), Kueue's RayJob integration sees a finished job, marks its Workload
Finished and frees the quota, and the next pending Workload is admitted. Kueue's own performance
runner (test/performance/scheduler) finishes its workloads the same way.
"""
from __future__ import annotations

from datetime import datetime, timezone

from harness.k8s import RAYJOB

SIMULATED = "result reported by the test harness (no Ray runs on simulated nodes)"


def finish_rayjob(kube, name: str, namespace: str, succeeded: bool = True) -> dict:
    """Ends RayJob namespace/name as a finished Ray job would (`kube`: harness.k8s.Kube)."""
    status = {
        "jobStatus": "SUCCEEDED" if succeeded else "FAILED",
        "jobDeploymentStatus": "Complete" if succeeded else "Failed",
        "endTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": SIMULATED,
    }
    return kube.patch_status(RAYJOB.api_version, RAYJOB.kind, name, namespace, status)
