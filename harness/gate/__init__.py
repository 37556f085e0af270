"""The offline static gate: the repository rendered as Flux renders it, every object validated
strictly against the pinned schemas, then the cross-resource, capacity and Terraform rules.
Findings name the file and line, the resource, the rule and the fix.

    scripts/validate [REPO_DIR] [--format FORMAT[=DEST]]... [--version]   (entry point ray-kueue-validate)

The public names below load their module on first use (PEP 562), so that the entry point
(harness.gate.entry) can start the Go helpers before the rest of the gate is imported.
"""
from __future__ import annotations

import importlib
from pathlib import Path

# Directories that hold no configuration of a checked repository (fluxbuild's copy leaves them out too); here, so that
# the entry point can hand them to the helper it starts before the rest of the gate loads.
SKIP_DIRS = frozenset({".git", ".venv", "build", "__pycache__", ".pytest_cache", "node_modules", ".terraform"})

# The JSON schemas of the files the gate reads and writes (the harness's package data; a plain path, without
# importlib.resources, about 7 ms of the gate's 85 ms of imports: the package is never run from a zip).
DATA_SCHEMAS = Path(__file__).resolve().parent.parent / "schemas-for-data"

# Public name -> (module of this package, its name there).
_EXPORTS = {
    "FlavorCapacity": ("quota", "FlavorCapacity"), "flavor_capacities": ("quota", "flavor_capacities"),
    "Finding": ("findings", "Finding"),
    "NodeSpec": ("pools", "NodeSpec"), "Pool": ("pools", "Pool"), "cluster_nodes": ("pools", "cluster_nodes"), "node_pools": ("pools", "node_pools"),
    "ClusterRender": ("render", "ClusterRender"), "RenderError": ("render", "RenderError"), "build_directory": ("render", "build_directory"),
    "cluster_dirs": ("render", "cluster_dirs"), "is_component": ("render", "is_component"),
    "is_flux_kustomization": ("render", "is_flux_kustomization"), "render_cluster": ("render", "render_cluster"),
    "render_repository": ("render", "render_repository"),
    "node_objects": ("scheduling", "node_objects"), "GPU_LABELS": ("node_labels", "GPU_LABELS"),
    "kubeconform_args": ("schema_check", "kubeconform_args"),
    "CRD_SOURCES": ("schemas", "CRD_SOURCES"), "schema_dir": ("schemas", "schema_dir"),
    "kustomization_dirs": ("sources", "kustomization_dirs"), "kustomization_file": ("sources", "kustomization_file"),
    "parse_yaml": ("sources", "parse_yaml"), "Build": ("render", "Build"),
    "parse_yaml_all": ("sources", "parse_yaml_all"),
    "TFVARS_DIR": ("terraform", "TFVARS_DIR"), "TerraformError": ("terraform", "TerraformError"), "tfvars_rel": ("terraform", "tfvars_rel"),
    "RULE_IDS": ("validate", "RULE_IDS"), "validate_repository": ("validate", "validate_repository"),
    "KUEUE_GATES_PATH": ("kueue_manager", "GATES_PATH"), "KUBERAY_GATES_PATH": ("kueue_manager", "KUBERAY_GATES_PATH"),
    "flags_of": ("kueue_manager", "flags_of"), "values_gates": ("kueue_manager", "values_gates"),
    "missing_ref_hint": ("updates", "missing_ref_hint"),
    "pod_sets": ("workloads", "pod_sets"), "render_sample": ("workloads", "render"), "sample_names": ("workloads", "sample_names"),
    "sample_queues": ("sample_rules", "sample_queues"), "size_words": ("autoscaling", "size_words"),
}
__all__ = sorted([*_EXPORTS, "SKIP_DIRS", "DATA_SCHEMAS"])


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
