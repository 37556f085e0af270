# The AKS cluster and its system pool. The system pool carries CriticalAddonsOnly=true:NoSchedule
# (only_critical_addons_enabled), so Ray pods never land there; the capacity checks count only
# the user pools in node_pools.tf.

resource "azurerm_kubernetes_cluster" "this" {
  name                = var.cluster_name
  location            = azurerm_resource_group.this.location
  resource_group_name = azurerm_resource_group.this.name
  dns_prefix          = var.cluster_name
  kubernetes_version  = var.kubernetes_version
  sku_tier            = var.sku_tier

  # Workload identity: pods of ServiceAccount ray/ray-workload exchange their token for
  # one of azurerm_user_assigned_identity.ray_workload (identity.tf).
  oidc_issuer_enabled       = true
  workload_identity_enabled = true

  # Entra ID only: no static admin certificate exists to leak.
  local_account_disabled            = true
  role_based_access_control_enabled = true
  azure_active_directory_role_based_access_control {
    azure_rbac_enabled = true
    tenant_id          = data.azurerm_client_config.current.tenant_id
  }

  api_server_access_profile {
    authorized_ip_ranges = var.api_server_authorized_ip_ranges
  }

  azure_policy_enabled      = true
  automatic_upgrade_channel = "patch"
  node_os_upgrade_channel   = "NodeImage"

  key_vault_secrets_provider {
    secret_rotation_enabled = true
  }

  oms_agent {
    log_analytics_workspace_id      = azurerm_log_analytics_workspace.this.id
    msi_auth_for_monitoring_enabled = true
  }

  default_node_pool {
    name                         = "system"
    vm_size                      = var.system_vm_size
    node_count                   = var.system_node_count
    only_critical_addons_enabled = true
    vnet_subnet_id               = azurerm_subnet.nodes.id
    max_pods                     = var.max_pods
    host_encryption_enabled      = var.host_encryption_enabled
    temporary_name_for_rotation  = "systemtmp"

    upgrade_settings {
      max_surge = "10%"
    }
  }

  identity {
    type = "SystemAssigned"
  }

  network_profile {
    network_plugin      = "azure"
    network_plugin_mode = "overlay"
    network_data_plane  = "cilium"
    network_policy      = "cilium"
    load_balancer_sku   = "standard"
  }

  tags = local.tags

  depends_on = [azurerm_subnet_network_security_group_association.nodes]
}

# AKS manages load balancers and routes in the bring-your-own subnet.
resource "azurerm_role_assignment" "aks_network_contributor" {
  scope                = azurerm_subnet.nodes.id
  role_definition_name = "Network Contributor"
  principal_id         = azurerm_kubernetes_cluster.this.identity[0].principal_id
  principal_type       = "ServicePrincipal"
}

# Whoever runs Terraform writes ConfigMap flux-system/cluster-vars through the kubernetes
# provider (flux.tf), which needs Kubernetes RBAC on an Entra-only cluster.
resource "azurerm_role_assignment" "deployer_cluster_admin" {
  scope                = azurerm_kubernetes_cluster.this.id
  role_definition_name = "Azure Kubernetes Service RBAC Cluster Admin"
  principal_id         = data.azurerm_client_config.current.object_id
}
