"""Clusters to run the behaviour on: the embedded control plane (etcd, kube-apiserver,
kube-controller-manager) with the real Kueue and KubeRay operator as local processes, the kind
and existing backends, process hygiene, and the names that keep a run in its own lane."""
from harness.cluster.backends import docker_problem
from harness.cluster.isolation import Names
from harness.cluster.local_cluster import (ClusterError, LocalCluster, crd_documents, local_kueue_config,
                                           production_kueue_config, server_side_apply, wait_crds_established)
from harness.cluster.processes import (Process, ProcessError, free_port, http_check, port_is_free, stop_in_reverse,
                                       wait_until)

__all__ = ["ClusterError", "LocalCluster", "Names", "Process", "ProcessError", "crd_documents", "docker_problem",
           "free_port", "http_check", "local_kueue_config", "port_is_free", "production_kueue_config",
           "server_side_apply", "stop_in_reverse", "wait_crds_established", "wait_until"]
