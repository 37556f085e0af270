# Cluster prod-eastus2: team-queues layout (clusters/prod-eastus2/queues), quotas from
# components/gpu-sku/standard-nd96amsr-a100-v4. Changing the GPU SKU or count here without
# the matching gpu-sku component fails the static gate (harness/gate/capacity.py).
#
#   terraform apply -var-file=clusters/prod-eastus2.tfvars -var subscription_id=... \
#     -var 'api_server_authorized_ip_ranges=["<your egress IP>/32"]'
cluster_name          = "prod-eastus2"
location              = "eastus2"
gitops_repository_url = "https://github.com/example-org/aks-ray-kueue-gitops.git" # your fork

gpu_vm_size    = "Standard_ND96amsr_A100_v4"
gpu_node_count = 1
gpu_sku_label  = "a100"

tags = { scenario = "kueue-and-ray-on-aks", environment = "prod" }
