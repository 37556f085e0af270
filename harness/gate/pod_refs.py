"""What a pod template names: the pod templates of workloads, CronJobs and KubeRay objects, and the
objects (ServiceAccount, ConfigMaps, Secrets, PersistentVolumeClaims, RuntimeClass) and keys its pods
need before they can start. harness.gate.cluster_refs checks them against a cluster's set."""
from __future__ import annotations

from harness.gate.sources import as_list, as_map, as_maps

WORKLOAD_KINDS = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"}


def pod_templates(obj: dict) -> list[tuple[list, dict]]:
    """(field path, pod spec) of every pod template of a workload, a CronJob or a KubeRay object."""
    kind, spec = obj.get("kind"), as_map(obj.get("spec"))
    if kind == "Pod":
        return [(["spec"], spec)]
    if kind in WORKLOAD_KINDS:
        return [(["spec", "template", "spec"], as_map(as_map(spec.get("template")).get("spec")))]
    if kind == "CronJob":
        job = as_map(as_map(spec.get("jobTemplate")).get("spec"))
        return [(["spec", "jobTemplate", "spec", "template", "spec"], as_map(as_map(job.get("template")).get("spec")))]

    def ray_cluster(path: list, cluster: dict) -> list[tuple[list, dict]]:
        head = as_map(as_map(as_map(cluster.get("headGroupSpec")).get("template")).get("spec"))
        out = [([*path, "headGroupSpec", "template", "spec"], head)]
        for i, group in enumerate(as_list(cluster.get("workerGroupSpecs"))):
            out.append(([*path, "workerGroupSpecs", i, "template", "spec"], as_map(as_map(as_map(group).get("template")).get("spec"))))
        return out

    if not str(obj.get("apiVersion", "")).startswith("ray.io/"):
        return []
    if kind == "RayCluster":
        return ray_cluster(["spec"], spec)
    if kind == "RayService":
        return ray_cluster(["spec", "rayClusterConfig"], as_map(spec.get("rayClusterConfig")))
    if kind == "RayJob":
        out = ray_cluster(["spec", "rayClusterSpec"], as_map(spec.get("rayClusterSpec")))
        if spec.get("submitterPodTemplate") is not None:
            out.append((["spec", "submitterPodTemplate", "spec"], as_map(as_map(spec.get("submitterPodTemplate")).get("spec"))))
        return out
    return []


def optional_ref(path: list, ref, default_kind: str | None = None) -> list[tuple[list, str, object]]:
    ref = as_map(ref)
    if not ref or ref.get("optional") is True or "name" not in ref:
        return []
    kind = ref.get("kind", default_kind)
    return [([*path, "name"], kind, ref["name"])] if kind in ("ConfigMap", "Secret") else []


def pod_spec_refs(path: list, pod: dict) -> list[tuple[list, str, object]]:
    """(field path, kind, name) of the ServiceAccount, ConfigMaps, Secrets, PersistentVolumeClaims and RuntimeClass a pod spec
    needs to start (the scheduler places no pod whose claim does not exist; the RuntimeClass admission refuses a pod whose
    RuntimeClass does not exist)."""
    out = []
    if pod.get("runtimeClassName"):
        out.append(([*path, "runtimeClassName"], "RuntimeClass", pod["runtimeClassName"]))
    for field_name in ("serviceAccountName", "serviceAccount"):
        if pod.get(field_name):
            out.append(([*path, field_name], "ServiceAccount", pod[field_name]))
            break
    for i, vol in enumerate(as_maps(pod.get("volumes"))):
        at = [*path, "volumes", i]
        out += optional_ref([*at, "configMap"], vol.get("configMap"), "ConfigMap")
        secret = as_map(vol.get("secret"))
        if secret.get("secretName") and secret.get("optional") is not True:
            out.append(([*at, "secret", "secretName"], "Secret", secret["secretName"]))
        claim = as_map(vol.get("persistentVolumeClaim")).get("claimName")
        if claim:
            out.append(([*at, "persistentVolumeClaim", "claimName"], "PersistentVolumeClaim", claim))
        for j, src in enumerate(as_maps(as_map(vol.get("projected")).get("sources"))):
            out += optional_ref([*at, "projected", "sources", j, "configMap"], src.get("configMap"), "ConfigMap")
            out += optional_ref([*at, "projected", "sources", j, "secret"], src.get("secret"), "Secret")
    for group in ("initContainers", "containers"):
        for i, c in enumerate(as_maps(pod.get(group))):
            for j, env in enumerate(as_maps(c.get("env"))):
                source, at = as_map(env.get("valueFrom")), [*path, group, i, "env", j, "valueFrom"]
                out += optional_ref([*at, "configMapKeyRef"], source.get("configMapKeyRef"), "ConfigMap")
                out += optional_ref([*at, "secretKeyRef"], source.get("secretKeyRef"), "Secret")
            for j, env in enumerate(as_maps(c.get("envFrom"))):
                out += optional_ref([*path, group, i, "envFrom", j, "configMapRef"], env.get("configMapRef"), "ConfigMap")
                out += optional_ref([*path, group, i, "envFrom", j, "secretRef"], env.get("secretRef"), "Secret")
    return out


def _items_keys(path: list, source, kind: str) -> list[tuple[list, str, object, object]]:
    source = as_map(source)
    name = source.get("name" if kind == "ConfigMap" else "secretName", source.get("name"))
    if name is None or source.get("optional") is True:
        return []
    return [([*path, "items", k, "key"], kind, name, item["key"]) for k, item in enumerate(as_maps(source.get("items"))) if "key" in item]


def pod_key_refs(path: list, pod: dict) -> list[tuple[list, str, object, object]]:
    """(field path, kind, name, key) of every ConfigMap or Secret key a pod spec needs (not optional): an env value the kubelet
    cannot find fails the container (CreateContainerConfigError), a volume item it cannot find fails the mount."""
    out = []
    for i, vol in enumerate(as_maps(pod.get("volumes"))):
        at = [*path, "volumes", i]
        out += _items_keys([*at, "configMap"], vol.get("configMap"), "ConfigMap") + _items_keys([*at, "secret"], vol.get("secret"), "Secret")
        for j, src in enumerate(as_maps(as_map(vol.get("projected")).get("sources"))):
            out += _items_keys([*at, "projected", "sources", j, "configMap"], src.get("configMap"), "ConfigMap")
            out += _items_keys([*at, "projected", "sources", j, "secret"], src.get("secret"), "Secret")
    for group in ("initContainers", "containers"):
        for i, c in enumerate(as_maps(pod.get(group))):
            for j, env in enumerate(as_maps(c.get("env"))):
                source = as_map(env.get("valueFrom"))
                for field_name, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                    ref = as_map(source.get(field_name))
                    if "name" in ref and "key" in ref and ref.get("optional") is not True:
                        out.append(([*path, group, i, "env", j, "valueFrom", field_name, "key"], kind, ref["name"], ref["key"]))
    return out
