"""Benchmarks: medians of several runs, against a reference measured in the same run.

    python -m harness.bench validate [--runs N]   the full static gate vs `kustomize build | kubeconform`
    python -m harness.bench cluster [--runs N]    embedded control plane cold start; the behavioural suite
    python -m harness.bench flux [--commits N]    git push to the ClusterQueue through the real Flux
    python -m harness.bench scale [--runs N] [--sizes N ...]   the scale scenario for N RayJobs
    python -m harness.bench rehearse [--runs N] [--jobs 1|2]   make rehearse (both sides) vs the behavioural suite
"""
from __future__ import annotations

import argparse
import sys

from harness.core import HarnessError, report_error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("validate").add_argument("--runs", type=int, default=5)
    sub.add_parser("cluster").add_argument("--runs", type=int, default=5)
    sub.add_parser("flux").add_argument("--commits", type=int, default=5)
    rehearse = sub.add_parser("rehearse")
    rehearse.add_argument("--runs", type=int, default=1, help="runs of each (default 1: a rehearsal takes minutes)")
    rehearse.add_argument("--jobs", type=int, choices=(1, 2), default=2, help="the rehearsal's --jobs (default 2)")
    scale = sub.add_parser("scale")
    scale.add_argument("--runs", type=int, default=3, help="runs per N; the table shows medians (default 3)")
    scale.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 1000], help="values of N (default 100 500 1000)")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except HarnessError as err:  # a build, a cluster or versions.yaml that fails: one line, exit 2
        return report_error("bench", err)


def _run(args) -> int:
    if args.what == "validate":
        from harness.bench.validate import bench_validate
        bench_validate(args.runs)
    elif args.what == "cluster":
        from harness.bench.cluster import bench_cluster
        bench_cluster(args.runs)
    elif args.what == "flux":
        from harness.bench.flux import bench_flux
        bench_flux(args.commits)
    elif args.what == "rehearse":
        from harness.bench.rehearse import bench_rehearse
        bench_rehearse(args.runs, args.jobs)
    else:
        from harness.bench.scale import bench_scale
        return bench_scale(args.runs, tuple(args.sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
