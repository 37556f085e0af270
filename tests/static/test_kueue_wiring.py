"""harness/gate/kueue_wiring.py's facts about the Kueue chart, against the pinned chart itself (charts/kueue of the
pinned sigs.k8s.io/kueue module, which the MCR chart of versions.yaml packages): a Kueue bump that moves a port
fails here, not silently in the gate."""
from __future__ import annotations

import re

import pytest
import yaml

from harness import toolchain
from harness.gate import kueue_wiring

pytestmark = pytest.mark.static


@pytest.fixture(scope="module")
def chart():
    return toolchain.module_dir("kueue") / "charts" / "kueue"


def test_the_webhook_service_sends_to_the_port_the_gate_assumes(chart):
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert [p["targetPort"] for p in values["webhookService"]["ports"]] == [kueue_wiring.CHART_WEBHOOK_TARGET_PORT]
    assert values["controllerManager"]["replicas"] >= 1


def test_the_manager_probes_and_ports_are_the_ones_the_gate_assumes(chart):
    manager = (chart / "templates" / "manager" / "manager.yaml").read_text()
    probes = re.findall(r"(livenessProbe|readinessProbe):\s*\n\s*httpGet:\s*\n\s*path: \S+\s*\n\s*port: (\S+)", manager)
    assert {name for name, _ in probes} == {"livenessProbe", "readinessProbe"}, manager
    assert {port for _, port in probes} == {str(kueue_wiring.CHART_PROBE_PORT)}
    ports = dict((name, int(port)) for port, name in re.findall(r"- containerPort: (\d+)\s*\n\s*name: (\S+)", manager))
    assert ports == kueue_wiring.CHART_CONTAINER_PORTS
    service = (chart / "templates" / "webhook" / "service.yaml").read_text()
    assert ".Values.webhookService.ports" in service  # its targetPort comes from the values the gate reads


def test_the_chart_fills_in_internal_certificates_only_without_cert_manager(chart):
    config = (chart / "templates" / "manager" / "manager-config.yaml").read_text()
    assert "if not .Values.enableCertManager" in config and "if not $config.internalCertManagement" in config
