"""What a pod template names: the pod templates of workloads, CronJobs and KubeRay objects, and the
objects (ServiceAccount, ConfigMaps, Secrets, PersistentVolumeClaims, RuntimeClass) and keys its pods
need before they can start, and the files a container (or a RayJob's entrypoint, on the head) runs from a ConfigMap
volume. harness.gate.cluster_refs checks them against a cluster's set."""
from __future__ import annotations

import posixpath
import shlex
from typing import Callable

from harness.gate.origin import dotted
from harness.gate.sources import RAY_CLUSTER_SPEC, as_list, as_map, as_maps, ray_cluster_spec

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

    if not str(obj.get("apiVersion", "")).startswith("ray.io/") or kind not in RAY_CLUSTER_SPEC:
        return []
    out = ray_cluster(*ray_cluster_spec(obj))
    if kind == "RayJob" and spec.get("submitterPodTemplate") is not None:
        out.append((["spec", "submitterPodTemplate", "spec"], as_map(as_map(spec.get("submitterPodTemplate")).get("spec"))))
    return out


def optional_ref(path: list, ref, default_kind: str | None = None) -> list[tuple[list, str, object]]:
    ref = as_map(ref)
    if not ref or ref.get("optional") is True or "name" not in ref:
        return []
    kind = ref.get("kind", default_kind)
    return [([*path, "name"], kind, ref["name"])] if kind in ("ConfigMap", "Secret") else []


def _sources(path: list, pod: dict):
    """(field path, reference, kind, the field naming it, how it names keys) of every ConfigMap and Secret a pod spec names:
    volumes and projected sources (their items), env valueFrom (its key) and envFrom (no key)."""
    for i, vol in enumerate(as_maps(pod.get("volumes"))):
        at = [*path, "volumes", i]
        yield [*at, "configMap"], as_map(vol.get("configMap")), "ConfigMap", "name", "items"
        yield [*at, "secret"], as_map(vol.get("secret")), "Secret", "secretName", "items"
        for j, src in enumerate(as_maps(as_map(vol.get("projected")).get("sources"))):
            yield [*at, "projected", "sources", j, "configMap"], as_map(src.get("configMap")), "ConfigMap", "name", "items"
            yield [*at, "projected", "sources", j, "secret"], as_map(src.get("secret")), "Secret", "name", "items"
    for group in ("initContainers", "containers"):
        for i, c in enumerate(as_maps(pod.get(group))):
            for j, env in enumerate(as_maps(c.get("env"))):
                source, at = as_map(env.get("valueFrom")), [*path, group, i, "env", j, "valueFrom"]
                yield [*at, "configMapKeyRef"], as_map(source.get("configMapKeyRef")), "ConfigMap", "name", "key"
                yield [*at, "secretKeyRef"], as_map(source.get("secretKeyRef")), "Secret", "name", "key"
            for j, env in enumerate(as_maps(c.get("envFrom"))):
                yield [*path, group, i, "envFrom", j, "configMapRef"], as_map(env.get("configMapRef")), "ConfigMap", "name", None
                yield [*path, group, i, "envFrom", j, "secretRef"], as_map(env.get("secretRef")), "Secret", "name", None


def _needed(ref: dict, name_field: str) -> bool:
    return bool(ref.get(name_field)) and ref.get("optional") is not True


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
        claim = as_map(vol.get("persistentVolumeClaim")).get("claimName")
        if claim:
            out.append(([*path, "volumes", i, "persistentVolumeClaim", "claimName"], "PersistentVolumeClaim", claim))
    return out + [([*at, name_field], kind, ref[name_field]) for at, ref, kind, name_field, _ in _sources(path, pod) if _needed(ref, name_field)]


def pod_key_refs(path: list, pod: dict) -> list[tuple[list, str, object, object]]:
    """(field path, kind, name, key) of every ConfigMap or Secret key a pod spec needs (not optional): an env value the kubelet
    cannot find fails the container (CreateContainerConfigError), a volume item it cannot find fails the mount."""
    out = []
    for at, ref, kind, name_field, keys in _sources(path, pod):
        if not _needed(ref, name_field):
            continue
        if keys == "key" and "key" in ref:
            out.append(([*at, "key"], kind, ref[name_field], ref["key"]))
        elif keys == "items":
            out += [([*at, "items", k, "key"], kind, ref[name_field], item["key"]) for k, item in enumerate(as_maps(ref.get("items"))) if "key" in item]
    return out


def runtime_class(pod: dict, related: list[dict]) -> dict | None:
    """The RuntimeClass among `related` that the pod spec names (of two with its name, the later, as the later apply leaves
    it); None when it names none or none of `related`."""
    name = pod.get("runtimeClassName")
    found = [o for o in related if o.get("kind") == "RuntimeClass" and as_map(o.get("metadata")).get("name") == name] if name else []
    return found[-1] if found else None


def charged_overhead(pod: dict, related: list[dict]) -> tuple[str, dict] | None:
    """(name, overhead.podFixed) of the RuntimeClass among `related` that the pod spec names, when it has an overhead: what
    the RuntimeClass admission writes into the pod's spec.overhead, and Kueue's AdjustResources adds to its charge."""
    fixed = as_map(as_map(as_map(runtime_class(pod, related)).get("overhead")).get("podFixed"))
    return (pod["runtimeClassName"], fixed) if fixed else None


def overhead_text(overhead: tuple[str, dict]) -> str:
    """"RuntimeClass NAME's overhead.podFixed (cpu 250m, memory 120Mi)"."""
    return f"RuntimeClass {overhead[0]}'s overhead.podFixed ({', '.join(f'{r} {q}' for r, q in sorted(overhead[1].items()))})"



def _words(text: str) -> list[str]:
    """The words of a shell command line, as the shell splits them (shlex, POSIX rules; ; & | ( ) < > apart); [] for
    one it cannot split (an unclosed quote: the shell refuses it too, another cause)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return []


def _commands(obj: dict) -> list[tuple[list, dict, int, list[str]]]:
    """(field path, pod spec, container index, words) of what runs: a RayJob's spec.entrypoint (the submitter runs it on
    the head, in KubeRay's Ray container, containers[0]) and each element of every container's command and args (one
    with whitespace, as `sh -c` gets it, split as the shell splits it)."""
    out = []
    templates = pod_templates(obj)
    entrypoint = as_map(obj.get("spec")).get("entrypoint")
    if obj.get("kind") == "RayJob" and isinstance(entrypoint, str) and templates:
        out.append((["spec", "entrypoint"], templates[0][1], 0, _words(entrypoint)))
    for path, pod in templates:
        for i, c in enumerate(as_maps(pod.get("containers"))):
            for field in ("command", "args"):
                out += [([*path, "containers", i, field, j], pod, i, _words(str(a)) if any(ch.isspace() for ch in str(a)) else [str(a)])
                        for j, a in enumerate(as_list(c.get(field)))]
    return out


def missing_run_files(obj: dict, keys_of: Callable[[str, object], set[str] | None]) -> list[tuple[list, str, str]]:
    """(field path, message, hint) per file a container runs (_commands: a word that is a path, or an --option=path) below
    the mountPath of a ConfigMap volume whose ConfigMap (`keys_of(kind, name)`: its keys, None when unknown) or items
    hold no such file: the mount shows only those, so the program fails to start. Words with $, globs or `..` are
    left alone (the shell expands them)."""
    out = []
    for field, pod, index, words in _commands(obj):
        volumes = {v.get("name"): as_map(v.get("configMap")) for v in as_maps(pod.get("volumes")) if isinstance(v.get("configMap"), dict)}
        containers = as_maps(pod.get("containers"))
        every = [m for m in as_maps(containers[index].get("volumeMounts") if index < len(containers) else None) if m.get("mountPath")]
        mounts = [m for m in every if m.get("name") in volumes and not (m.get("subPath") or m.get("subPathExpr"))]
        for word in words:
            word = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
            if not word.startswith("/") or any(ch in word for ch in "$*?[") or ".." in word.split("/"):
                continue
            for m in mounts:
                root, path = posixpath.normpath(str(m["mountPath"])), posixpath.normpath(word)
                rel = path[len(root) + 1:] if path.startswith(root.rstrip("/") + "/") else None
                inner = [p for p in (posixpath.normpath(str(o["mountPath"])) for o in every) if len(p) > len(root)]
                if any(path == p or path.startswith(p + "/") for p in inner):
                    continue  # below another volume mounted inside this one
                source = volumes[m["name"]]
                items = [str(as_map(i).get("path")) for i in as_list(source.get("items"))]
                files = set(items) if source.get("items") else keys_of("ConfigMap", source.get("name"))
                if rel is None or files is None or rel in files or any(f.startswith(rel + "/") for f in files):
                    continue
                have = ", ".join(sorted(files)) or "no file"
                out.append((field, f"{dotted(field)} names {word}, but the ConfigMap volume {m['name']} mounted at {root} "
                            f"(ConfigMap {source.get('name')}{', items' if source.get('items') else ''}) holds only {have}: "
                            "the file is not there, so the command fails as it starts",
                            f"add key {rel} to ConfigMap {source.get('name')} (or to the volume's items), or name one of its files"))
    return out
