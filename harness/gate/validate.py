"""The offline static gate: render the repository as Flux would, validate every object strictly
and apply the cross-resource rules.

    scripts/validate [REPO_DIR] [--format FORMAT[=DEST]]... [--json FILE] [--junit FILE] [--base REF]

FORMAT is text, json, junit, github (GitHub Actions annotations) or sarif (SARIF 2.1.0); DEST is
a file or - for stdout (the default). Give --format several times for several reports; --json F
and --junit F are --format json=F and --format junit=F. The text report goes to stdout unless it
was asked for elsewhere or another report has stdout (then it goes to stderr).

Exit 0 when clean (warnings are printed and do not fail), 1 with findings of severity error,
2 when the gate itself could not run or a report could not be written.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.gate import capacity, config, conversion, gpu_driver, node_labels, node_settings, sku_component
from harness.gate import build_errors, cluster_refs, helm_values, kueue_manager, kueue_wiring, kustomize_warnings, queue_activity, sample_admission, served_apis
from harness.gate import flux_rules, flux_tenancy, folding, kueue_webhooks, matching, operator_placement, renames
from harness.gate import kueue_fit, network_policy, render, rules, sample_rules, schema_check, schema_texts
from harness.gate import subnets, substitution, terraform, terraform_checks, terraform_flux, tf_modules, updates
from harness.gate import entry, formats, kubernetes_version, version_rules
from harness.gate.findings import Finding, distinct, keep_once, one_line
from harness.gate.render import FluxBuild, render_repository
from harness.gate.sources import Sources, in_namespace_of, resource_id
from harness.gate.workloads import WORKLOADS_DIR
from harness.core import HarnessError, tell, versions

# Every rule id the gate can report, by the module that checks it (the README's table is this).
RULE_SOURCES = {
    "harness/gate/config.py (the gate's configuration, .ray-kueue-gate.yaml)": config.RULES,
    "harness/gate/sources.py, rules.py, sample_rules.py, kueue_fit.py (files, rendering, Kueue objects, clusters, samples)": rules.RULES,
    "harness/gate/conversion.py (Kueue objects in the older served version, converted by Kueue's own code)": conversion.RULES,
    "tools/fluxbuild check.go (the apiserver's, Kueue's and KubeRay's own validation)": schema_texts.RULES,
    "harness/gate/flux_rules.py (Flux wiring)": flux_rules.RULES,
    "harness/gate/flux_tenancy.py (the AKS Flux extension's multi-tenancy lockdown)": flux_tenancy.RULES,
    "harness/gate/version_rules.py (versions.yaml drift)": version_rules.RULES,
    "harness/gate/cluster_refs.py (references and sizes in each cluster's rendered set)": cluster_refs.RULES,
    "harness/gate/sample_admission.py (samples that could never be admitted)": sample_admission.RULES,
    "harness/gate/network_policy.py (NetworkPolicies against the traffic the Ray pods need)": network_policy.RULES,
    "harness/gate/kueue_manager.py (the Kueue manager's configuration, both operators' feature gates)": kueue_manager.RULES,
    "harness/gate/kueue_wiring.py (the Kueue manager's configuration against its chart and the cluster)": kueue_wiring.RULES,
    "harness/gate/helm_values.py, operator_placement.py (a HelmRelease's values rendered with its chart by Helm's own engine; the operators' pods on the node pools)": {**helm_values.RULES, **operator_placement.RULES},
    "harness/gate/kueue_webhooks.py (the Kueue chart's webhooks against the controllers' namespaces)": kueue_webhooks.RULES,
    "harness/gate/renames.py (namePrefix/nameSuffix, targetNamespace and the references left behind)": renames.RULES,
    "harness/gate/queue_activity.py (ClusterQueues Kueue would keep inactive)": queue_activity.RULES,
    "harness/gate/served_apis.py (the Kueue and KubeRay APIs each cluster installs)": served_apis.RULES,
    "harness/gate/kustomize_warnings.py (warnings)": kustomize_warnings.RULES,
    "harness/gate/capacity.py (quota and pods vs the Terraform node pools)": capacity.RULES,
    "harness/gate/sku_component.py (the gpu-sku component vs the pools' vm_size)": sku_component.RULES,
    "harness/gate/gpu_driver.py (GPU pools without the NVIDIA device plugin)": gpu_driver.RULES,
    "harness/gate/node_settings.py, node_labels.py (the labels, taints and settings node pools create their nodes with; AKS's deprecated labels)": {**node_settings.RULES, **node_labels.RULES},
    "harness/gate/terraform_checks.py, terraform_flux.py (Terraform wiring)": terraform_checks.RULES,
    "harness/gate/kubernetes_version.py (the AKS Kubernetes version against the pinned one)": kubernetes_version.RULES,
    "harness/gate/subnets.py (the node subnets against the nodes in them)": subnets.RULES,
    "harness/gate/tf_modules.py (module calls of terraform/ whose resources the gate does not read)": tf_modules.RULES,
    "harness/gate/updates.py (--base REF: changes the cluster refuses as an update)": updates.RULES,
}
RULE_IDS = {rule: text for found in RULE_SOURCES.values() for rule, text in found.items()}


def rule_table() -> str:
    """The README's rule table (markdown), generated from RULE_SOURCES."""
    lines = ["| rule | checks | where |", "|---|---|---|"]
    for where, found in RULE_SOURCES.items():
        for rule, text in found.items():
            checks = text.replace("|", "\\|")
            lines.append(f"| `{rule}` | {checks} | {where.split(' (')[0]} |")
    return "\n".join(lines) + "\n"


@dataclass
class Area:
    """One check area of the gate, for the summary table: what it covers, findings, time."""

    name: str
    what: str
    findings: int = 0
    seconds: float = 0.0


@dataclass
class Report:
    findings: list[Finding]
    checks: list[str]
    builds: int = 0
    objects: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    areas: list[Area] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)  # per `disable` entry of the configuration, what it turned off and why
    suppressed: int = 0  # findings those entries covered


def validate_repository(root: Path, ahead: render.Ahead | None = None, base: str | None = None) -> Report:
    root = root.resolve()
    entry.temporary_directory()
    gate_config = config.load(root, set(RULE_IDS))
    timings, t0 = {}, time.monotonic()
    areas = {a.name: a for a in (
        Area("yaml", "YAML syntax of every file"),
        Area("render", "kustomize and Flux rendering"),
        Area("rules", "Kueue, cluster and sample rules"),
        Area("capacity", "quotas vs Terraform node pools"),
        Area("terraform", "Terraform wiring"),
        Area("schema", "apiserver + Kueue webhook validation (1.35, pinned CRDs)"),
    )}
    # The gate's main Go process (tools/fluxbuild: every render round and the patch probe, the checks,
    # the placement questions; it loads the CRDs while the rest runs), tools/kubecheck (the apiserver's
    # checks that cannot share its process) and tools/tfeval, started first so that their start-up
    # overlaps; the patch probe and the checks then run beside the Python rules.
    checker = schema_check.Checker(tuple(gate_config.crd_files(root))).start()
    ahead = ahead if ahead is not None and ahead.usable(root, gate_config) else None
    try:
        with ahead.session if ahead else FluxBuild(root).start() as session, ThreadPoolExecutor(3, thread_name_prefix="gate") as pool:
            matching.start()
            terraform.start(root, gate_config.tfvars) if gate_config.terraform else terraform.start()
            return _validate(root, gate_config, checker, session, pool, areas, timings, t0, ahead.future if ahead else None, base)
    finally:
        checker.close()


def _validate(root: Path, gate_config: config.GateConfig, checker: schema_check.Checker, session: FluxBuild, pool: ThreadPoolExecutor,
              areas: dict, timings: dict, t0: float, rendering=None, base: str | None = None) -> Report:
    per_area: dict[str, list[Finding]] = {name: [] for name in areas}

    def timed(area: str, t: float) -> None:
        areas[area].seconds += time.monotonic() - t

    def beside(area: str, fn, *args):
        """`fn(*args)` on the pool (it waits mostly on a Go helper); `joined` takes its result."""
        def run():
            t = time.monotonic()
            return fn(*args), area, time.monotonic() - t
        return pool.submit(run)

    def joined(future):
        """The result of a `beside` call; its time is added to its area here, in this thread only."""
        result, area, seconds = future.result()
        areas[area].seconds += seconds
        return result

    # Rendering needs nothing parsed here: it starts first, and the sources are read while the helper renders.
    t = time.monotonic()
    rendering = rendering or beside("render", lambda: render_repository(root, session=session, gate_config=gate_config))
    based = base and beside("render", updates.render_base, root, base, gate_config, session.prefix)  # --base: that tree's clusters
    t_parse = time.monotonic()
    sources = Sources.load(root)
    checker.expect({(str(d.obj.get("apiVersion")), str(d.obj.get("kind"))) for d in sources.docs})
    per_area["yaml"] += list(gate_config.findings)
    ctx = rules.Context(sources, gate_config)
    ctx.prefix = session.prefix  # the checked tree's directory in its Git work tree: Flux paths start above it
    ctx.checker = checker
    timings["parse"] = time.monotonic() - t0
    timed("yaml", t_parse)

    # While the helper renders, the Terraform wiring (it needs no rendered object) is checked here.
    t_tf = time.monotonic()
    per_area["terraform"] += terraform_checks.wiring_findings(root, gate_config, sources, session.prefix)
    timed("terraform", t_tf)
    builds, clusters = joined(rendering)
    timings["render"] = time.monotonic() - t
    per_area["terraform"] += terraform_checks.account_findings(root, gate_config, sources, clusters)  # (the namespaces as rendered)
    per_area["yaml"] += [e for e in sources.errors if gate_config.reads(root, e.file, {b.dir for c in clusters for b in c.flux if b.dir})]
    helm = beside("rules", helm_values.helm_rules, ctx, root, clusters)  # it waits on the helpers: beside the rules below

    t = time.monotonic()
    ctx.failed_dirs = {b.dir for b in builds if b.error}
    ctx.renames = renames.Renames(root, sources, builds, clusters)
    # The patch probe goes to the helper first, so that it renders while the rules below run here.
    probed = kustomize_warnings.probe_patches(ctx, root, builds, clusters, session)
    warnings = beside("rules", lambda: kustomize_warnings.repository_warnings(ctx, root, clusters) + probed())
    # The rendered objects go to the helper's checks now too; the samples and variables follow once the rules made them.
    # A ${VAR} in a directory Flux substitutes is checked as substituted, in the cluster's render, not as written.
    substituted = substitution.substituted_dirs(root, clusters, builds, session.prefix)
    rendered = [(b, o, None) for b in builds if not b.error for o in b.objects if substitution.as_written(b, o, substituted)]
    rendered += [(fb, o, None) for c in clusters for fb in c.flux for o in fb.objects]
    manager_for = kueue_fit.managers(root, clusters)  # per build, the Kueue manager its objects meet
    for c in clusters:  # a Ray object a layer applies meets its namespace's admission (LimitRanges, PodSecurity, quota, a default LocalQueue)
        applied = [o for _, o in c.applied()]
        ctx.sample_related.update({id(o): in_namespace_of(o, applied, schema_check.RELATED_KINDS) for o in applied if schema_check.is_ray_workload(o)})
    checked = schema_check.submit(ctx, checker, rendered, [manager_for(b) for b, _, _ in rendered])
    # What follows judges Kueue's objects as Kueue stores them (v1beta1 ones converted); the checks above, as written.
    per_area["rules"] += conversion.convert_stored(ctx, builds, clusters)
    validated, nested = [], render.only_included(builds, clusters, ctx.reached)  # (label, object, source file, Kueue manager) of samples and variables, for the checks
    for b in builds:
        if b.error:
            # A YAML error in a file it reads, or a directory it includes that fails on its own, is the cause: reported once.
            if not ctx.cause_of(b.dir):
                per_area["render"].append(build_errors.build_error(root, b))
            continue
        per_area["rules"] += rules.kueue_rules(ctx, b, b.objects) if b.dir not in nested else []  # judged where included
    presuming: list[tuple[Finding, tuple]] = []  # (sample-fits finding, the flavors its reasons name): folding.fold
    pending_fits: dict = {}  # per cluster name, Kueue's flavor assigner's answers for its samples (sample_rules)
    pinned = version_rules.pins(root)
    per_area["rules"] += version_rules.pins_findings(root)
    locked = flux_tenancy.lockdown(root, gate_config)
    for c in clusters:
        c.provided += flux_tenancy.provided(locked) if (root / gate_config.tfvars_file(c.name, root)).is_file() else []
    installed = served_apis.installed_somewhere(root, clusters, pinned)
    network: list = []  # per cluster, ray-network-policy's pending findings
    for c in clusters:
        per_area["rules"] += rules.cluster_rules(ctx, root, c)
        per_area["rules"] += flux_rules.flux_rules(ctx, c) + flux_tenancy.tenancy_rules(ctx, root, c, locked)
        per_area["rules"] += version_rules.version_rules(ctx, root, c, pinned)
        sample_findings, samples, fits = sample_rules.sample_rules(ctx, root, c)
        per_area["rules"] += sample_findings
        pending_fits[c.name] = fits  # Kueue's flavor assigner answers in the helper while the rules below run
        network.append(network_policy.network_rules(ctx, root, c, samples))  # tools/kubecheck answers meanwhile
        per_area["rules"] += cluster_refs.cluster_ref_rules(ctx, root, c) + sample_admission.admission_rules(ctx, root, c, samples)
        per_area["rules"] += queue_activity.queue_activity_rules(ctx, root, c) + served_apis.served_api_rules(ctx, root, c, samples, pinned, installed)
        validated += [(f"cluster {c.name}: {gate_config.samples}", s, f"{WORKLOADS_DIR}/{name}.yaml", manager_for(c.entry)) for name, s, _ in samples]
        validated += [(gate_config.variables_file(c.name), s, gate_config.variables_file(c.name), None) for s in c.variables]
    per_area["rules"] += ctx.renames.findings() + terraform_flux.collision_findings(root, clusters, builds, gate_config, session.prefix)  # renames: once all asked
    timed("rules", t)
    # A LimitRange or ResourceQuota the apiserver refuses never exists on the cluster: the samples meet none.
    rendered_found = checked()
    refused = {f.resource for f in rendered_found if f.rule == "api-validation"}
    ctx.sample_related = {k: [o for o in objs if resource_id(o) not in refused] for k, objs in ctx.sample_related.items()}
    created = frozenset(f.resource for f in rendered_found if f.rule in ("schema", "api-validation", "kueue-webhook"))
    per_area["schema"] += updates.update_findings(ctx, checker, clusters, joined(based), base, created) if based else []
    schema = beside("schema", lambda: rendered_found + schema_check.findings(ctx, checker, [v[:3] for v in validated], [v[3] for v in validated]))
    t_cap = time.monotonic()
    per_area["capacity"] += capacity.capacity_findings(root, clusters, sources, gate_config, pending_fits, created, ctx.writers)
    timed("capacity", t_cap)
    per_area["rules"] += joined(warnings) + joined(helm) + [f for pending in network for f in pending()]
    presuming += [found for fits in pending_fits.values() for found in fits.findings()]
    timings["rules"] = time.monotonic() - t

    t = time.monotonic()
    per_area["schema"] += joined(schema) + schema_check.pod_security_findings(ctx)
    folding.fold(per_area, presuming)  # follow-ons under their root cause
    timings["schema"] = time.monotonic() - t  # what was left to wait for once the rules were done
    timings["total"] = time.monotonic() - t0

    unique, hidden = {}, []  # hidden: what `disable` entries kept out, counted as reported (once however many builds)
    for name, found in per_area.items():
        kept, _ = gate_config.apply(found)
        hidden += [f for f in found if f not in kept]
        for f in kept:
            if keep_once(unique, f):
                areas[name].findings += 1  # counted where it was first found
    return Report(sorted(unique.values()), sorted(RULE_IDS), len(builds) + sum(len(c.flux) for c in clusters),
                  len(rendered) + len(validated), timings, list(areas.values()), gate_config.apply([])[1], distinct(hidden))


def summary_table(report: Report) -> str:
    """The per-area table printed at the end of a run."""
    width, what = max(len(a.name) for a in report.areas), max(len(a.what) for a in report.areas)
    lines = [f"{'area':<{width}}  {'checks':<{what}}  findings    time"]
    for a in report.areas:
        lines.append(f"{a.name:<{width}}  {a.what:<{what}}  {a.findings:>8}  {a.seconds:5.2f}s")
    lines.append(f"{'total':<{width}}  {'':<{what}}  {len(report.findings):>8}  {report.timings.get('total', 0):5.2f}s")
    return "\n".join(lines)


def harness_version() -> str:
    import importlib.metadata  # a tenth of the start-up: only --version and SARIF need it

    try:
        return importlib.metadata.version("aks-ray-kueue-harness")
    except importlib.metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0+unknown"


class _VersionAction(argparse.Action):
    """--version, its text computed only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(formats.emit(version_text(), "the version"))


def version_text() -> str:
    """`--version`: the harness, and the Kubernetes, Kueue and KubeRay it validates against."""
    lines = [f"{formats.TOOL} {harness_version()}"]
    for name in ("kubernetes", "kueue", "kuberay"):
        pin = versions.entry(name)
        lines.append(f"{name} {pin.get('production', pin['version'])} (built from {pin['module']} {pin['version']})")
    return "\n".join(lines) + "\n"


def text_report(report: Report, quiet: bool) -> str:
    lines = [f.text() for f in report.findings]
    if not quiet:
        lines.append(summary_table(report))
    if report.disabled:
        lines.append(f"{report.suppressed} finding(s) not reported, by the `disable` entries of {config.CONFIG_FILE}:")
        lines += [f"  {one_line(line)}" for line in report.disabled]
    timing = ", ".join(f"{k} {v:.2f}s" for k, v in report.timings.items())
    errors = sum(f.is_error for f in report.findings)
    warnings = len(report.findings) - errors
    status = f"{errors} finding(s)" if errors else "clean"
    if warnings:
        status += f", {warnings} warning(s)"
    lines.append(f"validate: {status}; {report.builds} builds, {report.objects} objects, {len(report.checks)} rules ({timing})")
    return "\n".join(lines) + "\n"


def render_report(out: formats.Output, report: Report, quiet: bool) -> str:
    if out.format == "text":
        return text_report(report, quiet)
    if out.format == "json":
        return formats.to_json(report.findings, report.disabled, report.suppressed)
    if out.format == "junit":
        return formats.to_junit(report.findings, report.checks, report.disabled)
    if out.format == "github":
        return formats.to_github(report.findings)
    return formats.to_sarif(report.findings, RULE_IDS, harness_version(), report.disabled)


def _output(spec: str) -> formats.Output:
    try:
        return formats.Output.parse(spec)
    except formats.FormatError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv: list[str] | None = None, ahead: render.Ahead | None = None) -> int:
    parser = argparse.ArgumentParser(prog="validate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", nargs="?", help="the GitOps repository to check: this one, or one laid out as its .ray-kueue-gate.yaml says (default: the one the working directory is in, found upward as git does)")
    parser.add_argument("--format", dest="outputs", action="append", type=_output, default=[], metavar="FORMAT[=DEST]",
                        help=f"a report: {'|'.join(formats.FORMATS)}, to DEST (a file, or - for stdout: the default); repeatable")
    parser.add_argument("--json", dest="outputs", action="append", type=lambda p: formats.Output("json", p), metavar="FILE",
                        help="write findings as JSON here (--format json=FILE)")
    parser.add_argument("--junit", dest="outputs", action="append", type=lambda p: formats.Output("junit", p), metavar="FILE",
                        help="write a JUnit XML report here (--format junit=FILE)")
    parser.add_argument("--quiet", action="store_true", help="print only findings and the summary line")
    parser.add_argument("--list-rules", action="store_true", help="print every rule as the README's markdown table and exit")
    parser.add_argument("--version", action=_VersionAction,
                        help="print the harness version and the pinned Kubernetes, Kueue and KubeRay, and exit")
    parser.add_argument("--kueue", metavar="VERSION", help="validate as Kueue VERSION would (a pin or candidate of the gate's versions.yaml): "
                        "its CRD schemas and its quota accounting, e.g. --kueue v0.18.3")
    parser.add_argument("--kuberay", metavar="VERSION", help="validate against KubeRay VERSION's CRDs (a pin or candidate of the gate's versions.yaml)")
    parser.add_argument("--base", metavar="REF", help="a git ref (the pull request's base): its objects' changes are validated as updates")
    args = parser.parse_args(argv)
    try:
        version_rules.select_versions(Path(args.repo) if args.repo else entry.repository_root(Path.cwd()),
                                      kueue=args.kueue, kuberay=args.kuberay)
    except HarnessError as err:
        tell(f"validate: {err}")
        return 2
    if args.list_rules:
        return formats.emit(rule_table(), "the rule table")
    try:
        outputs = formats.plan_outputs(args.outputs)
    except formats.FormatError as err:
        parser.error(str(err))
    root = Path(args.repo) if args.repo else (entry.repository_root(Path.cwd()) or Path("."))
    if not root.is_dir():
        tell(f"validate: {root}: no such directory")
        return 2
    if not entry.looks_like_checkout(root):
        tell(f"validate: {root.resolve()} does not look like a checkout of a GitOps repository (no clusters/, overlays/ or {config.CONFIG_FILE}{', here or above' * (args.repo is None)})")
        return 2
    try:
        report = validate_repository(root, ahead, args.base)
    except (HarnessError, RuntimeError, OSError) as err:  # RenderError, ToolBuildError, SchemaError, BaseError, ...
        tell(f"validate: {'' if isinstance(err, updates.BaseError) else 'the gate could not run: '}{err}")
        return 2
    except Exception as err:  # a bug of the gate, not a finding: exit 2, never 1 ("findings")
        if os.environ.get("RAY_KUEUE_TRACEBACK"):
            raise
        where = traceback.extract_tb(err.__traceback__)[-1]
        tell(f"validate: the gate could not run (internal error, please report it): {type(err).__name__}: {err} "
             f"at {Path(where.filename).name}:{where.lineno}; RAY_KUEUE_TRACEBACK=1 shows the traceback")
        return 2
    if prefix := entry.in_git(root):  # the checked tree is a subdirectory of its Git repository: paths from the Git root
        report.findings = [replace(f, file=f"{prefix}/{f.file}") if f.file else f for f in report.findings]
    try:
        formats.write_outputs([(out, render_report(out, report, args.quiet)) for out in outputs])
    except formats.ReportError as err:
        tell(f"validate: {err}")
        return 2
    return 1 if any(f.is_error for f in report.findings) else 0


def cli(ahead: render.Ahead | None = None) -> None:
    """The console script: `main`, then the exit without the interpreter's teardown (as mypy's CLI does),
    which costs more than several rules. Reports are written and flushed inside `main` (one that cannot be is its exit 2);
    the helpers end with their stdin. A stream closed or failing here (None when its descriptor was closed) changes nothing."""
    code = main(None, ahead)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    cli()
