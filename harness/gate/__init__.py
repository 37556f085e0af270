"""The offline static gate: the repository rendered as Flux renders it, every object validated
strictly against the pinned schemas, then the cross-resource, capacity and Terraform rules.
Findings name the file and line, the resource, the rule and the fix.

    scripts/validate [REPO_DIR] [--format FORMAT[=DEST]]... [--version]   (entry point ray-kueue-validate)
"""
from harness.gate.capacity import FlavorCapacity, flavor_capacities
from harness.gate.findings import Finding
from harness.gate.pools import NodeSpec, Pool, cluster_nodes, node_pools
from harness.gate.render import (ClusterRender, RenderError, build_directory, cluster_dirs, is_component,
                                 is_flux_kustomization, render_cluster, render_repository)
from harness.gate.scheduling import node_objects
from harness.gate.schema_check import kubeconform_args
from harness.gate.schemas import CRD_SOURCES, schema_dir
from harness.gate.sources import kustomization_dirs, parse_yaml, parse_yaml_all
from harness.gate.terraform import TFVARS_DIR, TerraformError
from harness.gate.validate import RULE_IDS, validate_repository
from harness.gate.workloads import pod_sets, render as render_sample, sample_names

__all__ = ["CRD_SOURCES", "RULE_IDS", "TFVARS_DIR", "ClusterRender", "Finding", "FlavorCapacity", "NodeSpec", "Pool", "RenderError", "TerraformError",
           "build_directory", "cluster_dirs", "cluster_nodes", "flavor_capacities", "is_component", "is_flux_kustomization",
           "kubeconform_args", "kustomization_dirs", "node_objects", "node_pools", "parse_yaml", "parse_yaml_all", "pod_sets", "render_cluster",
           "render_repository", "render_sample", "sample_names", "schema_dir", "validate_repository"]
