# GitOps bootstrap in the same apply: the AKS Flux extension (Flux controllers in
# flux-system), ConfigMap flux-system/cluster-vars with what only Terraform knows, then
# a Flux configuration named "flux-system" whose GitRepository (also "flux-system", the
# sourceRef of clusters/<name>/*.yaml) syncs this repository and whose one kustomization
# reconciles clusters/<cluster_name>. That path's Flux Kustomizations do the rest:
# infra-controllers (Kueue, KubeRay) and then queues, which substitutes cluster-vars.

resource "azurerm_kubernetes_cluster_extension" "flux" {
  name           = "flux"
  cluster_id     = azurerm_kubernetes_cluster.this.id
  extension_type = "microsoft.flux"
  release_train  = "Stable"

  # The extension's default multi-tenancy mode (no cross-namespace references, Kustomizations
  # applied as flux-applier) suits this repository: every source and consumer is in flux-system.

  depends_on = [azurerm_kubernetes_cluster_node_pool.gpu, azurerm_kubernetes_cluster_node_pool.cpu]
}

resource "kubernetes_config_map_v1" "cluster_vars" {
  metadata {
    name      = "cluster-vars"
    namespace = "flux-system"
    labels = {
      "app.kubernetes.io/managed-by" = "terraform"
    }
  }

  data = local.cluster_vars

  # flux-system is created by the extension; the role assignment lets the kubernetes
  # provider write into it.
  depends_on = [azurerm_kubernetes_cluster_extension.flux, azurerm_role_assignment.deployer_cluster_admin]
}

resource "azurerm_kubernetes_flux_configuration" "this" {
  name       = "flux-system"
  cluster_id = azurerm_kubernetes_cluster.this.id
  namespace  = "flux-system"
  scope      = "cluster"

  git_repository {
    url                      = var.gitops_repository_url
    reference_type           = "branch"
    reference_value          = var.gitops_branch
    sync_interval_in_seconds = var.flux_sync_interval_seconds
    timeout_in_seconds       = 180
  }

  kustomizations {
    name                       = "cluster"
    path                       = "./clusters/${var.cluster_name}"
    sync_interval_in_seconds   = var.flux_sync_interval_seconds
    retry_interval_in_seconds  = 60
    timeout_in_seconds         = 600
    garbage_collection_enabled = true
    wait                       = true
  }

  # cluster-vars must exist before the queues layer first renders.
  depends_on = [kubernetes_config_map_v1.cluster_vars, azurerm_federated_identity_credential.ray_workload,
  azurerm_role_assignment.ray_workload_blob]
}
