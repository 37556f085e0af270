"""`make report BASE=<ref>`: what a change does to who gets GPUs.

    quotas    effective quota per cluster, ClusterQueue, flavor and resource, from the rendered
              configuration of a tree, and headroom against the Terraform node pools
    recorder  Workload and ClusterQueue state over time, from watches on the real cluster
    scenarios the behavioural scenarios of this tree, run against each ref's queue layout
    plots     one timeline PNG per scenario and ref (matplotlib)
    markdown  report.md
    __main__  the CLI (python -m harness.report)
"""

from harness.core import HarnessError



class ReportInputError(HarnessError):
    """Bad input (a ref that does not exist, a configuration that does not render): the message
    names the ref, file or resource and is printed without a traceback (exit 2)."""
