"""Clusters to run the behaviour on: the embedded control plane (etcd, kube-apiserver,
kube-controller-manager) with the real Kueue and KubeRay operator as local processes, the kind
and existing backends, process hygiene, and the names that keep a run in its own lane.

    processes    child processes: start, readiness, stop, never one left behind
    certs        a throwaway CA and the certificates it issues
    controlplane etcd, kube-apiserver, kube-controller-manager (envtest's ControlPlane)
    operators    Kueue and KubeRay configured like their HelmReleases; Kueue's webhooks
    kueue_certs  Kueue's webhook Service and its own cert rotator, the kubelet's Secret volume played here
    seed         the cached etcd data that already holds the CRDs
    nodes        kube-scheduler and KWOK (simulated kubelets), Nodes from a cluster's Terraform pools
    local_cluster  LocalCluster: all of it, and the faults the fault tests inject
    backends     local, kind and existing: one interface for the behaviour tests
    kind_cluster KindPlan (the kind backend's commands and files, checkable without Docker) and KindCluster
    kind_install the pinned Kueue and KubeRay into a kind cluster
    __main__     `python -m harness.cluster` (make cluster)
"""
from harness.cluster.backends import docker_problem
from harness.cluster.isolation import Names
from harness.cluster.kind_cluster import KindCluster, KindError, KindPlan, kind_plan, node_image, run_name
from harness.cluster.local_cluster import ClusterError, LocalCluster
from harness.cluster.nodes import PoolNodes, add_nodes, node_objects, remove_nodes
from harness.cluster.operators import kueue_effective_config, local_kueue_config, production_kueue_config
from harness.cluster.processes import (Process, ProcessError, Startable, free_port, http_check, port_is_free, running,
                                       session_popen, stop_in_reverse, wait_until)

__all__ = ["ClusterError", "KindCluster", "KindError", "KindPlan", "LocalCluster", "Names", "PoolNodes", "Process", "ProcessError", "Startable", "add_nodes", "docker_problem",
           "free_port", "http_check", "kind_plan", "kueue_effective_config", "local_kueue_config", "node_objects", "port_is_free", "node_image", "production_kueue_config", "remove_nodes",
           "run_name", "running", "session_popen", "stop_in_reverse", "wait_until"]
