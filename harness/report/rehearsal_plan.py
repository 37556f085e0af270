"""Which rehearsals the `rehearsal` workflow runs (.github/workflows/rehearsal.yml): the matrix of
(checkout, Kueue candidate, KubeRay candidate) it hands to `make rehearse`.

- Weekly and on demand: every Kueue candidate of versions.yaml with the newest KubeRay candidate
  (or the versions given), from the checkout itself.
- A pull request that changes versions.yaml:
  - a changed production pin (a promotion) is rehearsed from the pull request's *base*, where
    the old pin is still the production pin and the new one must be listed as a candidate: the
    report says what the upgrade changes. The README's promotion path is "candidate first, then
    promote", so a pin that was never a candidate is refused with that advice; a pin moved back to an older release
    (a rollback) rehearses nothing, with a notice (the rehearsal runs upgrades: candidates are newer than the pin);
  - a candidate the pull request adds is rehearsed from its head, against the pins, the other
    component at its pin, so the report shows that version's differences alone.
  A pull request that touches versions.yaml for anything else rehearses nothing.

    python -m harness.report.rehearsal_plan [--kueue V] [--kuberay V]      (schedule, dispatch)
    python -m harness.report.rehearsal_plan --base OLD.yaml --head NEW.yaml  (pull request)

Prints `matrix=<json>` for $GITHUB_OUTPUT; exit 2 with a one-line reason when a plan cannot be made.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from harness.core import HarnessError, releases, versions

COMPONENTS = versions.SELECTABLE  # kueue, kuberay


class PlanError(HarnessError, ValueError):
    pass


def _listed(doc: dict, component: str) -> tuple[str, list[str]]:
    entry = doc.get(component) if isinstance(doc, dict) else None
    if not isinstance(entry, dict) or not entry.get("version"):
        raise PlanError(f"versions.yaml: no {component}.version")
    return entry["version"], [c["version"] for c in entry.get("candidates") or [] if isinstance(c, dict) and c.get("version")]


def scheduled(kueue: str = "", kuberay: str = "") -> list[dict]:
    """Every Kueue candidate (or `kueue`) with the newest KubeRay candidate (or `kuberay`), from the checkout."""
    kueue_versions = [kueue] if kueue else [c["version"] for c in versions.candidates("kueue")]
    kuberay = kuberay or max((c["version"] for c in versions.candidates("kuberay")), key=releases.parse)
    for k in kueue_versions:
        versions.parse_selection(f"kueue={k},kuberay={kuberay}")  # a version versions.yaml does not list is refused
    return [{"ref": "head", "kueue": k, "kuberay": kuberay} for k in kueue_versions]


def pull_request(base: dict, head: dict) -> list[dict]:
    """The rehearsals a pull request changing versions.yaml from `base` to `head` needs (see the module)."""
    old = {c: _listed(base, c) for c in COMPONENTS}
    new = {c: _listed(head, c) for c in COMPONENTS}
    plan: list[dict] = []
    back = rollbacks(base, head)
    promoted = {c: new[c][0] for c in COMPONENTS if new[c][0] != old[c][0] and c not in back}
    for component, version in promoted.items():
        if version not in old[component][1]:
            raise PlanError(f"versions.yaml {component}: the pin moves to {version}, which the base branch does not list "
                            f"under candidates: add it as a candidate first (the rehearsal runs on that pull request), then promote it")
    if promoted:
        plan.append({"ref": "base", **{c: promoted.get(c, old[c][0]) for c in COMPONENTS}})
    for component in COMPONENTS:
        for version in new[component][1]:
            if version not in old[component][1] and version != old[component][0]:
                plan.append({"ref": "head", **{c: new[c][0] for c in COMPONENTS}, component: version})
    return plan


def rollbacks(base: dict, head: dict) -> dict[str, str]:
    """Per component whose pin the pull request moves to an older release (a rollback after a bad upgrade): why it
    rehearses nothing. The rehearsal runs an upgrade, a candidate newer than the pin (tests/static/test_versions.py), and
    the older release is the one the pull request's own checks then run on."""
    out = {}
    for component in COMPONENTS:
        (was, _), (now, _) = _listed(base, component), _listed(head, component)
        if now != was and releases.parse(now) < releases.parse(was):
            out[component] = (f"versions.yaml {component}: the pin moves back from {was} to {now} (a rollback): no upgrade "
                              f"to rehearse; this pull request's own checks run on {now}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kueue", default="")
    parser.add_argument("--kuberay", default="")
    parser.add_argument("--base", type=Path, help="the pull request base's versions.yaml")
    parser.add_argument("--head", type=Path, help="the pull request head's versions.yaml")
    args = parser.parse_args(argv)
    try:
        if bool(args.base) != bool(args.head):
            raise PlanError("--base and --head go together")
        if args.base:
            try:
                docs = [yaml.safe_load(p.read_text()) for p in (args.base, args.head)]
            except (OSError, yaml.YAMLError) as err:
                raise PlanError(f"cannot read versions.yaml: {err}") from None
            plan = pull_request(*docs)
            for notice in rollbacks(*docs).values():
                print(f"rehearsal_plan: {notice}", file=sys.stderr)
        else:
            plan = scheduled(args.kueue, args.kuberay)
    except HarnessError as err:
        print(f"rehearsal_plan: {err}", file=sys.stderr)
        return 2
    print("matrix=" + json.dumps({"include": plan}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
