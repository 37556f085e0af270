# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.
#
# Written by hand: this repository's build machines cannot reach the Terraform registry, so
# the versions are pinned here without hashes. Before the first apply, run once (with
# registry access) and commit the result:
#   terraform -chdir=terraform providers lock \
#     -platform=linux_amd64 -platform=darwin_arm64 -platform=windows_amd64
# which adds the zh:/h1: hashes of the official releases for those platforms.

provider "registry.terraform.io/hashicorp/azurerm" {
  version     = "4.77.0"
  constraints = "~> 4.0"
}

provider "registry.terraform.io/hashicorp/kubernetes" {
  version     = "2.38.0"
  constraints = "~> 2.38"
}

provider "registry.terraform.io/hashicorp/random" {
  version     = "3.9.0"
  constraints = "~> 3.7"
}
