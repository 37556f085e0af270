"""Builds the pinned binaries from their published Go modules and caches them per version.

Each tool is built in a throwaway wrapper module under the cache directory, never in the
checkout: k8s.io/kubernetes and etcd carry `replace` directives that make `go install
module@version` fail, and a wrapper module whose own go.mod pins the published staging
modules is the supported way round that. A finished build is marked with a stamp file, so
a second run only checks that the binaries exist.

    python -m harness.toolchain.builds [--list] [--group static|cluster|flux|kind] [NAME ...]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness.core import HarnessError, Ticker, cache_lock, cache_root, publish_dir, releases, report_error, say, versions, xdg_cache_home
from harness.toolchain.local import STAMP, bin_dir, local_version, prune_local



def go_env() -> dict[str, str]:
    env = dict(os.environ)
    # GOTOOLCHAIN=local: a module asking for a newer Go must fail loudly, not download one.
    env.update(CGO_ENABLED="0", GOTOOLCHAIN="local", GOWORK="off", GOFLAGS="-mod=mod")
    if not xdg_cache_home():  # a relative one is invalid (XDG spec) and Go would refuse it ("GOCACHE is not defined")
        env.pop("XDG_CACHE_HOME", None)
    return env


class ToolBuildError(HarnessError, RuntimeError):
    pass


def _run(cmd: list[str], cwd: Path, what: str) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=go_env(), capture_output=True, text=True, encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise ToolBuildError(f"{what}: `{' '.join(cmd)}` failed in {cwd}:\n{proc.stderr[-4000:]}")
    return proc.stdout


def module_info(mod: str, version: str) -> dict:
    """`go mod download -json`: fetches the module zip into GOMODCACHE and says where it is."""
    cmd = ["go", "mod", "download", "-json", f"{mod}@{version}"]
    proc = subprocess.run(cmd, cwd=Path.cwd(), env=go_env(), capture_output=True, text=True, encoding="utf-8", errors="replace")
    try:
        info = json.loads(proc.stdout)  # Go's reason for a refused module is here ("Error"), also when it exits 1
    except ValueError:
        info = {}
    if info.get("Error") or proc.returncode != 0:
        at = versions.where(mod, version)
        raise ToolBuildError(f"{at + ': ' if at else ''}{mod}@{version} cannot be downloaded from the Go module proxy: "
                             f"{' '.join((info.get('Error') or proc.stderr[-4000:]).split()) or f'`{shlex.join(cmd)}` exited {proc.returncode}'}"
                             + ("; write a version the proxy serves there (`go list -m -versions "
                                f"{mod}` lists some; a release the list omits may still be served)" if at else ""))
    return info


def module_dir(pin: str) -> Path:
    """Source directory (read-only, in GOMODCACHE) of a pinned module, e.g. for its CRDs."""
    mod, version = versions.module(pin)
    return Path(module_info(mod, version)["Dir"])


@dataclass(frozen=True)
class GoTool:
    name: str
    pin: str  # key in versions.yaml
    binaries: dict[str, str]  # binary name -> Go package to build
    ldflags: tuple[str, ...] = ()
    local_source: str | None = None  # a module inside this repository instead of the proxy
    # Carry the module's own version `replace` directives into the wrapper (the Flux controllers
    # pin go-digest and kustomize that way); Go ignores replaces of a dependency otherwise.
    inherit_replaces: bool = False
    # A package variable set to the module version being built (-X), e.g. Kueue's GitVersion: read
    # when building, so a candidate selected through $RAY_KUEUE_VERSIONS reports its own version.
    version_var: str | None = None
    # Kubernetes' own version stamps (-X gitVersion...), from the selected Kubernetes version: computed when building,
    # so that importing the tool table reads no versions.yaml (a broken one is then a HarnessError of the command).
    kube_version_stamps: bool = False

    @property
    def version(self) -> str:
        if self.local_source:
            return local_version(versions.REPO_ROOT / self.local_source)
        version = versions.module(self.pin)[1]
        if self.replaces:  # another dependency set is another build
            version += "-r" + hashlib.sha256(json.dumps(self.replaces, sort_keys=True).encode()).hexdigest()[:8]
        return version

    def build_ldflags(self) -> tuple[str, ...]:
        """-ldflags of the build: the recipe's, with the version stamps read from versions.yaml now."""
        stamps = _kube_ldflags() if self.kube_version_stamps else ()
        return self.ldflags + stamps + ((f"-X {self.version_var}={versions.module(self.pin)[1]}",) if self.version_var else ())

    @property
    def replaces(self) -> dict[str, str]:
        """Dependency overrides from versions.yaml (`replace:` under the pin, with its `skew`)."""
        return {} if self.local_source else dict(versions.entry(self.pin).get("replace") or {})

    def bin_dir(self) -> Path:
        return bin_dir(self.name, self.version)

    def is_cached(self) -> bool:
        d = self.bin_dir()
        return (d / STAMP).exists() and all((d / b).exists() for b in self.binaries)

    def path(self, binary: str | None = None) -> Path:
        return self.bin_dir() / (binary or next(iter(self.binaries)))

    # -- building -------------------------------------------------------------------------
    def _wrapper_module(self) -> Path:
        """A go.mod that requires the pinned module and, for Kubernetes, pins its staging modules."""
        mod, version = versions.module(self.pin)
        work = cache_root() / "build" / f"{self.name}-{self.version}"
        if (work / "go.sum").exists():
            return work
        work.mkdir(parents=True, exist_ok=True)
        module_info(mod, version)  # a version the proxy refuses: Go's reason and the versions.yaml line, not tidy's output
        lines = ["module local.invalid/toolbuild", "", "go 1.25.0", "", f"require {mod} {version}", ""]
        if mod == "k8s.io/kubernetes":
            lines += _staging_replaces(version, only_v0=False)
        elif releases.listed(self.pin, "requires-kubernetes-module") and releases.has(self.pin, "requires-kubernetes-module", version):
            lines += _staging_replaces(_required_version(mod, version, "k8s.io/kubernetes"))
        if self.inherit_replaces:
            lines += _module_replaces(mod, version)
        # Dependency versions versions.yaml overrides, each with its `skew` reason there.
        for dep, dep_version in self.replaces.items():
            lines.append(f"replace {dep} => {dep} {dep_version}")
        (work / "go.mod").write_text("\n".join(lines) + "\n", encoding="utf-8")
        imports = "\n".join(f'\t_ "{pkg}"' for pkg in self.binaries.values())
        (work / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n", encoding="utf-8")
        _run(["go", "mod", "tidy"], work, f"resolve {self.name}")
        return work

    def build(self) -> Path:
        if self.is_cached():
            return self.bin_dir()
        # Parallel runs (two checkouts, xdist workers) wait for one builder instead of racing.
        with cache_lock(self.name):
            if self.is_cached():
                return self.bin_dir()
            return self._build_locked()

    def _build_locked(self) -> Path:
        say("tools", f"building {self.name} {self.version} from Go modules (first run only; cached in {cache_root()})")
        ticker = Ticker("tools")
        workdir = self._local_copy() if self.local_source else self._wrapper_module()
        staging = self.bin_dir().with_name(self.bin_dir().name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for binary, pkg in self.binaries.items():
            cmd = ["go", "build", "-v", "-trimpath", "-o", str(staging / binary)]
            ldflags = self.build_ldflags()
            if ldflags:
                cmd.append("-ldflags=" + " ".join(ldflags))
            cmd.append(pkg)
            self._build_with_progress(cmd, workdir, binary, ticker)
        (staging / STAMP).write_text(self.version + "\n", encoding="utf-8")
        publish_dir(staging, self.bin_dir())
        if self.local_source:
            prune_local(self.name)
        say("tools", f"{self.name} {self.version} ready in {ticker.elapsed():.0f}s")
        return self.bin_dir()

    def _local_copy(self) -> Path:
        """A copy of the in-repository module to build in, so that `go build` (which may
        complete go.sum) never writes into the checkout, or into an installed harness's
        copy of the source (harness/core/repo-snapshot)."""
        work = cache_root() / "build" / f"{self.name}-{self.version}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(versions.REPO_ROOT / self.local_source, work, copy_function=shutil.copyfile)
        return work

    def _build_with_progress(self, cmd: list[str], cwd: Path, binary: str, ticker: Ticker) -> None:
        proc = subprocess.Popen(cmd, cwd=cwd, env=go_env(), stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace")
        compiled, tail = 0, []
        assert proc.stderr is not None
        for line in proc.stderr:
            compiled += 1
            tail = (tail + [line])[-60:]
            ticker.tick(f"{binary}: {compiled} packages compiled")
        if proc.wait() != 0:
            raise ToolBuildError(f"building {binary} ({self.name} {self.version}) failed:\n{''.join(tail)}")


def _staging_replaces(kube_version: str, only_v0: bool = True) -> list[str]:
    """k8s.io/kubernetes requires its staging modules at v0.0.0 (its own `replace => ./staging`
    does not apply to a dependent): pin each to the published v0.Y.Z of that release. Building
    Kubernetes itself replaces every version of them (`only_v0=False`); a module that merely
    requires k8s.io/kubernetes (Kueue 0.19) replaces only the v0.0.0 requirement and keeps its
    own, newer, staging versions."""
    gomod = Path(module_info("k8s.io/kubernetes", kube_version)["GoMod"]).read_text(encoding="utf-8")
    staging = versions.staging_version(kube_version)
    out = []
    for line in gomod.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("k8s.io/") and parts[1] == "v0.0.0":
            out.append(f"replace {parts[0]}{' v0.0.0' if only_v0 else ''} => {parts[0]} {staging}")
    return out


def _required_version(mod: str, version: str, dependency: str) -> str:
    gomod = module_info(mod, version)["GoMod"]
    edit = json.loads(_run(["go", "mod", "edit", "-json", gomod], Path.cwd(), f"read go.mod of {mod}"))
    for req in edit.get("Require") or []:
        if req["Path"] == dependency:
            return req["Version"]
    raise ToolBuildError(f"{mod}@{version} does not require {dependency} (harness/core/releases.py says it does)")


def _module_replaces(mod: str, version: str) -> list[str]:
    """The module's `replace old => new version` lines, read with `go mod edit -json`.

    Replaces by local path (`=> ./api`, the controllers' own API modules) are dropped: the
    API module is not in the module zip, and the published release of it that go.mod
    requires is what the proxy serves.
    """
    gomod = module_info(mod, version)["GoMod"]
    edit = json.loads(_run(["go", "mod", "edit", "-json", gomod], Path.cwd(), f"read go.mod of {mod}"))
    out = []
    for r in edit.get("Replace") or []:
        old, new = r["Old"], r["New"]
        if not new.get("Version"):
            continue
        lhs = old["Path"] + (f" {old['Version']}" if old.get("Version") else "")
        out.append(f"replace {lhs} => {new['Path']} {new['Version']}")
    return out


def _kube_ldflags() -> tuple[str, ...]:
    version = versions.module("kubernetes")[1]
    minor = version.split(".")[1]
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor=1", f"-X {pkg}.gitMinor={minor}"]
    flags.append("-X k8s.io/component-base/version.gitTreeState=clean")
    return tuple(flags)


TOOLS: dict[str, GoTool] = {
    t.name: t
    for t in (
        GoTool("kustomize", "kustomize", {"kustomize": "sigs.k8s.io/kustomize/kustomize/v5"}, ("-s", "-w")),
        GoTool("kubeconform", "kubeconform", {"kubeconform": "github.com/yannh/kubeconform/cmd/kubeconform"}, ("-s", "-w")),
        GoTool("actionlint", "actionlint", {"actionlint": "github.com/rhysd/actionlint/cmd/actionlint"}, ("-s", "-w")),
        # The gate's one Go process: kustomize-controller's renderer and the apiserver's, Kueue's and
        # KubeRay's validation code at the pinned versions (its go.mod requires them;
        # tests/static/test_versions.py checks it against versions.yaml).
        GoTool("fluxbuild", "", {"fluxbuild": "."}, ("-s", "-w"), local_source="tools/fluxbuild"),
        # Terraform's loader, evaluator and functions (tflint's copy of them) over terraform/; its
        # go.mod pins are versions.yaml's `tfeval` (tests/static/test_versions.py).
        GoTool("tfeval", "", {"tfeval": "."}, ("-s", "-w"), local_source="tools/tfeval"),
        # The apiserver's pod validation (k8s.io/kubernetes, the pinned 1.35 line) of the pods KubeRay's
        # own builders make: a process apart from fluxbuild, whose Kueue registers a feature gate of the
        # same name as Kubernetes does (tests/static/test_versions.py checks its go.mod).
        GoTool("kubecheck", "", {"kubecheck": "."}, ("-s", "-w"), local_source="tools/kubecheck"),
        GoTool(
            "kube",
            "kubernetes",
            {
                "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
                "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
            },
            ("-s", "-w"),
            kube_version_stamps=True,
        ),
        # Its own build directory, so adding it did not invalidate the cached apiserver build.
        GoTool("kube-scheduler", "kubernetes", {"kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler"}, ("-s", "-w"), kube_version_stamps=True),
        # The kind backend's CLIs: kubectl from the same Kubernetes module as the control plane (its
        # own build directory, so the cached apiserver build stays valid), kind from its module.
        GoTool("kubectl", "kubernetes", {"kubectl": "k8s.io/kubernetes/cmd/kubectl"}, ("-s", "-w"), kube_version_stamps=True),
        GoTool("kind", "kind", {"kind": "sigs.k8s.io/kind"}, ("-s", "-w")),
        GoTool("kwok", "kwok", {"kwok": "sigs.k8s.io/kwok/cmd/kwok"}, ("-s", "-w")),
        GoTool("etcd", "etcd", {"etcd": "go.etcd.io/etcd/server/v3"}, ("-s", "-w")),
        GoTool(
            "kueue",
            "kueue",
            {"kueue": "sigs.k8s.io/kueue/cmd/kueue"},
            ("-s", "-w"),
            version_var="sigs.k8s.io/kueue/pkg/version.GitVersion",
        ),
        GoTool("kuberay", "kuberay", {"ray-operator": "github.com/ray-project/kuberay/ray-operator"}, ("-s", "-w")),
        GoTool("source-controller", "flux.source-controller",
               {"source-controller": "github.com/fluxcd/source-controller"}, ("-s", "-w"), inherit_replaces=True),
        GoTool("kustomize-controller", "flux.kustomize-controller",
               {"kustomize-controller": "github.com/fluxcd/kustomize-controller"}, ("-s", "-w"), inherit_replaces=True),
    )
}

# What each purpose needs; the offline gate must not wait for a Kubernetes build.
STATIC_TOOLS = ("kustomize", "kubeconform", "fluxbuild", "tfeval", "kubecheck", "actionlint")
CLUSTER_TOOLS = ("kube", "etcd", "kueue", "kuberay", "kube-scheduler", "kwok")
FLUX_TOOLS = ("source-controller", "kustomize-controller")  # the Flux end-to-end tests, beside CLUSTER_TOOLS
KIND_TOOLS = ("kind", "kubectl", "kustomize")  # the kind backend (--backend=kind)
# What `scripts/build-tools` / `make tools` builds when not told: everything but the kind backend's
# own CLIs, which only --backend=kind needs (`--group kind`, `make tools BACKEND=kind`).
DEFAULT_TOOLS = tuple(n for n in TOOLS if n not in ("kind", "kubectl"))
GROUPS = {"default": DEFAULT_TOOLS, "static": STATIC_TOOLS, "cluster": CLUSTER_TOOLS, "flux": FLUX_TOOLS, "kind": KIND_TOOLS}


def tool(name: str) -> GoTool:
    """A tool's recipe and cache paths, without building it (e.g. to plan commands)."""
    return TOOLS[name]


def ensure(*names: str) -> dict[str, GoTool]:
    """Builds whatever of `names` is not cached yet and returns the tools."""
    for name in names:
        TOOLS[name].build()
    return {n: TOOLS[n] for n in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"tools to build (default: {', '.join(DEFAULT_TOOLS)}; known: {', '.join(TOOLS)})")
    parser.add_argument("--list", action="store_true", help="print each tool, its version and whether it is cached")
    parser.add_argument("--group", choices=sorted(GROUPS), action="append", default=[],
                        help="the tools one purpose needs, e.g. `kind` for --backend=kind (repeatable)")
    args = parser.parse_args(argv)
    names = list(dict.fromkeys([*args.names, *(n for g in args.group for n in GROUPS[g])]))
    names = names or list(TOOLS if args.list else DEFAULT_TOOLS)
    unknown = [n for n in names if n not in TOOLS]
    if unknown:
        print(f"unknown tool(s): {', '.join(unknown)}; known: {', '.join(TOOLS)}", file=sys.stderr)
        return 2
    if args.list:
        for n in names:
            t = TOOLS[n]
            print(f"{n:12} {t.version:24} {'cached' if t.is_cached() else 'not built'}  {t.bin_dir()}")
        return 0
    try:
        ensure(*names)
    except (HarnessError, OSError) as err:  # a failed build, versions.yaml or a source directory that is not there
        return report_error("build-tools", err, "tool build failed: ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
