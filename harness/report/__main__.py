"""What a change does to who gets GPUs: the working tree compared with BASE.

    scripts/report --base main [--out build/report] [--repo .] [--kubeconfig FILE] [--scenario NAME ...]

Writes OUT/report.md, OUT/comment.md (the same without images, for a PR comment), OUT/report.json
and one PNG per scenario and ref. Both refs' scenarios run on one cluster: the embedded control
plane started here, or the cluster of --kubeconfig. Exit 0 with a report, 2 on bad input (a ref
that does not exist, a configuration that does not render) with nothing written to OUT.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from harness.cluster import Names
from harness.core import HarnessError, TreeError, export_tree, say, timeouts
from harness.report import ReportInputError

REPORT_FILES = ("report.md", "comment.md", "report.json")  # plus *.png: what OUT may already hold


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    if check and proc.returncode != 0:
        raise ReportInputError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    return proc


def resolve_base(repo: Path, ref: str) -> str:
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if proc.returncode != 0:
        from harness.gate import missing_ref_hint  # the gate's --base says the same

        raise ReportInputError(f"base ref {ref!r} not found in {repo} ({missing_ref_hint(repo, ref)})")
    return proc.stdout.decode().strip()


def extract_tree(repo: Path, sha: str, dest: Path) -> Path:
    """The tree of a commit as plain files (written by git: harness.core.export_tree), leaving the repository's refs,
    worktrees and index untouched."""
    try:
        return export_tree(repo, sha, dest)
    except TreeError as err:
        raise ReportInputError(str(err)) from None


def check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ReportInputError(f"--out {out} exists and is not a directory")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in REPORT_FILES and p.suffix != ".png")
        if foreign:
            raise ReportInputError(f"--out {out} holds files the report did not write ({', '.join(foreign[:5])}); "
                                   "choose an empty directory or a previous report's")


def replace_dir(staging: Path, out: Path) -> None:
    """OUT is replaced in one rename, so it never holds half a report."""
    out.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{int(time.time() * 1000)}")
        out.rename(old)
    staging.rename(out)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def _api_client(kubeconfig: Path):
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return client.ApiClient(cfg)


def build(args: argparse.Namespace) -> Path:
    from harness.report import markdown, plots, quotas, scenarios
    from harness.gate import validate_repository

    started = time.monotonic()
    repo = Path(args.repo).resolve()
    top = _git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise ReportInputError(f"{repo} is not a git checkout, so there is no base to compare with")
    repo = Path(top.stdout.decode().strip())
    if not (repo / "clusters").is_dir():
        raise ReportInputError(f"{repo} does not look like a checkout of this repository (no clusters/)")
    base_sha = resolve_base(repo, args.base)
    head_sha = _git(repo, "rev-parse", "HEAD").stdout.decode().strip()
    dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no").stdout.strip())
    head_label = "working tree" + (" with uncommitted changes" if dirty else "")
    out = Path(args.out).resolve()
    check_out_dir(out)
    selected = scenarios.by_name(args.scenario)

    with tempfile.TemporaryDirectory(prefix="report-") as tmp:
        tmp = Path(tmp)
        say("report", f"base {args.base} = {base_sha[:12]}: extracting its tree with git")
        base_root = extract_tree(repo, base_sha, tmp / "base")
        trees = {"base": base_root, "head": repo}
        say("report", "rendering both trees (Flux rendering, as the static gate)")
        q = {side: quotas.load_tree(root, f"{side} ({args.base if side == 'base' else head_label})") for side, root in trees.items()}
        # Every queue layer a scenario needs renders, before any cluster work: the scenario's cluster's own where it
        # runs the scenario's layout, else the bare overlay.
        layers = {(sc.name, side): scenarios.queue_layer(root, side, sc, q[side].renders) for side, root in trees.items() for sc in selected}
        gate = {}
        if not args.no_gate:
            say("report", "static gate on both trees")
            for side, root in trees.items():
                gate[side] = validate_repository(root).findings

        api = _api_client(Path(args.kubeconfig)) if args.kubeconfig else None
        results = scenarios.run_all([(sc, root, side, layers[(sc.name, side)]) for side, root in trees.items() for sc in selected],  # one ref at a time
                                    tmp / "cluster", api, Names(args.namespace, args.prefix), args.timeout)

        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))  # same filesystem: one rename
        staging.chmod(0o755)
        try:
            data = markdown.ReportData(str(repo), args.base, base_sha, head_label, head_sha,
                                       quotas.diff(q["base"], q["head"]), selected, results, gate=gate,
                                       plane=f"the cluster of --kubeconfig {args.kubeconfig}" if args.kubeconfig else markdown.EMBEDDED)
            _plot(plots, data, staging)
            data.seconds = time.monotonic() - started
            (staging / "report.md").write_text(markdown.render(data))
            (staging / "comment.md").write_text(markdown.render(data, images=False, note=args.comment_note))
            (staging / "report.json").write_text(json.dumps(_json(data), indent=1, default=str))
            replace_dir(staging, out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    changed = data.changed_scenarios()
    switches = "".join(f", {c.name} switches layout" for c, _, _ in data.layout_switches())
    say("report", f"wrote {out}/report.md: {len(changed)} scenario outcome(s) changed{switches}, "
                  f"{sum(c.changed for c in data.clusters)} cluster(s) with quota changes ({data.seconds:.0f}s)")
    return out


def _plot(plots, data, staging: Path) -> None:
    for sc in data.scenarios:
        runs = [r for side in ("base", "head") if (r := data.results.get((sc.name, side))) and r.recording]
        if not runs:
            continue
        # One scale for both refs, so the two pictures compare at a glance.
        ymax = max(max(sum(r.nominal_gpus.values()) for r in runs),
                   max((float(sum(v[0] for (f, res), v in s.usage.items() if res == plots.GPU)) for r in runs for s in r.recording.held),
                       default=0)) + 1
        xmax = max(r.recording.end for r in runs)
        for r in runs:
            name = f"{sc.name}-{r.ref}.png"
            plots.timeline(r.recording, r.cluster_queues, f"{sc.name} on {r.ref} ({data.base_ref if r.ref == 'base' else data.head_label})",
                           staging / name, r.nominal_gpus, ymax * 1.35, xmax)
            data.images[(sc.name, r.ref)] = name


def _json(data) -> dict:
    return {
        "base": {"ref": data.base_ref, "sha": data.base_sha}, "head": {"label": data.head_label, "sha": data.head_sha},
        "changed_scenarios": [s.name for s in data.changed_scenarios()],
        "layout_switches": [{"cluster": c.name, "base": c.overlays[0], "head": c.overlays[1], "ran_base": b.scenario if b else None,
                             "ran_head": h.scenario if h else None} for c, b, h in data.layout_switches()],
        "scenarios": [{"scenario": r.scenario, "ref": r.ref, "verdict": r.verdict(), "failures": r.failures, "error": r.error,
                       "ran_on": r.ran_on, "asks": r.asks, "queues": r.bind,
                       "steps": [{"title": s.title, "outcome": s.outcome(), "jobs": s.jobs} for s in r.steps],
                       "events": [asdict(e) for e in (r.recording.events if r.recording else [])],
                       "gpus_per_node": [{"t": round(t, 3), "nodes": {n: float(g) for n, g in per_node.items()}}
                                         for t, per_node in (r.recording.occupancy if r.recording else [])]}
                      for r in data.results.values()],
        "clusters": [{"name": c.name, "changed": c.changed, "overlays": c.overlays, "queues_added": c.queues_added,
                      "queues_removed": c.queues_removed,
                      "rows": [{"key": r.key, "status": r.status, **{k: asdict(v) for k, v in r.cells.items()}} for r in c.rows]}
                     for c in data.clusters],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="git ref to compare the working tree with (e.g. main, origin/main)")
    parser.add_argument("--out", default="build/report", help="output directory (default build/report), replaced as a whole")
    parser.add_argument("--repo", default=".", help="checkout whose working tree is the head (default .)")
    parser.add_argument("--kubeconfig", help="run the scenarios on this cluster instead of starting the embedded control plane")
    parser.add_argument("--namespace", default="ray", help="namespace for the scenario RayJobs (default ray)")
    parser.add_argument("--prefix", default="", help="prefix for cluster-scoped names on a shared cluster (harness.cluster.isolation)")
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeatable; default all)")
    parser.add_argument("--timeout", type=float, default=timeouts.SETTLE,
                        help=f"bound of every wait on Kueue, seconds (default {timeouts.SETTLE:g})")
    parser.add_argument("--no-gate", action="store_true", help="leave out the static gate's findings")
    parser.add_argument("--comment-note", default="", help="a line for comment.md (e.g. where the plots are)")
    args = parser.parse_args(argv)
    try:
        build(args)
    except ReportInputError as err:
        print(f"report: {err}", file=sys.stderr)
        return 2
    except (HarnessError, RuntimeError, OSError) as err:  # ClusterError, ToolBuildError, WaitTimeout, ...
        print(f"report: could not run: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("report: interrupted; nothing written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
