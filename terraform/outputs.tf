# Outputs are for people and other tooling; the cluster itself gets everything it needs
# through ConfigMap flux-system/cluster-vars (flux.tf), so nothing here is applied by hand.

output "resource_group_name" {
  description = "Resource group holding the cluster, network, storage and identity."
  value       = azurerm_resource_group.this.name
}

output "cluster_name" {
  description = "AKS cluster name."
  value       = azurerm_kubernetes_cluster.this.name
}

output "get_credentials_command" {
  description = "Command that writes a kubeconfig for this cluster (Entra ID; run `kubelogin convert-kubeconfig -l azurecli` after it)."
  value       = "az aks get-credentials --resource-group ${azurerm_resource_group.this.name} --name ${azurerm_kubernetes_cluster.this.name} --overwrite-existing"
}

output "oidc_issuer_url" {
  description = "OIDC issuer of the cluster, trusted by the federated credential."
  value       = azurerm_kubernetes_cluster.this.oidc_issuer_url
}

output "node_pools" {
  description = "User node pools Ray pods can use: name, VM size and node count (what the capacity checks assume)."
  value = merge(
    { for p in azurerm_kubernetes_cluster_node_pool.gpu : p.name => { vm_size = p.vm_size, node_count = p.node_count } },
    { for p in azurerm_kubernetes_cluster_node_pool.cpu : p.name => { vm_size = p.vm_size, node_count = p.node_count } },
  )
}

output "storage_account_name" {
  description = "Storage account for Ray inputs and outputs (also in cluster-vars as AZURE_STORAGE_ACCOUNT_NAME)."
  value       = azurerm_storage_account.this.name
}

output "storage_containers" {
  description = "Blob containers created in the storage account."
  value       = sort([for c in azurerm_storage_container.this : c.name])
}

output "workload_identity_client_id" {
  description = "Client id of the identity Ray pods use (cluster-vars WORKLOAD_IDENTITY_CLIENT_ID)."
  value       = azurerm_user_assigned_identity.ray_workload.client_id
}

output "workload_identity_subject" {
  description = "The one Kubernetes subject the federated credential trusts."
  value       = azurerm_federated_identity_credential.ray_workload.subject
}

output "tenant_id" {
  description = "Entra ID tenant (cluster-vars AZURE_TENANT_ID)."
  value       = data.azurerm_client_config.current.tenant_id
}

output "cluster_vars" {
  description = "Data of ConfigMap flux-system/cluster-vars as written to the cluster."
  value       = kubernetes_config_map_v1.cluster_vars.data
}

output "flux_configuration_id" {
  description = "Resource id of the Flux configuration that reconciles clusters/<cluster_name>."
  value       = azurerm_kubernetes_flux_configuration.this.id
}
