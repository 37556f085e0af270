# Workload identity for Ray pods: a user-assigned identity with blob access, trusted for
# exactly one Kubernetes ServiceAccount through a federated credential on the cluster's
# OIDC issuer. The ServiceAccount itself is in Git (base/service-account.yaml); its
# client-id and tenant-id annotations come from ConfigMap cluster-vars (flux.tf).

resource "azurerm_user_assigned_identity" "ray_workload" {
  name                = var.workload_identity_name
  location            = azurerm_resource_group.this.location
  resource_group_name = azurerm_resource_group.this.name
  tags                = local.tags
}

resource "azurerm_role_assignment" "ray_workload_blob" {
  scope                = azurerm_storage_account.this.id
  role_definition_name = "Storage Blob Data Contributor"
  principal_id         = azurerm_user_assigned_identity.ray_workload.principal_id
  # Set explicitly: avoids PrincipalNotFound while the new identity replicates in Entra ID.
  principal_type = "ServicePrincipal"
}

resource "azurerm_federated_identity_credential" "ray_workload" {
  name                = "ray-workload-federated"
  resource_group_name = azurerm_resource_group.this.name
  parent_id           = azurerm_user_assigned_identity.ray_workload.id
  audience            = ["api://AzureADTokenExchange"]
  issuer              = azurerm_kubernetes_cluster.this.oidc_issuer_url
  subject             = local.workload_subject
}
