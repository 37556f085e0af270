# Inputs. Per-cluster values live in clusters/<cluster>.tfvars; the capacity checks read
# the same files, so what is applied and what is checked cannot drift apart.

# -- Subscription and names ---------------------------------------------------------------
variable "subscription_id" {
  description = "Azure subscription to deploy into."
  type        = string
  validation {
    condition     = can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", var.subscription_id))
    error_message = "subscription_id must be a GUID."
  }
}

variable "cluster_name" {
  description = "AKS cluster name and DNS prefix; also the folder clusters/<cluster_name> Flux reconciles."
  type        = string
  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{0,53}$", var.cluster_name))
    error_message = "cluster_name must start with a lowercase letter and have at most 54 lowercase letters, digits or hyphens."
  }
}

variable "location" {
  description = "Azure region, e.g. eastus2."
  type        = string
  default     = "eastus2"
  validation {
    condition     = can(regex("^[a-z][a-z0-9]+$", var.location))
    error_message = "location must be a region name such as eastus2 (lowercase, no spaces)."
  }
}

variable "resource_group_name" {
  description = "Resource group to create; empty means rg-<cluster_name>."
  type        = string
  default     = ""
  validation {
    condition     = var.resource_group_name == "" || can(regex("^[-\\w\\._\\(\\)]{1,90}$", var.resource_group_name))
    error_message = "resource_group_name must be empty or 1-90 letters, digits, '-', '_', '.', '(' or ')'."
  }
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = { scenario = "kueue-and-ray-on-aks" }
}

# -- Cluster ----------------------------------------------------------------------------------
variable "kubernetes_version" {
  description = "AKS Kubernetes version (minor alias such as 1.35, or a full patch version)."
  type        = string
  default     = "1.35"
  validation {
    condition     = can(regex("^1\\.[0-9]+(\\.[0-9]+)?$", var.kubernetes_version))
    error_message = "kubernetes_version must look like 1.35 or 1.35.2."
  }
}

variable "sku_tier" {
  description = "AKS control plane tier."
  type        = string
  default     = "Standard"
  validation {
    condition     = contains(["Standard", "Premium"], var.sku_tier)
    error_message = "sku_tier must be Standard or Premium (Free has no uptime SLA)."
  }
}

variable "api_server_authorized_ip_ranges" {
  description = "CIDR ranges allowed to reach the Kubernetes API (operators, CI, the Terraform runner)."
  type        = list(string)
  validation {
    condition     = length(var.api_server_authorized_ip_ranges) > 0 && alltrue([for c in var.api_server_authorized_ip_ranges : can(cidrhost(c, 0))])
    error_message = "api_server_authorized_ip_ranges must list at least one valid CIDR."
  }
}

variable "kubelogin_login_mode" {
  description = "kubelogin --login mode for the kubernetes provider: azurecli (a person) or workloadidentity / msi / spn (CI)."
  type        = string
  default     = "azurecli"
  validation {
    condition     = contains(["azurecli", "devicecode", "spn", "msi", "workloadidentity"], var.kubelogin_login_mode)
    error_message = "kubelogin_login_mode must be one of azurecli, devicecode, spn, msi, workloadidentity."
  }
}

variable "max_pods" {
  description = "Maximum pods per node on every pool (also sets the kubelet memory reservation, see harness/gate/sku.yaml)."
  type        = number
  default     = 110
  validation {
    condition     = var.max_pods >= 50 && var.max_pods <= 250
    error_message = "max_pods must be between 50 and 250."
  }
}

variable "host_encryption_enabled" {
  description = "Encrypt temp disks, caches and disk traffic on the node hosts (needs the Microsoft.Compute/EncryptionAtHost feature registered on the subscription)."
  type        = bool
  default     = true
}

# -- Network ------------------------------------------------------------------------------------
variable "vnet_cidr" {
  description = "Address space of the cluster's virtual network."
  type        = string
  default     = "10.240.0.0/16"
  validation {
    condition     = can(cidrhost(var.vnet_cidr, 0))
    error_message = "vnet_cidr must be a CIDR."
  }
}

variable "nodes_subnet_cidr" {
  description = "Node subnet (pods use the overlay range, so a /22 is plenty)."
  type        = string
  default     = "10.240.0.0/22"
  validation {
    condition     = can(cidrhost(var.nodes_subnet_cidr, 0))
    error_message = "nodes_subnet_cidr must be a CIDR."
  }
}

# -- System pool ----------------------------------------------------------------------------------
variable "system_vm_size" {
  description = "VM size of the system pool (tainted CriticalAddonsOnly; runs no Ray pods)."
  type        = string
  default     = "Standard_D4ds_v6"
  validation {
    condition     = can(regex("^Standard_[A-Za-z0-9_]+$", var.system_vm_size))
    error_message = "system_vm_size must be an Azure VM size such as Standard_D4ds_v6."
  }
}

variable "system_node_count" {
  description = "Nodes in the system pool."
  type        = number
  default     = 2
  validation {
    condition     = var.system_node_count >= 1 && var.system_node_count <= 10
    error_message = "system_node_count must be between 1 and 10."
  }
}

# -- GPU pool ---------------------------------------------------------------------------------------
variable "gpu_node_pool_name" {
  description = "Name of the GPU node pool (AKS label kubernetes.azure.com/agentpool=<name>)."
  type        = string
  default     = "gpupool"
  validation {
    condition     = can(regex("^[a-z][a-z0-9]{0,11}$", var.gpu_node_pool_name))
    error_message = "gpu_node_pool_name must be a lowercase letter then up to 11 lowercase letters or digits (azurerm's agent pool name)."
  }
}

variable "gpu_vm_size" {
  description = "GPU VM size; the queue quotas come from components/gpu-sku/<sku> and must match it."
  type        = string
  default     = "Standard_ND96amsr_A100_v4"
  validation {
    condition     = can(regex("^Standard_N[A-Za-z0-9_]+$", var.gpu_vm_size))
    error_message = "gpu_vm_size must be an N-series VM size such as Standard_ND96amsr_A100_v4."
  }
}

variable "gpu_node_count" {
  description = "Nodes in the GPU pool; 0 leaves the pool out."
  type        = number
  default     = 1
  validation {
    condition     = var.gpu_node_count >= 0 && var.gpu_node_count <= 100 && floor(var.gpu_node_count) == var.gpu_node_count
    error_message = "gpu_node_count must be a whole number between 0 and 100."
  }
}

variable "gpu_driver" {
  description = "AKS GPU driver installation: Install (AKS installs the NVIDIA driver) or None (bring your own, e.g. the GPU Operator)."
  type        = string
  default     = "Install"
  validation {
    condition     = contains(["Install", "None"], var.gpu_driver)
    error_message = "gpu_driver must be Install or None."
  }
}

variable "gpu_os_sku" {
  description = "OS of the GPU nodes."
  type        = string
  default     = "Ubuntu"
  validation {
    condition     = contains(["Ubuntu", "AzureLinux"], var.gpu_os_sku)
    error_message = "gpu_os_sku must be Ubuntu or AzureLinux."
  }
}

variable "gpu_zones" {
  description = "Availability zones of the GPU pool; null lets Azure choose (GPU SKUs are often not in every zone)."
  type        = list(string)
  default     = null
  validation {
    condition     = var.gpu_zones == null || alltrue([for z in coalesce(var.gpu_zones, []) : contains(["1", "2", "3"], z)])
    error_message = "gpu_zones must be null or a list of \"1\", \"2\", \"3\"."
  }
}

variable "gpu_sku_label" {
  description = "Value of node label aks.azure.com/gpu-sku on GPU nodes (used by GPU monitoring)."
  type        = string
  default     = "a100"
  validation {
    condition     = can(regex("^[a-z0-9]+$", var.gpu_sku_label))
    error_message = "gpu_sku_label must be lowercase letters and digits, e.g. a100 or h100."
  }
}

# -- Optional CPU pool -----------------------------------------------------------------------------
variable "cpu_node_pool_name" {
  description = "Name of the optional CPU node pool."
  type        = string
  default     = "cpupool"
  validation {
    condition     = can(regex("^[a-z][a-z0-9]{0,11}$", var.cpu_node_pool_name))
    error_message = "cpu_node_pool_name must be a lowercase letter then up to 11 lowercase letters or digits (azurerm's agent pool name)."
  }
}

variable "cpu_vm_size" {
  description = "VM size of the optional CPU pool."
  type        = string
  default     = "Standard_D8ds_v6"
  validation {
    condition     = can(regex("^Standard_[A-Za-z0-9_]+$", var.cpu_vm_size))
    error_message = "cpu_vm_size must be an Azure VM size such as Standard_D8ds_v6."
  }
}

variable "cpu_node_count" {
  description = "Nodes in the optional CPU pool; 0 (the default) leaves the pool out."
  type        = number
  default     = 0
  validation {
    condition     = var.cpu_node_count >= 0 && var.cpu_node_count <= 100 && floor(var.cpu_node_count) == var.cpu_node_count
    error_message = "cpu_node_count must be a whole number between 0 and 100."
  }
}

# -- Storage -------------------------------------------------------------------------------------------
variable "storage_account_name" {
  description = "Storage account name; empty generates <prefix><8 random characters>."
  type        = string
  default     = ""
  validation {
    condition     = var.storage_account_name == "" || can(regex("^[a-z0-9]{3,24}$", var.storage_account_name))
    error_message = "storage_account_name must be empty or 3-24 lowercase letters and digits."
  }
}

variable "storage_account_name_prefix" {
  description = "Prefix of the generated storage account name."
  type        = string
  default     = "rayaks"
  validation {
    condition     = can(regex("^[a-z0-9]{3,16}$", var.storage_account_name_prefix))
    error_message = "storage_account_name_prefix must be 3-16 lowercase letters and digits."
  }
}

variable "storage_replication_type" {
  description = "Replication of the storage account."
  type        = string
  default     = "GZRS"
  validation {
    condition     = contains(["ZRS", "GRS", "GZRS", "RAGRS", "RAGZRS"], var.storage_replication_type)
    error_message = "storage_replication_type must be ZRS, GRS, GZRS, RAGRS or RAGZRS."
  }
}

variable "storage_containers" {
  description = "Blob containers; llm-pipeline is the name the llm-training sample expects."
  type        = list(string)
  default     = ["aurora", "llm-pipeline"]
  validation {
    condition     = alltrue([for c in var.storage_containers : can(regex("^[a-z0-9](-?[a-z0-9]){2,62}$", c))])
    error_message = "each container name must be 3-63 lowercase letters, digits and single hyphens."
  }
}

variable "storage_allowed_ip_rules" {
  description = "Public IPv4 addresses or CIDR ranges allowed through the storage firewall, e.g. for data uploads (Azure rejects /31 and /32: give single addresses without a prefix)."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for r in var.storage_allowed_ip_rules : can(regex("^[0-9]{1,3}(\\.[0-9]{1,3}){3}(/[0-9]{1,2})?$", r))])
    error_message = "storage_allowed_ip_rules must be IPv4 addresses or CIDR ranges."
  }
}

variable "storage_retention_days" {
  description = "Soft-delete retention for blobs and containers."
  type        = number
  default     = 7
  validation {
    condition     = var.storage_retention_days >= 1 && var.storage_retention_days <= 365
    error_message = "storage_retention_days must be between 1 and 365."
  }
}

variable "log_retention_days" {
  description = "Log Analytics retention."
  type        = number
  default     = 30
  validation {
    condition     = var.log_retention_days >= 30 && var.log_retention_days <= 730
    error_message = "log_retention_days must be between 30 and 730."
  }
}

# -- Workload identity ---------------------------------------------------------------------------------
variable "workload_identity_name" {
  description = "Name of the user-assigned identity Ray pods use."
  type        = string
  default     = "ray-workload-identity"
  validation {
    condition     = can(regex("^[a-zA-Z0-9][-a-zA-Z0-9_]{2,127}$", var.workload_identity_name))
    error_message = "workload_identity_name must be 3-128 letters, digits, '-' or '_'."
  }
}

variable "workload_namespace" {
  description = "Namespace of the workload ServiceAccount (base/service-account.yaml: ray)."
  type        = string
  default     = "ray"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.workload_namespace))
    error_message = "workload_namespace must be a DNS-1123 label."
  }
}

variable "workload_service_account_name" {
  description = "Name of the workload ServiceAccount (base/service-account.yaml: ray-workload)."
  type        = string
  default     = "ray-workload"
  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.workload_service_account_name))
    error_message = "workload_service_account_name must be a DNS-1123 label."
  }
}

# -- GitOps ---------------------------------------------------------------------------------------------
variable "gitops_repository_url" {
  description = "URL of this repository (your fork) that Flux syncs."
  type        = string
  validation {
    condition     = can(regex("^(https://|ssh://|git@)", var.gitops_repository_url))
    error_message = "gitops_repository_url must start with https://, ssh:// or git@."
  }
}

variable "gitops_branch" {
  description = "Branch Flux follows."
  type        = string
  default     = "main"
  validation {
    condition     = length(var.gitops_branch) > 0
    error_message = "gitops_branch must not be empty."
  }
}

variable "flux_sync_interval_seconds" {
  description = "How often Flux fetches the repository and re-applies the cluster folder."
  type        = number
  default     = 300
  validation {
    condition     = var.flux_sync_interval_seconds >= 60 && var.flux_sync_interval_seconds <= 3600
    error_message = "flux_sync_interval_seconds must be between 60 and 3600."
  }
}
