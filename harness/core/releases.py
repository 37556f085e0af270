"""What changes between the Kueue and KubeRay releases this repository pins or rehearses
(versions.yaml `version` and `candidates:`): the one place the harness keeps per-version
differences. Build recipes (harness.toolchain.builds), the embedded operators
(harness.cluster.operators), the gate's accounting (harness.gate.workloads), the tests that
expect version-specific behaviour and the rehearsal report all ask `has(component, key, version)`
instead of comparing versions themselves.

Each entry names the release note (CHANGELOG-0.18.md / CHANGELOG-0.19.md of kubernetes-sigs/kueue,
the ray-project/kuberay v1.6.2 release notes) it comes from, and `repository` says what this
repository must change when it upgrades past it ("" when nothing). `tests` are the pytest node
ids (`tests/<path>.py::<function>`) that confirm or refute the entry by running the real component
on each version, `step` the rehearsal step that does (the candidate build, the Configuration
defaults, the CRD comparison); an entry with neither is known from the release notes only, and
`checked_by` says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.core.errors import HarnessError


class ReleaseError(HarnessError, ValueError):
    pass


@dataclass(frozen=True)
class Change:
    component: str   # "kueue" | "kuberay"
    since: str       # first module version with the change
    key: str         # what code asks for with has()
    area: str        # build | flag | config-default | accounting | admission | crd | behaviour
    note: str        # the release note, with its pull request / issue
    repository: str  # what this repository must change on upgrade ("" when nothing)
    tests: tuple[str, ...] = ()  # pytest node ids that run it on each version
    step: str = ""               # the rehearsal step that runs it
    why_unchecked: str = ""      # with neither: why nothing runs it

    @property
    def checked_by(self) -> str:
        """What runs it, for people: the tests and the rehearsal step, or "release notes only"."""
        parts = [*self.tests, *([self.step] if self.step else [])]
        return "; ".join(parts) if parts else "release notes only" + (f" ({self.why_unchecked})" if self.why_unchecked else "")


CHANGES: tuple[Change, ...] = (
    # -- Kueue 0.18 (CHANGELOG-0.18.md) ---------------------------------------------------------------
    Change("kueue", "v0.18.0", "sidecar-submitter-counted", "accounting",
           "RayJob submissionMode SidecarMode: the submitter container KubeRay injects into the head pod "
           "(500m CPU / 200Mi, KubeRay's defaults) is counted on the head PodSet (kueue#12726)",
           "none for workloads/ (K8sJobMode, whose submitter Job was already counted); a SidecarMode RayJob "
           "needs 500m CPU / 200Mi more quota. The gate follows it: scripts/validate --kueue VERSION",
           tests=("tests/integration/test_release_differences.py::test_sidecar_submitter_accounting_follows_the_version",)),
    Change("kueue", "v0.18.0", "autoscaler-sidecar-counted", "accounting",
           "enableInTreeAutoscaling: the Ray autoscaler sidecar is counted against quota (kueue#12454, #12405)",
           "none: every sample sets enableInTreeAutoscaling: false",
           why_unchecked="no sample autoscales, and Kueue's webhook refuses enableInTreeAutoscaling unless workload "
                         "slicing (ElasticJobsViaWorkloadSlices) is on, which the production Configuration leaves off"),
    Change("kueue", "v0.18.0", "finish-orphaned-workloads-fixed", "config-default",
           "FinishOrphanedWorkloads Beta, on by default again, with the fix for finishing just-created "
           "Workloads while a cache lags (kueue#10901, #11296)",
           "the `featureGates: {FinishOrphanedWorkloads: false}` workaround in "
           "flux/infrastructure/controllers/kueue.yaml can go once tests/faults/test_restarts.py passes "
           "on the new version, where it runs with the workaround removed (tests/static/test_versions.py "
           "requires it before 0.17.3 only)",
           tests=("tests/faults/test_restarts.py::test_apiserver_restart_between_borrow_and_reclaim",),
           step="the fault suite (SUITES=...,faults): from 0.18 every fault test runs Kueue without the "
                "workaround, FinishOrphanedWorkloads on as Kueue ships it; a pass there is the evidence it can go"),
    Change("kueue", "v0.18.0", "visibility-server-port-flag-removed", "flag",
           "--visibility-server-port removed; visibilityServer.bindPort in the Configuration instead (#11309)",
           "none: neither the HelmRelease nor the embedded Kueue passes the flag",
           step="the rehearsal's Kueue start (unknown flags make Kueue exit)"),
    Change("kueue", "v0.18.0", "events-v1", "behaviour",
           "Kueue records events through events.k8s.io/v1 (#10971)",
           "none: the harness reads Workload conditions, not Events (a tool that reads Kueue's Events "
           "through core/v1 still sees them; from 0.18 they carry an `action`)",
           tests=("tests/integration/test_release_differences.py::test_kueue_events_follow_the_version",)),
    # -- Kueue 0.19 (CHANGELOG-0.19.md) ---------------------------------------------------------------
    Change("kueue", "v0.19.0", "requires-kubernetes-module", "build",
           "go.mod requires k8s.io/kubernetes v1.36.0 (the scheduler library), whose staging modules are "
           "required at v0.0.0: a wrapper module must `replace k8s.io/X v0.0.0 => k8s.io/X v0.36.0` each",
           "none (the harness's wrapper module adds the replaces: harness/toolchain/builds.py)",
           step="the candidate build (`make rehearse KUEUE=v0.19.2`)"),
    Change("kueue", "v0.19.0", "wait-for-pods-ready-default", "config-default",
           "waitForPodsReady is on by default with a 30 min timeout, blockAdmission false (#11855; "
           "DisableWaitForPodsReady gate, #13107)",
           "the production Configuration sets no waitForPodsReady: after the upgrade an admitted RayJob "
           "whose pods are not Ready in 30 min is evicted and requeued. Set waitForPodsReady explicitly in "
           "flux/infrastructure/controllers/kueue.yaml to keep today's behaviour, or accept it",
           tests=("tests/integration/test_release_differences.py::test_effective_configuration_follows_the_version",),
           step="the rehearsal's Configuration defaults (the Kueue binary's `Configuration loaded` line)"),
    Change("kueue", "v0.19.0", "client-qps-raised", "config-default",
           "default clientConnection QPS/burst raised (300/500)",
           "none", step="the rehearsal's Configuration defaults"),
    Change("kueue", "v0.19.0", "queue-name-removal-rejected", "admission",
           "removing the kueue.x-k8s.io/queue-name label from a Ray job is rejected (#14666)",
           "none: the repository never removes it (a running job's label is now immutable)",
           tests=("tests/integration/test_release_differences.py::test_removing_the_queue_name_from_a_running_rayjob_follows_the_version",)),
    Change("kueue", "v0.19.0", "validation-failed-releases-quota", "behaviour",
           "RayJobs stuck in ValidationFailed release their quota (#14192; kueue#13413)",
           "none: no sample is one KubeRay refuses; a refused RayJob no longer holds quota",
           tests=("tests/integration/test_release_differences.py::test_quota_of_a_rayjob_kuberay_refuses_follows_the_version",)),
    Change("kueue", "v0.19.0", "v1beta2-storage", "crd",
           "v1beta2 is the storage version; v1beta1 served but deprecated",
           "none: every Kueue object here is kueue.x-k8s.io/v1beta2 (versions.yaml kueue.api)",
           step="the rehearsal's CRD comparison"),
    # -- KubeRay 1.6.2 (release notes) ----------------------------------------------------------------
    Change("kuberay", "v1.6.2", "gcs-ft-finalizer-timeout", "behaviour",
           "a stuck GCS fault-tolerance finalizer is force-removed after 5 minutes (ray.io/gcs-ft-deletion-timeout)",
           "none: no sample enables GCS fault tolerance", why_unchecked="no sample enables GCS fault tolerance"),
    Change("kuberay", "v1.6.2", "submitter-failure-target", "behaviour",
           "a submitter Job with the FailureTarget condition counts as failed",
           "none", why_unchecked="no submitter runs Ray here, so none fails"),
)


def parse(version: str) -> tuple[int, ...]:
    """'v0.18.3' -> (0, 18, 3); a pre-release suffix is ignored."""
    core = version.removeprefix("v").split("-")[0]
    try:
        return tuple(int(p) for p in core.split("."))
    except ValueError:
        raise ReleaseError(f"{version!r} is not a vX.Y.Z version") from None


def change(component: str, key: str) -> Change:
    for c in CHANGES:
        if c.component == component and c.key == key:
            return c
    raise ReleaseError(f"no release change {component}/{key} in harness/core/releases.py")


def listed(component: str, key: str) -> bool:
    """Whether `component` has a change `key` at all (has() refuses a key it does not know)."""
    return any(c.component == component and c.key == key for c in CHANGES)


def has(component: str, key: str, version: str) -> bool:
    """Whether `version` of `component` has the change `key` (it is at or past the release that made it)."""
    return parse(version) >= parse(change(component, key).since)


def between(component: str, old: str, new: str) -> list[Change]:
    """The changes an upgrade of `component` from `old` to `new` crosses (old < since <= new)."""
    lo, hi = parse(old), parse(new)
    if hi < lo:
        lo, hi = hi, lo
    return [c for c in CHANGES if c.component == component and lo < parse(c.since) <= hi]


SELECTABLE_COMPONENTS = ("kueue", "kuberay")  # the components CHANGES covers (versions.SELECTABLE)
