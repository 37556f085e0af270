"""Pods on nodes: the real kube-scheduler and KWOK's simulated kubelets, and the Node objects of a
cluster's Terraform node pools.

kube-scheduler (the same k8s.io/kubernetes build as kube-apiserver) binds pods; KWOK
(sigs.k8s.io/kwok) plays the kubelet of every node annotated `kwok.x-k8s.io/node: fake`, with
its own ready-made stages from the pinned module (`kustomize/stage`): node-initialize and
node-heartbeat-with-lease (nodes Ready, so the node-lifecycle controller lifts the `not-ready`
taint; that stage refreshes a node's status only every 10-20 minutes and relies on KWOK renewing
the node's Lease, which `--node-lease-duration-seconds` turns on: without it every node turns
NotReady after the controller's 50 s grace period, the controller marks its pods not Ready, and
KWOK, whose pod stages only act on Pending pods, never makes them Ready again), pod-ready (a
bound pod becomes Running and Ready) and pod-delete (a deleted pod goes away). pod-complete is left out on purpose: a RayJob's submitter would succeed without
Ray ever running the job, and KubeRay would then fail the RayJob ("Ray job not found"); the job's
result is the one thing the harness supplies instead (`harness.kueue.finish_rayjob`).

The nodes are the pools of `harness.gate.cluster_nodes` (terraform/ and the cluster's tfvars, the
SKU table): one Node per pool node, autoscaling pools at their maximum, with the labels and taints
AKS gives them and the SKU's capacity and allocatable, the system pool included.
"""
from __future__ import annotations

from pathlib import Path

from harness.cluster.processes import Process
from harness.core import say, timeouts
from harness.gate import NodeSpec, cluster_nodes, size_words
from harness.gate import node_objects as gate_node_objects
from harness.k8s import POD, is_true

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-delete.yaml",
)
NODE_LEASE_SECONDS = 40  # kwokctl's and the kubelet's default; KWOK renews at a quarter of it
POD_CIDR = "10.0.0.0/16"  # KWOK's default /24 holds ~254 pods; the scale runs create thousands


def scheduler_process(binary: Path, kubeconfig: Path, port: int, log_dir: Path, workdir: Path) -> Process:
    say("cluster", "starting kube-scheduler")
    return Process("kube-scheduler", [
        binary, f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={port}",
    ], log_dir, cwd=workdir).start()


def kwok_process(binary: Path, kwok_src: Path, kubeconfig: Path, port: int, log_dir: Path, workdir: Path) -> Process:
    stages = [kwok_src / "kustomize" / "stage" / s for s in KWOK_STAGES]
    missing = [str(s) for s in stages if not s.is_file()]
    if missing:
        raise FileNotFoundError(f"KWOK stage files missing from the pinned module: {', '.join(missing)}")
    say("cluster", "starting KWOK (simulated kubelets)")
    return Process("kwok", [
        binary, f"--kubeconfig={kubeconfig}",
        f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
        f"--cidr={POD_CIDR}", "--node-ip=10.0.0.1", f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
        f"--server-address=127.0.0.1:{port}",
        *[f"--config={s}" for s in stages],
    ], log_dir, cwd=workdir).start()


def node_objects(specs: list[NodeSpec]) -> list[dict]:
    """The pools' Node objects as the gate schedules on them (harness.gate.scheduling), for KWOK to play."""
    nodes = gate_node_objects(specs)
    for node in nodes:
        node["metadata"]["labels"]["type"] = "kwok"
        node["metadata"]["annotations"] = {KWOK_ANNOTATION: "fake"}
    return nodes


def add_nodes(kube, root: Path, cluster: str, timeout: float = timeouts.NODES_READY) -> list[str]:
    """Creates the Nodes of `cluster`'s Terraform pools (in `root`) that do not exist yet (so a pool
    grown in Terraform adds its new nodes to those already there) and waits until KWOK has made every
    one Ready and the node-lifecycle controller has lifted its not-ready taint; returns the node
    names. `kube`: harness.k8s.Kube."""
    nodes = node_objects(cluster_nodes(root, cluster))
    for node in nodes:
        if kube.get("v1", "Node", name=node["metadata"]["name"]) is None:
            kube.create(node)
    names = {n["metadata"]["name"] for n in nodes}

    def ready(items: list[dict]):
        ok = {i["metadata"]["name"] for i in items if i["metadata"]["name"] in names and is_true(i, "Ready")
              and not any(t.get("key") == NOT_READY_TAINT for t in (i.get("spec") or {}).get("taints") or [])}
        return ok == names or None

    kube.wait_for("v1", "Node", ready, f"{len(names)} nodes of cluster {cluster} Ready and schedulable", timeout=timeout)
    say("cluster", f"{len(names)} nodes of {cluster}'s pools Ready: " +
        "; ".join(f"{s.pool} " + (size_words(s.vm_size, s.max_count, s.min_count) + " (run at max_count)" if s.min_count != s.max_count
                                   else size_words(s.vm_size, s.max_count)) for s in cluster_nodes(root, cluster) if s.max_count))
    return sorted(names)


def remove_nodes(kube, names: list[str]) -> None:
    """Deletes the Nodes (the pods bound to them are left to the caller's teardown)."""
    for name in names:
        kube.delete("v1", "Node", name)


class PoolNodes:
    """The simulated nodes one test or report run brings up, and their going: `add(root, cluster)`
    creates that cluster's pool nodes not there yet and waits until they are Ready; `close()` waits
    until no pod is left in `namespace` and deletes the nodes it created. The caller removes its jobs first:
    KWOK plays the kubelet that lets a bound pod go, so the nodes must outlive the pods."""

    def __init__(self, kube, namespace: str, timeout: float = timeouts.DECISION):
        self.kube, self.namespace, self.timeout = kube, namespace, timeout
        self.names: list[str] = []

    def add(self, root: Path, cluster: str) -> list[str]:
        """Adds the nodes `cluster`'s pools in `root` have and the plane has not (a pool grown in
        Terraform adds its new nodes); returns all of the cluster's nodes. close() removes only
        the nodes this PoolNodes created."""
        there = {n["metadata"]["name"] for n in self.kube.list("v1", "Node")}
        names = add_nodes(self.kube, root, cluster)
        self.names.extend(n for n in names if n not in there and n not in self.names)
        return names

    def close(self) -> None:
        if not self.names:
            return
        self.kube.wait_for(*POD, lambda items: not items or None, f"the pods in namespace {self.namespace} deleted",
                           self.namespace, self.timeout)
        remove_nodes(self.kube, self.names)
        self.names.clear()

    def __enter__(self) -> "PoolNodes":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
