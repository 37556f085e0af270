"""References and size limits on each cluster's rendered set: what every object can be valid
without, and what the apiserver, kustomize-controller or helm-controller only refuses on AKS.

The set is `ClusterRender.applied()` (everything the cluster's Flux Kustomizations apply) plus
what exists without the repository: the namespaces Kubernetes creates itself and flux-system
(bootstrap or the AKS Flux extension), the `default` ServiceAccount of every namespace, the
built-in PriorityClasses, the ConfigMaps/Secrets of clusters/<name>/cluster-vars.example.yaml
(the shape of what Terraform writes; the gate substitutes from them offline as well), and what the
platform provides (ClusterRender.provided: the AKS Flux extension's flux-applier ServiceAccount).

Sizes: etcd's default `--max-request-bytes` is 1.5 MiB, below the apiserver's own 3 MiB request
limit, so 1.5 MiB of JSON is the practical bound of one object; ConfigMap/Secret data is limited
to 1 MiB by the apiserver's validation. Names, labels and annotations (lengths, characters, the
256 KiB of annotations) are the apiserver's own metadata validation, run in tools/fluxbuild
(schema_check: api-validation).

The sample RayJobs (clusters/<name>/samples.yaml) are checked in harness.gate.sample_admission;
`ClusterIndex` and the key check are shared with it (what pod templates name: harness.gate.pod_refs); lines come from harness.gate.origin.
"""
from __future__ import annotations

import re
from dataclasses import replace

import base64
import binascii
import json
from pathlib import Path

from harness.gate.cluster_index import ALWAYS_NAMESPACES, ClusterIndex, cohort_peers, finding_at, kind_key, layer_key, waits_for
from harness.gate.findings import Finding
from harness.gate.origin import dotted
from harness.gate.render import ClusterRender, is_flux_kustomization
from harness.gate.pod_refs import missing_run_files, optional_ref, pod_key_refs, pod_spec_refs, pod_templates
from harness.gate.sources import as_list, as_map, as_maps, name_key

RULES = {
    "namespace-missing": "every namespaced object's namespace, and every HelmRelease's targetNamespace and storageNamespace, is "
                         "created by the cluster's set (a Namespace, a HelmRelease with install.createNamespace) or always exists "
                         "(default, kube-*, flux-system), and not only by a layer that dependsOn the one that needs it (which then never applies)",
    "object-ref": "every ServiceAccount, ConfigMap, Secret, PersistentVolumeClaim and RuntimeClass a Flux object, a pod template or a "
                  "sample names (not optional) exists in the cluster's set (or in cluster-vars.example.yaml, which Terraform writes), "
                  "with every key it names: nothing creates a sample's ConfigMaps and Secrets with the job",
    "entrypoint-file": "(warning) a file a RayJob's entrypoint or a container's command runs (a path below the mountPath of a "
                       "ConfigMap volume; the entrypoint read as the shell reads it) is a key of that ConfigMap (or of the volume's items)",
    "flux-health-check": "every object a Flux Kustomization's healthChecks wait for is applied by the cluster's set, when the "
                         "repository renders objects of that kind, or created by the charts the gate renders into its namespace "
                         "(helm_values.py) (else the layer never becomes Ready and its dependents never apply)",
    "priority-class": "every PriorityClass a pod template names is defined by the cluster (or built in)",
    "priority-class-default": "at most one PriorityClass of a cluster sets globalDefault: true (the apiserver's Priority admission "
                              "refuses a second, so its layer fails to apply)",
    "cohort-alone": "(warning) a ClusterQueue's cohortName is shared by another ClusterQueue or a Cohort, else it can never borrow or lend",
    "object-size": "every object is at most 1.5 MiB as JSON (etcd's default --max-request-bytes)",
    "data-size": "a ConfigMap's or Secret's data is at most 1 MiB (apiserver validation)",
}

MAX_OBJECT_BYTES = 3 * 512 * 1024  # 1.5 MiB: etcd --max-request-bytes default
MAX_DATA_BYTES = 1024 * 1024  # core.MaxSecretSize, also the ConfigMap limit
REF_HINT = ("add the {kind} to the layer that applies this object (a ConfigMap Terraform writes: to cluster-vars.example.yaml "
            "and terraform/), fix the name, or mark the reference optional")
RUNTIME_CLASS_HINT = ("add the RuntimeClass (node.k8s.io/v1) to the layer that applies this object, or drop runtimeClassName: AKS "
                      "runs pods without one on its default containerd runtime, GPU nodes included")
KEY_HINT = "use one of the {kind}'s keys, add the key to the {kind}, or mark the reference optional"
SA_HINT = ("add the ServiceAccount (with the RBAC it needs) to a layer that applies before this one, or fix the name; Flux "
           "impersonates it, and refuses to act while it is missing")
SUFFIX_HINT = ("set `generatorOptions: {disableNameSuffixHash: true}` on the generator (Flux reads the object by the name written "
               "here), or name the generated object here")



# -- References -----------------------------------------------------------------------------------
def missing_key(index: ClusterIndex, namespace: str, ref: tuple[list, str, object, object]) -> str | None:
    """The message for a key reference of `pod_key_refs` whose ConfigMap or Secret the cluster has without that key."""
    path, kind, name, key = ref
    keys = index.keys_of(kind, namespace, name)
    if keys is None or str(key) in keys:
        return None
    effect = ("the kubelet cannot mount the volume, so the pod stays ContainerCreating" if "volumes" in path
              else "the kubelet cannot start the container (CreateContainerConfigError)")
    return (f"{dotted(path)} names key {key!r} of {kind} {namespace}/{name}, which has only {', '.join(sorted(keys)) or 'no key'}: "
            f"{effect}")


def _out_of_band(index: ClusterIndex, obj: dict, path: list) -> bool:
    """A Secret reference Flux users fill outside Git by design: a Kustomization's SOPS decryption key, and the
    deploy key of the GitRepository `flux bootstrap` writes (flux-system/flux-system, its own Secret), whether the cluster's
    directory has a kustomization file or not."""
    if path[:3] == ["spec", "decryption", "secretRef"]:
        return True
    meta = as_map(obj.get("metadata"))
    return (obj.get("kind") == "GitRepository" and path[:2] == ["spec", "secretRef"]
            and meta.get("name") == "flux-system" and meta.get("namespace", "flux-system") == "flux-system")


def _flux_refs(obj: dict) -> list[tuple[list, str, object]]:
    api, spec = str(obj.get("apiVersion", "")), as_map(obj.get("spec"))
    out = []
    if is_flux_kustomization(obj) or api.startswith("helm.toolkit.fluxcd.io/"):
        if spec.get("serviceAccountName"):
            out.append((["spec", "serviceAccountName"], "ServiceAccount", spec["serviceAccountName"]))
        for parent in ("kubeConfig", "decryption"):
            out += optional_ref(["spec", parent, "secretRef"], as_map(spec.get(parent)).get("secretRef"), "Secret")
        if as_map(spec.get("decryption")).get("serviceAccountName"):  # the identity that reads the KMS key
            out.append((["spec", "decryption", "serviceAccountName"], "ServiceAccount", spec["decryption"]["serviceAccountName"]))
        for i, ref in enumerate(as_list(as_map(spec.get("postBuild")).get("substituteFrom"))):
            out += optional_ref(["spec", "postBuild", "substituteFrom", i], ref)
        for i, ref in enumerate(as_list(spec.get("valuesFrom"))):
            out += optional_ref(["spec", "valuesFrom", i], ref)
    elif api.startswith("source.toolkit.fluxcd.io/"):
        for name in ("secretRef", "certSecretRef", "proxySecretRef"):
            out += optional_ref(["spec", name], spec.get(name), "Secret")
        out += optional_ref(["spec", "verify", "secretRef"], as_map(spec.get("verify")).get("secretRef"), "Secret")
        if spec.get("serviceAccountName"):
            out.append((["spec", "serviceAccountName"], "ServiceAccount", spec["serviceAccountName"]))
    return out


def _reference_rules(ctx, root: Path, index: ClusterIndex) -> list[Finding]:
    out, name = [], index.cluster.name
    missing: dict[str, list[tuple]] = {}  # namespace the cluster does not create -> (build, object) of the objects in it
    for build, o in index.objects:
        kind, ns, _ = kind_key(o)
        if index.complete and ns is not None and kind not in index.cluster_scoped and ns not in index.namespaces:
            missing.setdefault(ns, []).append((build, o, ["metadata", "namespace"]))
            continue
        for path, release_ns in _release_namespaces(o) if index.complete else []:
            if release_ns not in index.namespaces:  # Helm writes the release there: without the namespace the install fails
                missing.setdefault(release_ns, []).append((build, o, path))
        refs = _flux_refs(o)
        if index.complete:
            refs += [r for path, pod in pod_templates(o) for r in pod_spec_refs(path, pod)]
        else:  # a layer did not render: only references into what the repository does not render are known
            refs = [r for r in refs if r[1] != "ServiceAccount"]
        for path, ref_kind, ref_name in refs:
            ref_ns = None if ref_kind in index.cluster_scoped else ns or "default"
            if index.has(ref_kind, ref_ns, ref_name):
                continue
            if _out_of_band(index, o, path):  # a Secret made outside Git by design: the gate cannot see it, so it says so
                out.append(finding_at(ctx, root, o, build, path, "object-ref",
                                      f"{dotted(path)} names Secret {ref_ns}/{ref_name}, which no layer applies: it is made outside Git "
                                      "(`flux bootstrap` writes the flux-system deploy key; a SOPS key is created by hand or from a vault), so "
                                      "the gate cannot see it", f"make sure the Secret exists on cluster {name} before Flux reconciles; "
                                      "declare it as a stand-in in the cluster's variables file to silence this", cluster=name, severity="warning"))
                continue
            suffixed = _hash_suffixed(index, ref_kind, ref_ns, ref_name)
            out.append(_presuming(f"{ref_kind}/{f'{ref_ns}/' if ref_ns else ''}{ref_name}", finding_at(ctx, root, o, build, path, "object-ref",
                                  f"{dotted(path)} names {ref_kind} {f'{ref_ns}/' if ref_ns else ''}{ref_name}, which the cluster does not have"
                                  + (f" (a generator names it {suffixed}: kustomize adds a hash of its content, and updates only the "
                                     "references it knows, not this one)" if suffixed else ""),
                                  RUNTIME_CLASS_HINT if ref_kind == "RuntimeClass" else SA_HINT if ref_kind == "ServiceAccount"
                                  else SUFFIX_HINT if suffixed else REF_HINT.format(kind=ref_kind), cluster=name)))
        out += _values_keys(ctx, root, index, build, o, ns)
        for ref in [r for path, pod in pod_templates(o) for r in pod_key_refs(path, pod)] if index.complete else []:
            message = missing_key(index, ns or "default", ref)
            if message:
                out.append(finding_at(ctx, root, o, build, ref[0], "object-ref", message, KEY_HINT.format(kind=ref[1]), cluster=name))
        for path, message, hint in missing_run_files(o, lambda kind, n, ns=ns: index.keys_of(kind, ns or "default", n)) if index.complete else []:
            out.append(finding_at(ctx, root, o, build, path, "entrypoint-file", message, hint, cluster=name, severity="warning"))
        for path, pod in pod_templates(o) if index.complete else []:
            pc = pod.get("priorityClassName")
            if pc and not index.has("PriorityClass", None, pc):
                out.append(finding_at(ctx, root, o, build, [*path, "priorityClassName"], "priority-class",
                                      f"{dotted(path)}.priorityClassName {pc!r} is not a PriorityClass of the cluster; the apiserver "
                                      "refuses its pods", "define the PriorityClass (scheduling.k8s.io/v1) or fix the name", cluster=name))
    return out + _missing_namespaces(ctx, root, index, missing) + (_late_namespaces(ctx, root, index) if index.complete else [])


def _hash_suffixed(index: ClusterIndex, kind: str, namespace, name) -> str | None:
    """The name of the cluster's `kind` that is `name` with a kustomize generator's hash suffix (name-<10 characters>)."""
    if kind not in ("ConfigMap", "Secret"):
        return None
    found = re.compile(re.escape(str(name)) + r"-[a-z0-9]{10}")
    return next((n for (k, ns, n) in index.named if k == kind and ns == namespace and found.fullmatch(str(n))), None)


def _values_keys(ctx, root: Path, index: ClusterIndex, build, hr: dict, namespace) -> list[Finding]:
    """object-ref for a HelmRelease valuesFrom entry whose ConfigMap or Secret the cluster has without the key it reads
    (valuesKey, values.yaml by default): helm-controller fails the release unless the entry is `optional`
    (fluxcd/pkg/chartutil v1.27.1's ChartValuesFromReferences, which helm-controller v1.6.3 calls, skips an optional
    entry's missing key as it skips its missing object, whatever the API's comment says)."""
    if not str(hr.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/"):
        return []
    out = []
    for i, ref in enumerate(as_list(as_map(hr.get("spec")).get("valuesFrom"))):
        ref = as_map(ref)
        key = str(ref.get("valuesKey", "values.yaml"))
        keys = index.keys_of(str(ref.get("kind")), namespace or "default", ref.get("name"))
        if keys is None or key in keys or ref.get("optional") is True:
            continue
        out.append(finding_at(ctx, root, hr, build, ["spec", "valuesFrom", i, "valuesKey" if "valuesKey" in ref else "name"], "object-ref",
                              f"spec.valuesFrom[{i}] reads key {key!r} of {ref.get('kind')} {namespace}/{ref.get('name')}, which has only "
                              f"{', '.join(sorted(keys)) or 'no key'}: helm-controller fails the release",
                              f"set valuesKey to one of its keys{'' if 'valuesKey' in ref else ' (values.yaml is the default)'}, or "
                              "rename the key where the object is written (or mark the entry optional: true, if the release does not need them)", cluster=index.cluster.name))
    return out


def _presuming(ref: str, f: Finding) -> Finding:
    """`f`, a reference to the missing object `ref` (a resource id): when another finding reports why it is absent (its
    `absent`), that one is the cause and this folds under it (harness.gate.folding)."""
    return replace(f, presumes=(*f.presumes, ref))


def _missing_namespaces(ctx, root: Path, index: ClusterIndex, missing: dict[str, list[tuple]]) -> list[Finding]:
    """namespace-missing: one finding per namespace the cluster does not create, at the first object in it, naming the
    others; a Namespace of the layers that nothing is in is named as the likely rename."""
    used = {kind_key(o)[1] for _, o in index.objects} | {n for _, o in index.objects for _, n in _release_namespaces(o)}
    out = []
    for ns, members in missing.items():
        build, first, path = members[0]
        layers = {id(b) for b, _, _ in members}  # a Namespace of the same layers that nothing is in
        empty = sorted(n for b, o in index.of_kind("Namespace") if id(b) in layers and (n := as_map(o.get("metadata")).get("name")) not in used)
        others = [f"{o.get('kind')} {as_map(o.get('metadata')).get('name')}" + (f" ({dotted(p)})" if p[0] == "spec" else "")
                  for _, o, p in members[1:]]
        field = "metadata.namespace" if path[0] == "metadata" else dotted(path)
        renamed = f"Namespace {', '.join(empty)} is created but nothing is in it: if it was {ns} before, name it {ns} again or move " \
                  f"these objects along ({field}); else " if empty else ""
        release = "" if path[0] != "spec" else f" (HelmRelease {as_map(first.get('metadata')).get('name')}: Helm " + \
            ("installs its chart there" if path[-1] == "targetNamespace" else "writes its release record there") + \
            " and creates no namespace, so the install fails)"
        create = ", set install.createNamespace: true" if path[-1] == "targetNamespace" else ""
        found = finding_at(ctx, root, first, build, path, "namespace-missing",
                           f"namespace {ns!r} is not created by the cluster (have: {', '.join(sorted(index.namespaces))}){release}"
                           + ("; more object(s) are in it" if others else ""),
                           f"{renamed}add a Namespace {ns} to the layer{create}, or use an existing namespace", cluster=index.cluster.name)
        # which objects, per cluster, in its context: the same missing namespace on every cluster is one finding (findings.keep_once)
        out.append(replace(found, context=f"{found.context}, also in it: {', '.join(others)}") if others else found)
    return out


def _late_namespaces(ctx, root: Path, index: ClusterIndex) -> list[Finding]:
    """namespace-missing for a namespace whose Namespace only layers that dependsOn the layer needing it apply: that
    layer's dry-run of an object in it fails (namespace not found), or helm-controller cannot install a HelmRelease the
    layer waits for into it (Helm creates no namespace), so the layer is never Ready and those never apply. The entry
    (the cluster folder) comes before every layer; a layer that neither waits nor is waited for converges on a retry."""
    layer = {id(b): layer_key(b.flux_kustomization) if b.flux_kustomization else None for b in index.cluster.flux}
    creators: dict[str, list] = {}
    for b, o in index.of_kind("Namespace"):
        creators.setdefault(name_key(as_map(o.get("metadata")).get("name")), []).append((layer.get(id(b)), b))
    out, seen, before = [], set(ALWAYS_NAMESPACES), {k: index.layers_before(k) for k in index.layers()}
    for build, o in index.objects:
        here, (kind, ns, _) = layer.get(id(build)), kind_key(o)
        needs = [(["metadata", "namespace"], ns)] if ns is not None and kind not in index.cluster_scoped else []
        needs += [(p, name_key(n)) for p, n in _release_namespaces(o) if build.flux_kustomization and waits_for(build.flux_kustomization, o)]
        for path, needed in needs:
            made = creators.get(needed, [])
            if needed in seen or not made or any(c is None or c == here or c in before.get(here, ()) for c, _ in made):
                continue
            if here is not None and not all(here in before.get(c, ()) for c, _ in made):
                continue  # created by a layer this one does not wait for and that does not wait for it: a retry converges
            seen.add(needed)
            after = ", ".join(sorted({f"Kustomization {c[1]}" for c, _ in made}))
            what = "its dry-run of this object fails (namespace not found)" if path[0] == "metadata" else \
                "helm-controller cannot install the release there (Helm creates no namespace) and the layer waits for it"
            name = f"Kustomization {here[1]}" if here else "the cluster's entry (flux-system)"
            out.append(finding_at(ctx, root, o, build, path, "namespace-missing",
                                  f"namespace {needed!r} is created only by {after}, which dependsOn {name}: {what}, so {name} is "
                                  "never Ready and the namespace is never created",
                                  f"add Namespace {needed} to {name} (or to a layer it dependsOn)"
                                  + (", or set install.createNamespace: true" if path[-1] == "targetNamespace" else ""),
                                  cluster=index.cluster.name))
    return out


def _release_namespaces(obj: dict) -> list[tuple[list, str]]:
    """(field, namespace) of a HelmRelease's spec.targetNamespace and spec.storageNamespace: Helm installs into the first
    and writes the release record into the second, and creates neither (install.createNamespace creates the target,
    which ClusterIndex counts as created)."""
    if obj.get("kind") != "HelmRelease" or not str(obj.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/"):
        return []
    spec = as_map(obj.get("spec"))
    return [(["spec", f], spec[f]) for f in ("targetNamespace", "storageNamespace") if isinstance(spec.get(f), str) and spec[f]]


def _health_check_entries(index: ClusterIndex):
    """(build, Kustomization, i, apiVersion, kind, namespace (None: cluster-scoped), name) of each Flux healthChecks entry."""
    for build, ks in index.of_kind("Kustomization"):
        if not is_flux_kustomization(ks):
            continue
        own_ns = as_map(ks.get("metadata")).get("namespace", "flux-system")
        for i, check in enumerate(as_maps(as_map(ks.get("spec")).get("healthChecks"))):
            kind = check.get("kind")
            ns = None if kind in index.cluster_scoped else name_key(check.get("namespace", own_ns))
            yield build, ks, i, str(check.get("apiVersion")), kind, ns, check.get("name")


def _never_ready(ctx, root: Path, index: ClusterIndex, build, ks: dict, i: int, kind, ns, name, why: str, hint: str) -> Finding:
    return finding_at(ctx, root, ks, build, ["spec", "healthChecks", i], "flux-health-check",
                      f"spec.healthChecks[{i}] waits for {kind} {f'{ns}/' if ns else ''}{name}, {why}: the Kustomization never becomes "
                      "Ready, and the Kustomizations that dependsOn it never apply", hint, cluster=index.cluster.name)


def _health_checks(ctx, root: Path, index: ClusterIndex) -> list[Finding]:
    """healthChecks naming an object of a kind the repository renders that no layer applies. An object
    of a kind it never renders (a chart's Deployment, a CRD) comes from a HelmRelease: chart_health_checks."""
    rendered_kinds = {(str(o.get("apiVersion")), o.get("kind")) for _, o in index.objects}
    out = []
    for build, ks, i, api, kind, ns, name in _health_check_entries(index):
        if (api, kind) not in rendered_kinds or index.has(name_key(kind), ns, name):
            continue
        have = sorted(f"{m.get('namespace')}/{m.get('name')}" if m.get("namespace") else str(m.get("name"))
                      for m in (as_map(o.get("metadata")) for _, o in index.of_kind(kind)))
        out.append(_never_ready(ctx, root, index, build, ks, i, kind, ns, name,
                                f"which no layer of cluster {index.cluster.name} applies (have: {', '.join(have)})",
                                f"name one of the cluster's {kind}s, or remove the health check"))
    return out


def chart_health_checks(ctx, root: Path, index: ClusterIndex, charted: dict[str, set[tuple]], unknown: set[str]) -> list[Finding]:
    """flux-health-check for the healthChecks _health_checks leaves alone (a kind only a chart renders): in a namespace
    whose only charts the gate renders (`charted`: namespace -> (apiVersion, kind, name) they create; `unknown`: the
    namespaces of HelmReleases it does not render), an object none of them creates is never there."""
    rendered_kinds = {(str(o.get("apiVersion")), o.get("kind")) for _, o in index.objects}
    out = []
    for build, ks, i, api, kind, ns, name in _health_check_entries(index):
        if ((api, kind) in rendered_kinds or ns not in charted or ns in unknown or (api, kind, name) in charted[ns]
                or index.has(name_key(kind), ns, name)):
            continue
        have = sorted(n for a, k, n in charted[ns] if (a, k) == (api, kind))
        out.append(_never_ready(ctx, root, index, build, ks, i, kind, ns, name,
                                f"which the charts installed into {ns} do not create (they create {', '.join(have) or f'no {kind}'})",
                                f"name one of the chart's {kind}s, or remove the health check"))
    return out


def _global_default(ctx, root: Path, index: ClusterIndex) -> list[Finding]:
    """The apiserver's Priority admission plugin admits one PriorityClass with globalDefault: true and refuses every
    other ("is already marked as default"): reported at each one after the first, by name (the order of one apply)."""
    defaults = sorted(((str(as_map(o.get("metadata")).get("name")), b, o) for b, o in index.of_kind("PriorityClass")
                       if o.get("globalDefault") is True), key=lambda d: d[0])
    return [finding_at(ctx, root, o, b, ["globalDefault"], "priority-class-default",
                       f"PriorityClass {name} sets globalDefault: true, as {defaults[0][0]} does: the apiserver's Priority admission admits "
                       "one default PriorityClass and refuses the other (applied in one batch, at the next reconcile), so the layer fails",
                       "keep globalDefault: true on one PriorityClass of the cluster (pods without priorityClassName get its value)",
                       cluster=index.cluster.name) for name, b, o in defaults[1:]]


def _cohort_rules(ctx, root: Path, index: ClusterIndex) -> list[Finding]:
    out = []
    cqs = index.of_kind("ClusterQueue")
    queue_objects = [o for _, o in cqs + index.of_kind("Cohort")]
    for build, cq in cqs:
        cohort = as_map(cq.get("spec")).get("cohortName")
        if not isinstance(cohort, str) or not cohort:
            continue
        if not cohort_peers(queue_objects, cq):
            out.append(finding_at(ctx, root, cq, build, ["spec", "cohortName"], "cohort-alone",
                                  f"cohortName {cohort!r} is shared by no other ClusterQueue or Cohort of the cluster: it can never borrow or lend",
                                  "use the cohortName of the queues it should share with ("
                                  + (f"the cluster's: {', '.join(sorted(others))}" if (others := {str(c) for _, q in cqs if q is not cq and
                                     (c := as_map(q.get("spec")).get("cohortName"))}) else "no other queue of the cluster has one")
                                  + "), or drop cohortName and its borrowing/lending limits", cluster=index.cluster.name, severity="warning"))
    return out


# -- Sizes ----------------------------------------------------------------------------------------
def _decoded_len(value) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value))  # the schema check reports invalid base64


def size_problems(obj: dict) -> list[tuple[str, str, str, list]]:
    """(rule, message, hint, field path) for every size limit `obj` breaks."""
    out = []
    try:
        size = len(json.dumps(obj, separators=(",", ":"), default=str).encode())
    except (TypeError, ValueError):  # a YAML key JSON cannot hold (a date): the schema check reports the object
        size = len(repr(obj).encode())
    kind, total = obj.get("kind"), 0
    if kind in ("ConfigMap", "Secret"):
        data = {str(k): v for k, v in as_map(obj.get("data")).items()}
        if kind == "ConfigMap":
            total = sum(len(str(v).encode()) for v in data.values()) + sum(_decoded_len(v) for v in as_map(obj.get("binaryData")).values())
        else:
            merged = {k: _decoded_len(v) for k, v in data.items()}
            merged.update({str(k): len(str(v).encode()) for k, v in as_map(obj.get("stringData")).items()})
            total = sum(merged.values())
        if total > MAX_DATA_BYTES:
            out.append(("data-size", f"holds {total} bytes of data; the apiserver allows at most 1 MiB ({MAX_DATA_BYTES} bytes)",
                        f"split the {kind} in several, or ship the content in the image or a volume",
                        ["data"] if data else ["binaryData" if kind == "ConfigMap" else "stringData"]))
    # The apiserver refuses data over 1 MiB before etcd sees the request: etcd's limit is a cause of its own only when the
    # object is still over it with its data cut to what the apiserver allows.
    if size - max(total - MAX_DATA_BYTES, 0) > MAX_OBJECT_BYTES:
        out.insert(0, ("object-size", f"is {size} bytes as JSON; etcd refuses requests over 1.5 MiB ({MAX_OBJECT_BYTES} bytes, its default "
                       "--max-request-bytes), so the apply fails", "split the object, or move the bulk (scripts, data) into an image or a volume", []))
    return out


def cluster_ref_rules(ctx, root: Path, cluster: ClusterRender) -> list[Finding]:
    """References, cohorts and size limits of one cluster's rendered set (`ctx`: rules.Context)."""
    index = ClusterIndex.build(root, cluster)
    out = _reference_rules(ctx, root, index) + _global_default(ctx, root, index)
    out += _cohort_rules(ctx, root, index) + _health_checks(ctx, root, index) if index.complete else []
    return out + [finding_at(ctx, root, o, build, path, rule, message, hint, cluster=cluster.name)
                  for build, o in index.objects for rule, message, hint, path in size_problems(o)]
