# Cluster dev-westus3: single-queue layout (clusters/dev-westus3/queues), quotas from
# components/gpu-sku/standard-nc24ads-a100-v4 (one A100 80GB, 24 vCPU).
#
#   terraform apply -var-file=clusters/dev-westus3.tfvars -var subscription_id=... \
#     -var 'api_server_authorized_ip_ranges=["<your egress IP>/32"]'
cluster_name          = "dev-westus3"
location              = "westus3"
gitops_repository_url = "https://github.com/example-org/aks-ray-kueue-gitops.git" # your fork

gpu_vm_size    = "Standard_NC24ads_A100_v4"
gpu_node_count = 1
gpu_sku_label  = "a100"

system_node_count = 1 # dev: no HA for add-ons

tags = { scenario = "kueue-and-ray-on-aks", environment = "dev" }
