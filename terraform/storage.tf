# Blob storage for inputs, checkpoints and the LLM pipeline. No shared keys, no anonymous
# access, no public network path except from the node subnet (service endpoint) and the
# optional operator IP ranges used for data uploads. Containers are created through the
# management plane (storage_account_id), so the firewall does not block Terraform.

resource "azurerm_storage_account" "this" {
  name                     = local.storage_account_name
  resource_group_name      = azurerm_resource_group.this.name
  location                 = azurerm_resource_group.this.location
  account_tier             = "Standard"
  account_replication_type = var.storage_replication_type

  min_tls_version                 = "TLS1_2"
  https_traffic_only_enabled      = true
  allow_nested_items_to_be_public = false
  shared_access_key_enabled       = false
  default_to_oauth_authentication = true
  local_user_enabled              = false

  sas_policy {
    expiration_period = "01.00:00:00"
    expiration_action = "Log"
  }

  blob_properties {
    versioning_enabled = true
    delete_retention_policy {
      days = var.storage_retention_days
    }
    container_delete_retention_policy {
      days = var.storage_retention_days
    }
  }

  network_rules {
    default_action             = "Deny"
    bypass                     = ["AzureServices", "Logging", "Metrics"]
    virtual_network_subnet_ids = [azurerm_subnet.nodes.id]
    ip_rules                   = var.storage_allowed_ip_rules
  }

  tags = local.tags
}

resource "azurerm_storage_container" "this" {
  for_each = toset(var.storage_containers)

  name                  = each.value
  storage_account_id    = azurerm_storage_account.this.id
  container_access_type = "private"
}
