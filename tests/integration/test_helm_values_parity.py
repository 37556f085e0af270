"""helm-values against the apiserver: the Kueue chart rendered by the gate (Helm's own engine in tools/fluxbuild) with the
repository's HelmRelease values, and with broken variants of them, created with server-side dry-run on the embedded control
plane. Every object gets the same verdict offline and from the server (accepted, or refused at the same field with the same
message), and each broken variant is refused by the server, so the gate's finding is the install failing for real."""
from __future__ import annotations

import copy

import pytest
import yaml

from harness.core import versions
from harness.gate import helm_values, schema_check, schemas
from harness.gate.helper import helper
from harness.gate.schema_check import validate
from harness.testing.dry_run import server_verdict

pytestmark = pytest.mark.integration

KUEUE = versions.REPO_ROOT / "flux/infrastructure/controllers/kueue.yaml"


def _values() -> dict:
    return next(d for d in yaml.safe_load_all(KUEUE.read_text()) if d and d.get("kind") == "HelmRelease")["spec"]["values"]


def _toleration_typo(values):
    values["controllerManager"]["tolerations"][0]["effect"] = "NoSchedul"


def _unparsable_quantity(values):
    values["controllerManager"]["manager"]["resources"] = {"limits": {"cpu": "2 cores"}}


def _name_too_long(values):
    values["fullnameOverride"] += "-for-the-production-gpu-clusters-in-eastus2"


VARIANTS = [("repository", None), ("toleration-typo", _toleration_typo), ("unparsable-quantity", _unparsable_quantity),
            ("name-too-long", _name_too_long)]


@pytest.mark.parametrize("case,mutate", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_rendered_objects_get_the_servers_verdict(kube, names, case, mutate):
    values = copy.deepcopy(_values())
    values["fullnameOverride"] = names.cq("parity-kueue")  # beside the cluster's own Kueue objects, never on them
    if mutate:
        mutate(values)
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}})
    answer = helper().call("helm", helm_values.HelmError, kubernetes_version=schema_check.KUBERNETES_VERSION,
                           helm={"chart": str(schemas.chart_dir("kueue")), "values": values, "release": "kueue", "namespace": names.namespace})
    assert not answer.get("error"), answer["error"]
    objects = [o["object"] for o in answer["objects"]]
    assert any(o["kind"] == "Deployment" for o in objects), [o["kind"] for o in objects]
    refused = 0
    for obj, problem in zip(objects, validate(objects)):
        server = server_verdict(kube, obj)
        what = f"{case}: {obj['kind']} {obj['metadata']['name']}"
        assert (problem is None) == (server is None), f"{what}: offline {problem}, server {server}"
        for err in problem.errors if problem else ():
            field = "" if "cannot be handled as" in err["detail"] else err["field"]  # the server names no field for a decoding refusal
            assert field in server and err["detail"] in server, f"{what}: offline {err['message']!r} not in the server's answer: {server}"
            refused += 1
    assert (refused > 0) == (mutate is not None), f"{case}: {refused} refusals"
