# The node subnet. Pods use Azure CNI overlay addresses and leave through the node IPs, so
# the Microsoft.Storage service endpoint on this subnet is what lets Ray pods reach the
# storage account while its firewall denies everything else.

resource "azurerm_virtual_network" "this" {
  name                = "vnet-${var.cluster_name}"
  location            = azurerm_resource_group.this.location
  resource_group_name = azurerm_resource_group.this.name
  address_space       = [var.vnet_cidr]
  tags                = local.tags
}

resource "azurerm_subnet" "nodes" {
  name                 = "snet-nodes"
  resource_group_name  = azurerm_resource_group.this.name
  virtual_network_name = azurerm_virtual_network.this.name
  address_prefixes     = [var.nodes_subnet_cidr]
  service_endpoints    = ["Microsoft.Storage"]
}

# No custom rules: the default rules allow VNet and load balancer traffic, which is all AKS
# needs; AKS adds its own rules for Services in the node resource group.
resource "azurerm_network_security_group" "nodes" {
  name                = "nsg-${var.cluster_name}-nodes"
  location            = azurerm_resource_group.this.location
  resource_group_name = azurerm_resource_group.this.name
  tags                = local.tags
}

resource "azurerm_subnet_network_security_group_association" "nodes" {
  subnet_id                 = azurerm_subnet.nodes.id
  network_security_group_id = azurerm_network_security_group.nodes.id
}
