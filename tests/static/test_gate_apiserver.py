"""The gate rejects offline what the apiserver's validation and Kueue's webhooks reject, and
points at the line where the offending value is written (also when a component's patch wrote it).

The same broken objects go through server-side dry-run on the embedded control plane in
tests/harness/test_validation_parity.py, which checks that the verdicts agree.
"""
from __future__ import annotations

import pytest

from harness.gate import validate_repository
from tests.static.test_gate_corpus import edit

pytestmark = pytest.mark.static

TEAM_A = "overlays/team-queues/team-a.yaml"
ND96 = "components/gpu-sku/standard-nd96amsr-a100-v4/kustomization.yaml"
FLAVORS = "base/resource-flavors.yaml"

# (case, rule, file, line, text in the message, mutation)
CASES = [
    ("lending-above-nominal", "kueue-webhook", TEAM_A, 23, "must be less than or equal to the nominalQuota",
     lambda r: edit(r, TEAM_A, '              borrowingLimit: "0"\n            - name: memory',
                    '              borrowingLimit: "0"\n              lendingLimit: "60"\n            - name: memory')),
    # The value is written by the gpu-sku component's patch, not by the ClusterQueue's file.
    ("negative-quota-in-component", "kueue-webhook", ND96, 20, "nominalQuota",
     lambda r: edit(r, ND96, 'resources/0/nominalQuota, value: "47"}', 'resources/0/nominalQuota, value: "-47"}')),
    ("cel-preemption", "api-validation", TEAM_A, 12, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
     lambda r: edit(r, TEAM_A, "    reclaimWithinCohort: Any\n",
                    "    reclaimWithinCohort: Never\n    borrowWithinCohort:\n      policy: LowerPriority\n")),
    ("cel-toleration-exists-with-value", "api-validation", FLAVORS, 17, "a value must be empty when 'operator' is 'Exists'",
     lambda r: edit(r, FLAVORS, "    kubernetes.azure.com/accelerator: nvidia\n",
                    "    kubernetes.azure.com/accelerator: nvidia\n  tolerations:\n    - {key: sku, operator: Exists, value: gpu, effect: NoSchedule}\n")),
    ("cel-taint-effect", "api-validation", FLAVORS, 17, "supported taint effect values",
     lambda r: edit(r, FLAVORS, "    kubernetes.azure.com/accelerator: nvidia\n", "    kubernetes.azure.com/accelerator: nvidia\n  nodeTaints:\n    - {key: sku, value: gpu, effect: Sometimes}\n")),
    # Written in the older served version: the apiserver converts it (Kueue's conversion webhook) before Kueue's
    # validating webhook, registered for v1beta2, sees it.
    ("v1beta1-lending-above-nominal", "kueue-webhook", TEAM_A, 23, "must be less than or equal to the nominalQuota",
     lambda r: [edit(r, TEAM_A, old, new) for old, new in (
         ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"), ("cohortName: shared-cohort", "cohort: shared-cohort"),
         ('              borrowingLimit: "0"\n            - name: memory',
          '              borrowingLimit: "0"\n              lendingLimit: "60"\n            - name: memory'))]),
    ("unknown-field-line", "schema", TEAM_A, 11, 'unknown field "spec.queueingStrategyy"',
     lambda r: edit(r, TEAM_A, "  queueingStrategy: BestEffortFIFO", "  queueingStrategyy: BestEffortFIFO")),
]


@pytest.mark.parametrize("case,rule,file,line,text,mutate", CASES, ids=[c[0] for c in CASES])
def test_rejected_as_the_cluster_rejects_it(repo_copy, case, rule, file, line, text, mutate):
    mutate(repo_copy)
    report = validate_repository(repo_copy)
    fired = [f for f in report.findings if f.rule == rule and text in f.message]
    assert fired, f"{case}: expected {rule} with {text!r}, got:\n" + "\n".join(f.text() for f in report.findings)
    assert any((f.file, f.line) == (file, line) for f in fired), \
        f"{case}: {rule} should point at {file}:{line}:\n" + "\n".join(f.text() for f in fired)
    for f in fired:
        assert "/tmp" not in f.message and f.hint, f


def test_value_lines_follow_an_edited_file(tmp_path):
    """The same checkout validated again after an edit gets the new lines, not a cached answer."""
    import os

    from harness.gate import origin

    patch = tmp_path / "kustomization.yaml"
    patch.write_text('- {op: replace, path: /spec/a, value: "1"}\n')
    assert origin.patch_line(tmp_path, ["spec", "a"], "1") == ("kustomization.yaml", 1)
    patch.write_text('# moved down\n\n- {op: replace, path: /spec/a, value: "1"}\n')
    st = patch.stat()
    os.utime(patch, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a later edit, even within one clock tick
    assert origin.patch_line(tmp_path, ["spec", "a"], "1") == ("kustomization.yaml", 3)


def test_a_refused_flux_kustomization_is_one_finding(repo_copy):
    """A Flux Kustomization with a number under postBuild.substitute: the apiserver refuses it at the
    value's line. Neither its note that the CEL rules were then skipped nor the build that
    kustomize-controller never gets to run is reported beside it."""
    queues = "clusters/prod-eastus2/queues.yaml"
    edit(repo_copy, queues, "      CLUSTER_NAME: prod-eastus2\n", "      CLUSTER_NAME: prod-eastus2\n      REPLICAS: 3\n")
    report = validate_repository(repo_copy)
    assert [(f.rule, f.file, f.line) for f in report.findings] == [("api-validation", queues, 24)], \
        "\n".join(f.text() for f in report.findings)
    assert "must be of type string" in report.findings[0].message
