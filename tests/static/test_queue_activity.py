"""ClusterQueues Kueue would keep inactive, and cohort cycles (harness/gate/queue_activity.py).

Each case is a self-contained set of objects under a name prefix `{p}`: here it is appended to the
team-queues overlay and the gate must report its rule at the line where the cause is written;
tests/integration/test_inactive_queues.py applies the same objects to the real Kueue and checks
that Kueue reports the reason the gate names (CASES is shared, so the two cannot drift).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.gate.validate import validate_repository

pytestmark = pytest.mark.static

OVERLAY_FILE = "overlays/team-queues/team-a.yaml"
FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {p}flavor
spec: {flavor_spec}
"""
QUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {p}cq
spec:
  namespaceSelector: {}{cohort}
  resourceGroups:
    - coveredResources: [cpu]
      flavors:
        - name: {p}flavor
          resources:
            - name: cpu
              nominalQuota: "0"{checks}
"""


def check(name: str, controller: str, params: str | None = None) -> str:
    parameters = f"\n  parameters: {{apiGroup: kueue.x-k8s.io, kind: {params}, name: {{p}}config}}" if params else ""
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: {{p}}{name}
spec:
  controllerName: {controller}{parameters}
"""


def checks(*entries: str) -> str:
    return "\n  admissionChecksStrategy:\n    admissionChecks:" + "".join(f"\n      - name: {{p}}{e}" for e in entries)


def queue(flavor_spec: str = "{}", cohort: str = "", checks_: str = "") -> str:
    return FLAVOR.replace("{flavor_spec}", flavor_spec) + "---" + QUEUE.replace("{cohort}", cohort).replace("{checks}", checks_)


def cohort(name: str, parent: str) -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: {{p}}{name}
spec:
  parentName: {{p}}{parent}
"""


MK_CONFIG = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata:
  name: {p}config
spec:
  clusters: [{p}worker]
"""

MK_CLUSTER = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata:
  name: {p}worker
spec:
  clusterSource:
    kubeConfig: {locationType: Secret, location: {p}worker-kubeconfig}
"""
MISSING, INACTIVE = "references missing AdmissionCheck(s)", "references inactive AdmissionCheck(s)"

# (case, rule, severity, where: the text of the line the finding names, objects, what Kueue says):
# the last is part of the message of the ClusterQueue's Active=False condition (Kueue's
# clusterQueue.inactiveReason), or, for a cohort cycle, where Kueue keeps the queue Active but
# leaves it out of scheduling, of the pending message of a Workload submitted to it.
CASES = [
    ("admission-check-missing", "clusterqueue-admission-check", "error", "      - name: {p}gone",
     queue(checks_=checks("gone")), MISSING),
    ("provisioning-config-missing", "clusterqueue-admission-check", "error",
     "  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: {p}config}",
     queue(checks_=checks("prov")) + "---" + check("prov", "kueue.x-k8s.io/provisioning-request", "ProvisioningRequestConfig"),
     INACTIVE),
    ("multikueue-cluster-missing", "clusterqueue-admission-check", "error", "  clusters: [{p}worker]",
     queue(checks_=checks("mk")) + "---" + check("mk", "kueue.x-k8s.io/multikueue", "MultiKueueConfig") + "---" + MK_CONFIG,
     INACTIVE),
    ("two-multikueue-checks", "clusterqueue-admission-check", "error", "    admissionChecks:",
     queue(checks_=checks("mk", "mk2")) + "---" + check("mk", "kueue.x-k8s.io/multikueue", "MultiKueueConfig") + "---"
     + check("mk2", "kueue.x-k8s.io/multikueue", "MultiKueueConfig") + "---" + MK_CONFIG + "---" + MK_CLUSTER,
     "Cannot use multiple MultiKueue AdmissionChecks"),
    ("provisioning-without-api", "clusterqueue-admission-check", "warning", "    admissionChecks:",
     queue(checks_=checks("prov")) + "---" + check("prov", "kueue.x-k8s.io/provisioning-request", "ProvisioningRequestConfig")
     + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata:\n  name: {p}config\n"
       "spec:\n  provisioningClassName: check-capacity.autoscaling.x-k8s.io\n",
     INACTIVE),
    ("topology-missing", "clusterqueue-topology", "error", "spec: {nodeLabels: {agentpool: gpupool}, topologyName: {p}racks}",
     queue(flavor_spec="{nodeLabels: {agentpool: gpupool}, topologyName: {p}racks}"), "there is no Topology"),
    ("cohort-cycle", "cohort-cycle", "error", "  parentName: {p}org",
     queue(cohort="\n  cohortName: {p}team") + "---" + cohort("team", "org") + "---" + cohort("org", "team"), "is inactive"),
]


def objects_text(objects: str, prefix: str) -> str:
    """The case's YAML with its names under `prefix`."""
    return textwrap.dedent(objects).replace("{p}", prefix)


@pytest.mark.parametrize("case,rule,severity,where,objects,kueue_says", CASES, ids=[c[0] for c in CASES])
def test_gate_reports_the_queue_kueue_would_keep_inactive(repo_copy, case, rule, severity, where, objects, kueue_says):
    path = repo_copy / OVERLAY_FILE
    path.write_text(path.read_text() + "---" + objects_text(objects, "inactive-"))
    lines = path.read_text().splitlines()
    line = lines.index(where.replace("{p}", "inactive-")) + 1
    report = validate_repository(repo_copy)
    fired = [f for f in report.findings if f.rule == rule]
    assert [(f.file, f.line, f.severity) for f in fired] == [(OVERLAY_FILE, line, severity)], \
        f"{case}: expected one {severity} of {rule} at {OVERLAY_FILE}:{line}, got:\n" + "\n".join(f.text() for f in report.findings)


# A flavor with its Topology and a two-level cohort tree: Kueue keeps this ClusterQueue Active
# (tests/integration/test_inactive_queues.py checks it on the real Kueue).
COMPLETE = (queue(flavor_spec="{nodeLabels: {agentpool: gpupool}, topologyName: {p}racks}", cohort="\n  cohortName: {p}team")
            + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata:\n  name: {p}racks\n"
              "spec:\n  levels:\n    - nodeLabel: kubernetes.io/hostname\n"
            + "---" + cohort("team", "org") + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata:\n  name: {p}org\n")


def test_valid_admission_checks_topology_and_cohorts_are_clean(repo_copy):
    """The same shapes, complete: COMPLETE, and a MultiKueue check with its config and cluster
    (whether the cluster connects is known only at run time). No finding of the three rules."""
    objects = (COMPLETE.replace("  cohortName: {p}team", "  cohortName: {p}team" + checks("mk")) + "---"
               + check("mk", "kueue.x-k8s.io/multikueue", "MultiKueueConfig") + "---" + MK_CONFIG + "---" + MK_CLUSTER)
    path = repo_copy / OVERLAY_FILE
    path.write_text(path.read_text() + "---" + objects_text(objects, "inactive-"))
    report = validate_repository(repo_copy)
    ours = [f for f in report.findings if f.rule in ("clusterqueue-admission-check", "clusterqueue-topology", "cohort-cycle")]
    assert not ours, "\n".join(f.text() for f in ours)
    assert not [f for f in report.findings if f.is_error], "\n".join(f.text() for f in report.findings)
    assert "inactive-mk" in path.read_text()


@pytest.mark.parametrize("controller, fix", [("example.com/budget", "deploy the controller example.com/budget"),
                                             ("kueue.x-k8s.io/provisioning-request", "spec.parameters")])
def test_the_fix_of_an_inactive_check_is_its_controllers(repo_copy, controller, fix):
    """A check of a controller outside Kueue becomes Active when that controller runs, whatever its parameters; one of Kueue's
    own controllers needs its config object."""
    path = repo_copy / OVERLAY_FILE
    path.write_text(path.read_text() + "---" + objects_text(queue(checks_=checks("ac")) + "---" + check("ac", controller), "inactive-"))
    fired = [f for f in validate_repository(repo_copy).findings if f.rule == "clusterqueue-admission-check"]
    assert len(fired) == 1 and fix in fired[0].hint, "\n".join(f.text() for f in fired)


def test_a_misspelt_config_name_is_reported_once_at_the_typo(repo_copy):
    """M#6: an AdmissionCheck whose spec.parameters.name misspells its ProvisioningRequestConfig, named by two
    ClusterQueues: one finding at the misspelt name (not at each ClusterQueue's correct check entry), naming both."""
    typo = ("\napiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata:\n  name: {p}prov\nspec:\n"
            "  controllerName: kueue.x-k8s.io/provisioning-request\n  parameters:\n    apiGroup: kueue.x-k8s.io\n"
            "    kind: ProvisioningRequestConfig\n    name: {p}capacty\n"
            "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ProvisioningRequestConfig\nmetadata:\n  name: {p}capacity\n"
            "spec:\n  provisioningClassName: check-capacity.autoscaling.x-k8s.io\n")
    second = QUEUE.replace("{p}cq", "{p}cq2").replace("{cohort}", "").replace("{checks}", checks("prov"))
    path = repo_copy / OVERLAY_FILE
    path.write_text(path.read_text() + "---" + objects_text(queue(checks_=checks("prov")) + "---" + second + "---" + typo, "inactive-"))
    line = path.read_text().splitlines().index("    name: inactive-capacty") + 1
    fired = [f for f in validate_repository(repo_copy).findings if f.rule == "clusterqueue-admission-check"]
    assert [(f.file, f.line, f.resource) for f in fired] == [(OVERLAY_FILE, line, "AdmissionCheck/inactive-prov")], \
        "\n".join(f.text() for f in fired)
    assert "inactive-cq, inactive-cq2" in fired[0].message and "inactive-capacity" in fired[0].message, fired[0].text()
