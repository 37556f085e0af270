# User node pools, where Ray pods run. Neither is tainted: Kueue's `gpu` flavor selects GPU
# nodes by the label kubernetes.azure.com/accelerator=nvidia, which AKS sets on GPU nodes itself
# (it is reserved and cannot be set in node_labels), and the `default` flavor has no node labels, so pods
# without GPUs may land on either pool.
#
# The capacity checks (harness/gate/capacity.py) read these resources: vm_size x node_count,
# from clusters/<cluster>.tfvars over the variable defaults, against the table in
# harness/gate/sku.yaml.

resource "azurerm_kubernetes_cluster_node_pool" "gpu" {
  count = var.gpu_node_count > 0 ? 1 : 0

  name                    = var.gpu_node_pool_name
  kubernetes_cluster_id   = azurerm_kubernetes_cluster.this.id
  mode                    = "User"
  vm_size                 = var.gpu_vm_size
  node_count              = var.gpu_node_count
  os_sku                  = var.gpu_os_sku
  zones                   = var.gpu_zones
  vnet_subnet_id          = azurerm_subnet.nodes.id
  max_pods                = var.max_pods
  host_encryption_enabled = var.host_encryption_enabled
  # Set explicitly, as the AKS sample does, so Terraform does not see a diff against the API default.
  gpu_driver  = var.gpu_driver
  node_labels = { "aks.azure.com/gpu-sku" = var.gpu_sku_label }
  node_taints = []

  upgrade_settings {
    max_surge = "10%"
  }

  tags = local.tags
}

resource "azurerm_kubernetes_cluster_node_pool" "cpu" {
  count = var.cpu_node_count > 0 ? 1 : 0

  name                    = var.cpu_node_pool_name
  kubernetes_cluster_id   = azurerm_kubernetes_cluster.this.id
  mode                    = "User"
  vm_size                 = var.cpu_vm_size
  node_count              = var.cpu_node_count
  vnet_subnet_id          = azurerm_subnet.nodes.id
  max_pods                = var.max_pods
  host_encryption_enabled = var.host_encryption_enabled
  node_labels             = {}
  node_taints             = []

  upgrade_settings {
    max_surge = "10%"
  }

  tags = local.tags
}
