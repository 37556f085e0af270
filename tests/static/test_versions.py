"""versions.yaml is the one place versions are pinned; everything that repeats one must agree."""
from __future__ import annotations

import ast

import json
import re
from decimal import Decimal
import subprocess
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from harness.toolchain import builds as tools
from harness.core import releases, versions
from harness.gate import render_repository, version_rules
from harness.gate.rules import Context
from harness.gate.sources import Sources
from harness.cluster.local_cluster import local_kueue_config, production_kueue_config
from harness.gate.workloads import pod_sets as workload_pod_sets

pytestmark = pytest.mark.static

CONTROLLERS = versions.REPO_ROOT / "flux/infrastructure/controllers"


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _by_kind(kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for p in CONTROLLERS.glob("*.yaml") for d in _docs(p) if d.get("kind") == kind}


@pytest.mark.parametrize("component", ["kueue", "kuberay"])
def test_helm_chart_and_image_follow_versions_file(component):
    """The gate's versions-drift rule (harness/gate/version_rules.py) holds on every production
    cluster, and each of them really installs the chart, so the rule had something to check."""
    pin = versions.pins()[component]
    _, clusters = render_repository(versions.REPO_ROOT)
    production = [c for c in clusters if c.name != "local"]  # clusters/local runs the operators as processes
    assert production
    for cluster in production:
        kinds = {o.get("kind") for _, o in cluster.applied() if o.get("metadata", {}).get("name") == pin["chart"]}
        assert {"OCIRepository", "HelmRelease"} <= kinds, f"cluster {cluster.name} installs no {pin['chart']} chart"
        drift = [f for f in version_rules.version_rules(Context(Sources.load(versions.REPO_ROOT)), versions.REPO_ROOT,
                                                        cluster, versions.pins())
                 if f.resource.endswith("/" + pin["chart"])]
        assert not drift, "\n".join(f.text() for f in drift)


def test_the_device_plugin_follows_its_pin_and_drift_is_found(tmp_path):
    """Layer 1's NVIDIA device plugin: every production cluster installs chart nvidia-device-plugin from the pin's own
    repository at its production version, the module the gate renders it from carries that chart version, and
    versions-drift finds a chart version, a repository and an image tag other than the pin's."""
    pin = versions.pins()["nvidia-device-plugin"]
    assert pin["version"] == f"v{pin['production']}", "the gate renders the chart of the module version: keep them equal"
    chart = yaml.safe_load((Path(tools.module_dir("nvidia-device-plugin")) / "deployments/helm/nvidia-device-plugin/Chart.yaml").read_text())
    assert str(chart["version"]) == str(pin["production"]) and chart["name"] == pin["chart"], chart
    repository, release = _by_kind("HelmRepository")[pin["chart"]], _by_kind("HelmRelease")[pin["chart"]]
    assert repository["spec"]["url"] == pin["repository"]
    assert str(release["spec"]["chart"]["spec"]["version"]) == str(pin["production"])
    _, clusters = render_repository(versions.REPO_ROOT)
    for cluster in (c for c in clusters if c.name != "local"):
        assert [o for _, o in cluster.applied() if o.get("kind") == "HelmRelease" and o["metadata"]["name"] == pin["chart"]], cluster.name
    from harness.testing import copy_config
    from harness.gate import validate_repository

    root = copy_config(tmp_path / "repo")
    rel = "flux/infrastructure/controllers/nvidia-device-plugin.yaml"
    text = (root / rel).read_text()
    (root / rel).write_text(text.replace("version: 0.17.4", "version: 0.17.3").replace("https://nvidia.github.io/k8s-device-plugin",
                                                                                      "https://example.invalid/charts")
                            .replace("  values:\n", "  values:\n    image:\n      tag: v0.17.2\n", 1))
    drift = [f for f in validate_repository(root).findings if f.rule == "versions-drift"]
    lines = text.splitlines()
    assert {(f.file, f.line) for f in drift} >= {(rel, lines.index("      version: 0.17.4") + 1),
                                                  (rel, lines.index("  url: https://nvidia.github.io/k8s-device-plugin") + 1)}, \
        "\n".join(f.text() for f in drift)


@pytest.mark.parametrize("component", ["kueue", "kuberay", "kubernetes"])
def test_tested_version_matches_production_or_records_skew(component):
    pin = versions.pins()[component]
    tested = pin["version"].removeprefix("v")
    if tested == str(pin["production"]):
        return
    same_line = tested.startswith(str(pin["production"]) + ".") or tested.rsplit(".", 1)[0] == str(pin["production"]).rsplit(".", 1)[0]
    assert same_line, f"{component}: tested {tested} is not on the production line {pin['production']}"
    if component != "kubernetes":  # "1.35" pins a line, any 1.35.x is that line
        assert pin.get("skew"), f"{component}: tested {tested} differs from production {pin['production']}; say why under `skew`"


def test_kueue_local_config_uses_the_helm_release_integrations():
    """The embedded Kueue must run with the frameworks the HelmRelease configures."""
    release = _by_kind("HelmRelease")["kueue"]
    config = yaml.safe_load(release["spec"]["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["integrations"]["frameworks"] == ["batch/job", "ray.io/rayjob"]


def test_kueue_feature_gates_in_one_place_and_orphan_finishing_off_before_0_17_3():
    """FinishOrphanedWorkloads finishes just-created Workloads while a cache lags (kueue#10901,
    hit by tests/faults after an apiserver restart); Kueue 0.17.3 turned it off by default."""
    release = _by_kind("HelmRelease")["kueue"]
    values = release["spec"]["values"]
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert not values["controllerManager"].get("featureGates"), (
        "flux/infrastructure/controllers/kueue.yaml: HelmRelease kueue sets controllerManager.featureGates (--feature-gates) "
        "and Kueue refuses gates set both there and in the Configuration: move them to managerConfig's featureGates")
    if Version(str(versions.pins()["kueue"]["production"])) < Version("0.17.3"):
        assert (config.get("featureGates") or {}).get("FinishOrphanedWorkloads") is False, (
            "flux/infrastructure/controllers/kueue.yaml: HelmRelease kueue: Kueue < 0.17.3 needs "
            "featureGates: {FinishOrphanedWorkloads: false} in controllerManagerConfigYaml (kueue#10901)")
    local = local_kueue_config(production_kueue_config(), webhook_port=1, cert_dir=Path("/c"), health_port=2)
    assert {k: v for k, v in local["featureGates"].items() if k != "VisibilityOnDemand"} == (config.get("featureGates") or {}), \
        "the embedded Kueue must run with the production feature gates"


@pytest.mark.parametrize("package", ["kustomize", "runtime", "ssa"])
def test_fluxbuild_uses_kustomize_controllers_library_version(package):
    """The offline renderer must run the same fluxcd/pkg modules as the pinned kustomize-controller: kustomize (the
    build), runtime (its CEL health checks), ssa (the metadata its apply sets)."""
    mod, version = versions.module("flux.kustomize-controller")
    controller_mod = Path(tools.module_info(mod, version)["GoMod"]).read_text()
    ours = (versions.REPO_ROOT / "tools/fluxbuild/go.mod").read_text()
    pattern = re.compile(rf"github.com/fluxcd/pkg/{package} (v\S+)")
    assert pattern.search(ours).group(1) == pattern.search(controller_mod).group(1)


def _gomod(rel: str) -> dict:
    """A go.mod as the Go tool reads it (`go mod edit -json`)."""
    out = subprocess.run(["go", "mod", "edit", "-json", str(versions.REPO_ROOT / rel)], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_fluxbuild_links_the_pinned_apiserver_kueue_and_kuberay():
    """tools/fluxbuild also validates with the apiserver's, Kueue's and KubeRay's code: the versions it
    links (a `replace` wins over a `require`) are the pinned ones."""
    gomod = _gomod("tools/fluxbuild/go.mod")
    linked = {r["Path"]: r["Version"] for r in gomod["Require"]}
    linked |= {r["Old"]["Path"]: r["New"]["Version"] for r in gomod.get("Replace") or [] if not r["Old"].get("Version")}
    staging = versions.staging_version(versions.module("kubernetes")[1])
    expected = {versions.module(pin)[0]: versions.module(pin)[1] for pin in ("kueue", "kuberay", "kubeconform", "fluxbuild.helm")}
    expected |= {f"k8s.io/{m}": staging for m in ("apiextensions-apiserver", "apiserver", "apimachinery", "api", "client-go")}
    assert {m: linked.get(m) for m in expected} == expected


def test_fluxbuild_replaces_are_the_recorded_skew():
    """Rendering and checking share one process, so tools/fluxbuild/go.mod moves kustomize-controller's
    library onto the pinned Kubernetes line and Kueue's controller-runtime: exactly what versions.yaml's
    `fluxbuild.replace` records (with its `skew`), and controller-runtime is the one the pinned Kueue requires."""
    gomod = _gomod("tools/fluxbuild/go.mod")
    replaces = {r["Old"]["Path"]: r["New"]["Version"] for r in gomod.get("Replace") or []}
    assert replaces == versions.entry("fluxbuild")["replace"]
    mod, version = versions.module("kueue")
    kueue = json.loads(subprocess.run(["go", "mod", "edit", "-json", tools.module_info(mod, version)["GoMod"]],
                                      capture_output=True, text=True, check=True).stdout)
    wanted = {r["Path"]: r["Version"] for r in kueue["Require"]}["sigs.k8s.io/controller-runtime"]
    assert replaces["sigs.k8s.io/controller-runtime"] == wanted


def test_fluxbuilds_helm_is_the_release_helm_controllers_fork_is_cut_from():
    """The gate renders a HelmRelease's values with the Helm helm-controller links: its go.mod replaces
    helm.sh/helm/v4 with a fork named after the release it is cut from (v4.2.4-flux.1), which the proxy
    does not serve; fluxbuild links that release (versions.yaml fluxbuild.helm, with its skew). A
    helm-controller bump onto another Helm release fails here."""
    mod, version = versions.module("flux.helm-controller")
    controller = json.loads(subprocess.run(["go", "mod", "edit", "-json", tools.module_info(mod, version)["GoMod"]],
                                           capture_output=True, text=True, check=True).stdout)
    helm_mod, helm_version = versions.module("fluxbuild.helm")
    fork = {r["Old"]["Path"]: r["New"] for r in controller.get("Replace") or []}.get(helm_mod)
    linked = fork["Version"] if fork else {r["Path"]: r["Version"] for r in controller["Require"]}[helm_mod]
    assert linked == helm_version or linked.startswith(helm_version + "-"), (helm_mod, linked, helm_version)
    assert fork is None or versions.entry("fluxbuild")["helm"]["skew"].count(fork["Version"]) == 1


def test_tfeval_links_the_pinned_terraform_evaluator():
    """tools/tfeval evaluates terraform/ with tflint's copy of Terraform's evaluator, on HCL and cty: the
    versions its go.mod requires are versions.yaml's (read by `go mod edit -json`)."""
    gomod = versions.REPO_ROOT / "tools/tfeval/go.mod"
    out = subprocess.run(["go", "mod", "edit", "-json", str(gomod)], capture_output=True, text=True, check=True).stdout
    required = {r["Path"]: r["Version"] for r in json.loads(out)["Require"]}
    expected = dict(versions.module(pin) for pin in ("tfeval", "hcl", "cty"))
    assert {m: required.get(m) for m in expected} == expected


def test_kubecheck_links_the_pinned_kubernetes_and_kuberay():
    """tools/kubecheck validates the pods KubeRay's builders make with the apiserver's pod validation: it
    links the pinned k8s.io/kubernetes with its staging modules at that line's version, the pinned KubeRay, and the pinned
    NetworkPolicy simulator (cyclonus, netpol.go)."""
    gomod = _gomod("tools/kubecheck/go.mod")
    linked = {r["Path"]: r["Version"] for r in gomod["Require"]}
    replaces = {r["Old"]["Path"]: r["New"]["Version"] for r in gomod.get("Replace") or []}
    expected = {versions.module(pin)[0]: versions.module(pin)[1] for pin in ("kubernetes", "kuberay", "cyclonus")}
    assert {m: linked.get(m) for m in expected} == expected
    staging = versions.staging_version(versions.module("kubernetes")[1])
    assert replaces and set(replaces.values()) == {staging}, replaces
    assert {m: linked[m] for m in ("k8s.io/api", "k8s.io/apimachinery")} == {"k8s.io/api": staging, "k8s.io/apimachinery": staging}


def _pins_with_replaces(block=None, name=""):
    block = versions.pins() if block is None else block
    for key, value in block.items():
        if isinstance(value, dict):
            if value.get("replace"):
                yield f"{name}{key}", value
            yield from _pins_with_replaces(value, f"{name}{key}.")


def test_dependency_replaces_record_their_skew():
    """A dependency version swapped for the local build is skew too: `skew` must name every one."""
    found = list(_pins_with_replaces())
    assert found, "versions.yaml has no `replace:` block; drop this test if the skew is gone"
    for name, block in found:
        for dep in block["replace"]:
            assert dep.rsplit("/", 1)[-1] in str(block.get("skew", "")), f"{name}: replace of {dep} not explained under `skew`"


def test_kind_default_image_is_the_pinned_modules_so_node_image_is_of_that_release():
    """versions.yaml copies kind's default node image and the 1.35 one from the same release
    notes; the default must be what the pinned module's source says, so bumping `kind.version`
    without taking both images from the new release's notes fails here."""
    source = (tools.module_dir("kind") / "pkg/apis/config/defaults/image.go").read_text()
    default = re.search(r'const Image = "([^"]+)"', source).group(1)
    assert versions.entry("kind")["default_image"] == default


def test_kind_node_image_is_the_pinned_line_by_digest_and_records_its_skew():
    kind = versions.entry("kind")
    kube = versions.entry("kubernetes")
    match = re.fullmatch(r"kindest/node:(v(\d+\.\d+)\.\d+)@sha256:[0-9a-f]{64}", kind["node_image"])
    assert match, f"kind.node_image {kind['node_image']!r}: kindest/node:vX.Y.Z@sha256:<digest> from kind's release notes"
    assert match.group(2) == str(kube["production"]), "the kind nodes must run the production Kubernetes line"
    if match.group(1) != kube["version"]:
        assert match.group(1) in str(kind.get("skew", "")) and kube["version"] in str(kind.get("skew", "")), \
            f"kind nodes run {match.group(1)}, the harness builds {kube['version']}: say so under kind.skew"


def test_kind_and_kubectl_are_built_from_their_pins():
    kind, kubectl = tools.tool("kind"), tools.tool("kubectl")
    assert (kind.pin, kind.version, kind.binaries) == ("kind", versions.module("kind")[1], {"kind": "sigs.k8s.io/kind"})
    # kubectl from the same k8s.io/kubernetes module as kube-apiserver, and it reports that version.
    assert kubectl.pin == tools.tool("kube").pin == "kubernetes"
    assert kubectl.binaries == {"kubectl": "k8s.io/kubernetes/cmd/kubectl"}
    assert kubectl.version == versions.module("kubernetes")[1]
    assert f"-X k8s.io/client-go/pkg/version.gitVersion={kubectl.version}" in kubectl.build_ldflags()


# -- upgrade candidates (make rehearse) -----------------------------------------------------------
def test_only_kueue_and_kuberay_have_candidates_newer_than_their_pin_with_their_chart():
    with_candidates = {name for name, block in versions.pins().items() if isinstance(block, dict) and block.get("candidates")}
    assert with_candidates <= set(versions.SELECTABLE), f"candidates: only for {versions.SELECTABLE}, not {with_candidates}"
    for name in versions.SELECTABLE:
        listed = [c["version"] for c in versions.candidates(name)]
        assert listed, f"versions.yaml {name}: no candidates: make rehearse has nothing to rehearse"
        assert len(set(listed)) == len(listed), f"{name}: a candidate listed twice: {listed}"
        for cand in versions.candidates(name):
            assert releases.parse(cand["version"]) > releases.parse(versions.pinned(name)), \
                f"{name} candidate {cand['version']} is not newer than the pin {versions.pinned(name)}"
            # The MCR charts version with the release: chart 0.18.3 ships image v0.18.3.
            assert "v" + str(cand["chart"]) == cand["version"], f"{name} {cand['version']}: chart {cand['chart']}"


def test_version_selection_is_checked_and_followed(monkeypatch):
    cand = versions.candidates("kueue")[-1]["version"]
    monkeypatch.setenv(versions.SELECT_ENV, f"kueue={cand}")
    assert versions.module("kueue") == ("sigs.k8s.io/kueue", cand)
    assert versions.module("kuberay")[1] == versions.pinned("kuberay")
    assert tools.tool("kueue").version == cand and tools.tool("kueue").bin_dir().name == f"kueue-{cand}"
    assert versions.chart_version("kueue") == cand.removeprefix("v")
    for bad in ("kueue=v0.1.0", "etcd=v3.6.16", "kueue"):
        with pytest.raises(versions.VersionSelectionError):
            versions.parse_selection(bad)
    monkeypatch.delenv(versions.SELECT_ENV)
    assert versions.module("kueue")[1] == versions.pinned("kueue")


def test_release_changes_are_for_known_versions_and_name_their_check():
    """Each entry of harness/core/releases.py: a component that can be selected, a release between
    the pin and the newest candidate, and a check that exists (a test named must be there)."""
    for change in releases.CHANGES:
        assert change.component in versions.SELECTABLE, change
        newest = max([versions.pinned(change.component), *(c["version"] for c in versions.candidates(change.component))],
                     key=releases.parse)
        assert releases.parse(versions.pinned(change.component)) < releases.parse(change.since) <= releases.parse(newest), change
        assert change.note, change
        assert change.tests or change.step or change.why_unchecked, f"{change.key}: say what runs it, or why nothing does"
        for node_id in change.tests:
            path, sep, func = node_id.partition("::")
            assert sep and func and (versions.REPO_ROOT / path).is_file(), f"{change.key}: {node_id} is not tests/<file>.py::<test>"
            tree = ast.parse((versions.REPO_ROOT / path).read_text())
            assert func in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, f"{change.key}: {node_id} does not exist"
    keys = [(c.component, c.key) for c in releases.CHANGES]
    assert len(keys) == len(set(keys)), "a release change listed twice"
    assert releases.has("kueue", "sidecar-submitter-counted", "v0.18.3") and not releases.has("kueue", "sidecar-submitter-counted", "v0.17.1")


def test_gate_accounting_follows_the_kueue_version():
    """SidecarMode's submitter is charged to the head from 0.18 (kueue#12726); K8sJobMode's Job always."""
    job = {"spec": {"submissionMode": "SidecarMode", "rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "ray-head", "resources": {"requests": {"cpu": "1"}}}]}}}}}}
    old = dict((n, r) for n, _, r in workload_pod_sets(job, "v0.17.1"))
    new = dict((n, r) for n, _, r in workload_pod_sets(job, "v0.18.3"))
    assert str(old["head"]["cpu"]) == "1" and "memory" not in old["head"], old
    assert new["head"]["cpu"] == Decimal("1.5") and "submitter" not in new, new


@pytest.mark.parametrize("component", versions.SELECTABLE)
def test_every_selectable_version_gets_its_wrapper_module(component, tmp_path, monkeypatch):
    """The go.mod a cold cache writes for each pin and candidate (a recipe asking releases.py about
    a change another component has must not stop the build); `go mod tidy` itself is not run."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(tools, "_run", lambda *a, **k: None)
    monkeypatch.setattr(tools, "_required_version", lambda mod, version, dep: "v1.36.0")
    monkeypatch.setattr(tools, "_staging_replaces", lambda kube: ["replace k8s.io/api v0.0.0 => k8s.io/api v0.36.0"])
    for version in [versions.pinned(component), *(c["version"] for c in versions.candidates(component))]:
        monkeypatch.setenv(versions.SELECT_ENV, f"{component}={version}")
        gomod = (tools.tool(component)._wrapper_module() / "go.mod").read_text()
        assert f"require {versions.entry(component)['module']} {version}" in gomod, gomod
        staging = releases.listed(component, "requires-kubernetes-module") and releases.has(component, "requires-kubernetes-module", version)
        assert ("replace k8s.io/api v0.0.0 =>" in gomod) == staging, gomod


def test_the_local_operators_get_the_feature_gates_the_helm_values_pass(tmp_path, monkeypatch):
    """The charts pass values' featureGates as --feature-gates: the local KubeRay operator gets the same flag, the local
    Kueue the same gates (in its configuration's map, beside the configuration's own)."""
    from harness.cluster import operators

    for attr, rel, at in (("KUBERAY_HELMRELEASE", "flux/infrastructure/controllers/kuberay-operator.yaml", "  values:\n"),
                          ("KUEUE_HELMRELEASE", "flux/infrastructure/controllers/kueue.yaml", "    controllerManager:\n")):
        gates = "    featureGates:\n      - {name: RayCronJob, enabled: true}\n" if attr.startswith("KUBERAY") else \
            "      featureGates:\n        - {name: ElasticJobsViaWorkloadSlices, enabled: true}\n"
        copy = tmp_path / Path(rel).name
        copy.write_text((versions.REPO_ROOT / rel).read_text().replace(at, at + gates, 1))
        monkeypatch.setattr(operators, attr, copy)
    assert operators.production_kuberay_flags() == ["--feature-gates=RayCronJob=true"]
    assert operators.production_kueue_config()["featureGates"] == {"ElasticJobsViaWorkloadSlices": True, "FinishOrphanedWorkloads": False}


def test_a_selection_a_caller_changes_is_not_the_next_callers(monkeypatch):
    """selection() keeps its parse per text: what one caller adds to its answer (--kuberay merged into it) must not
    become every later caller's pins (it once made the pinned modules look like the candidate's in the same process)."""
    monkeypatch.setenv(versions.SELECT_ENV, "")
    mine = versions.selection()
    mine["kuberay"] = versions.candidates("kuberay")[0]["version"]
    assert versions.selection() == {} and versions.module("kuberay")[1] == versions.pinned("kuberay")
