"""The cluster's network_profile combinations and address ranges (harness/gate/subnets.py: terraform-network-profile,
terraform-address-ranges) and the federated credential's issuer (harness/gate/workload_identity.py): each broken variant is
one finding at the value to change, with the fix; the valid combinations around them are clean."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.gate import terraform_checks
from tests.static.test_gate_corpus import append, edit

pytestmark = pytest.mark.static

AKS, IDENTITY, DEV = "terraform/aks.tf", "terraform/identity.tf", "terraform/clusters/dev-westus3.tfvars"
PROFILE = ('    network_plugin      = "azure"\n    network_plugin_mode = "overlay"\n    network_data_plane  = "cilium"\n'
           '    network_policy      = "cilium"\n')


def profile(root: Path, text: str) -> None:
    edit(root, AKS, PROFILE, text)


def one(root: Path, rule: str):
    found = terraform_checks.wiring_findings(root)
    hits = [f for f in found if f.rule == rule]
    assert len(hits) == 1 and len(found) == 1, "\n".join(f.text() for f in found)
    return hits[0]


def test_kubenet_with_overlay_and_cilium_is_one_finding_at_the_plugin(repo_copy):
    edit(repo_copy, AKS, 'network_plugin      = "azure"', 'network_plugin      = "kubenet"')
    f = one(repo_copy, "terraform-network-profile")
    assert (f.file, f.line) == (AKS, 63) and f.hint == 'set network_plugin = "azure"', f.text()
    assert "dev-westus3 | prod-eastus2" in f.message


def test_pod_cidr_on_flat_azure_cni_is_one_finding_whose_fix_mends_both_reasons(repo_copy):
    edit(repo_copy, AKS, 'network_plugin_mode = "overlay"', 'pod_cidr            = "10.244.0.0/16"')
    f = one(repo_copy, "terraform-network-profile")
    assert (f.file, f.line) == (AKS, 64) and f.hint == 'set network_plugin_mode = "overlay"', f.text()
    assert "pod_subnet_id must be specified" in f.message


def test_an_overlay_pod_cidr_in_the_vnet_is_one_finding_at_pod_cidr(repo_copy):
    edit(repo_copy, AKS, '    network_policy      = "cilium"\n', '    network_policy      = "cilium"\n    pod_cidr            = "10.240.0.0/16"\n')
    f = one(repo_copy, "terraform-address-ranges")
    assert (f.file, f.line) == (AKS, 67) and "azurerm_virtual_network.this 10.240.0.0/16" in f.message, f.text()


def test_a_vnet_on_the_default_overlay_pod_cidr_is_one_finding_at_the_vnet(repo_copy):
    append(repo_copy, DEV, 'vnet_cidr = "10.244.0.0/16"\nnodes_subnet_cidr = "10.244.0.0/22"\n')
    f = one(repo_copy, "terraform-address-ranges")
    assert (f.file, f.line) == (DEV, 17) and "AKS default" in f.message and "pod_cidr" in f.hint, f.text()


def test_a_pod_cidr_too_small_for_the_nodes_is_one_finding_for_both_clusters(repo_copy):
    edit(repo_copy, AKS, '    network_policy      = "cilium"\n', '    network_policy      = "cilium"\n    pod_cidr            = "10.244.0.0/24"\n')
    f = one(repo_copy, "terraform-address-ranges")
    assert (f.file, f.line) == (AKS, 67) and "need 3" in f.message and "need 4" in f.message and "/22" in f.hint, f.text()


def test_a_service_cidr_over_the_subnet_is_at_service_cidr(repo_copy):
    edit(repo_copy, AKS, '    network_policy      = "cilium"\n',
         '    network_policy      = "cilium"\n    service_cidr        = "10.240.0.0/20"\n    dns_service_ip      = "10.240.0.10"\n')
    f = one(repo_copy, "terraform-address-ranges")
    assert (f.file, f.line) == (AKS, 67) and "ServiceCidrOverlapExistingSubnetsCidr" in f.message, f.text()


def test_an_entra_issuer_is_one_finding_at_the_issuer(repo_copy):
    edit(repo_copy, IDENTITY, "azurerm_kubernetes_cluster.this.oidc_issuer_url",
         '"https://login.microsoftonline.com/${data.azurerm_client_config.current.tenant_id}/v2.0"')
    f = one(repo_copy, "terraform-federated-subject")
    assert (f.file, f.line) == (IDENTITY, 26) and f.hint == "set issuer = azurerm_kubernetes_cluster.this.oidc_issuer_url", f.text()


@pytest.mark.parametrize("text", [
    '    network_plugin      = "kubenet"\n    network_policy      = "calico"\n',  # kubenet, Calico, AKS's default ranges
    '    network_plugin      = "azure"\n    network_plugin_mode = "overlay"\n    network_policy      = "calico"\n',  # overlay + Calico
    '    network_plugin      = "azure"\n    network_policy      = "azure"\n',  # flat Azure CNI with Azure NPM, no pod_cidr
    PROFILE + '    pod_cidr            = "10.244.0.0/16"\n    service_cidr        = "10.0.0.0/16"\n    dns_service_ip      = "10.0.0.10"\n',
], ids=["kubenet-calico", "overlay-calico", "flat-azure-npm", "explicit-defaults"])
def test_valid_network_profiles_are_clean(repo_copy, text):
    profile(repo_copy, text)
    found = terraform_checks.wiring_findings(repo_copy)
    assert not found, "\n".join(f.text() for f in found)


def test_a_vnet_at_10_0_with_its_own_service_cidr_is_clean(repo_copy):
    append(repo_copy, DEV, 'vnet_cidr = "10.0.0.0/16"\nnodes_subnet_cidr = "10.0.0.0/22"\n')
    edit(repo_copy, AKS, '    network_policy      = "cilium"\n',
         '    network_policy      = "cilium"\n    service_cidr        = "10.100.0.0/16"\n    dns_service_ip      = "10.100.0.10"\n')
    found = terraform_checks.wiring_findings(repo_copy)
    assert not found, "\n".join(f.text() for f in found)


def test_an_issuer_read_through_a_local_is_clean(repo_copy):
    edit(repo_copy, IDENTITY, "issuer              = azurerm_kubernetes_cluster.this.oidc_issuer_url", "issuer              = local.issuer")
    append(repo_copy, IDENTITY, "\nlocals {\n  issuer = azurerm_kubernetes_cluster.this.oidc_issuer_url\n}\n")
    found = terraform_checks.wiring_findings(repo_copy)
    assert not found, "\n".join(f.text() for f in found)
