provider "azurerm" {
  features {}
  subscription_id = var.subscription_id
  # Shared keys are disabled on the storage account, so the provider talks to the
  # storage data plane with Entra ID tokens.
  storage_use_azuread = true
}

# Writes ConfigMap flux-system/cluster-vars. Local accounts are disabled on the cluster,
# so the provider authenticates with Entra ID through kubelogin (the az CLI login of whoever
# runs Terraform; azurerm_role_assignment.deployer_cluster_admin grants the RBAC role).
# The server id is the fixed application id of the AKS AAD server.
provider "kubernetes" {
  host                   = azurerm_kubernetes_cluster.this.kube_config[0].host
  cluster_ca_certificate = base64decode(azurerm_kubernetes_cluster.this.kube_config[0].cluster_ca_certificate)

  exec {
    api_version = "client.authentication.k8s.io/v1beta1"
    command     = "kubelogin"
    args        = ["get-token", "--login", var.kubelogin_login_mode, "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630"]
  }
}
