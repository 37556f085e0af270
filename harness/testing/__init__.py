"""pytest helpers: the summary tables at the end of a run, the process-hygiene probes, and a
sandbox that runs a harness command as an ordinary user (`nobody` when the tests run as root)."""
from harness.testing.unprivileged import Sandbox
from harness.testing.hygiene import Child, cluster_records, leftovers, listening_ports, processes_under

__all__ = ["Sandbox", "Child", "cluster_records", "leftovers", "listening_ports", "processes_under"]
