# Names and shared values. Every other file is one concern: network.tf, aks.tf,
# node_pools.tf, monitoring.tf, storage.tf, identity.tf, flux.tf.

data "azurerm_client_config" "current" {}

resource "random_string" "storage_suffix" {
  count   = var.storage_account_name == "" ? 1 : 0
  length  = 8
  lower   = true
  numeric = true
  upper   = false
  special = false
}

locals {
  resource_group_name  = var.resource_group_name != "" ? var.resource_group_name : "rg-${var.cluster_name}"
  storage_account_name = var.storage_account_name != "" ? var.storage_account_name : "${var.storage_account_name_prefix}${random_string.storage_suffix[0].result}"

  # The only subject the federated credential trusts; base/service-account.yaml defines
  # this ServiceAccount (the static gate checks that the two agree).
  workload_subject = "system:serviceaccount:${var.workload_namespace}:${var.workload_service_account_name}"

  # What the queues Flux Kustomization substitutes (clusters/<name>/cluster-vars.example.yaml
  # shows the same keys; tests/static/test_terraform.py checks they are equal).
  cluster_vars = {
    WORKLOAD_IDENTITY_CLIENT_ID = azurerm_user_assigned_identity.ray_workload.client_id
    AZURE_TENANT_ID             = data.azurerm_client_config.current.tenant_id
    AZURE_STORAGE_ACCOUNT_NAME  = azurerm_storage_account.this.name
  }

  tags = merge(var.tags, { cluster = var.cluster_name })
}

resource "azurerm_resource_group" "this" {
  name     = local.resource_group_name
  location = var.location
  tags     = local.tags
}
