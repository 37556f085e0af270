"""pytest helpers: the summary tables at the end of a run, the process-hygiene probes, and a
sandbox that runs a harness command as an ordinary user (`nobody` when the tests run as root)."""
from harness.core import CONFIG_PATHS, copy_config
from harness.testing.unprivileged import Sandbox
from harness.testing.queues import minimal_queue
from harness.testing.hygiene import Child, cluster_records, leftovers, listening_ports, processes_under

__all__ = ["CONFIG_PATHS", "Sandbox", "copy_config", "Child", "cluster_records", "leftovers", "listening_ports", "processes_under", "minimal_queue"]
