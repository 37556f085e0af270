"""pytest helpers: the summary tables at the end of a run and the process-hygiene probes."""
from harness.testing.hygiene import Child, cluster_records, leftovers, listening_ports, processes_under

__all__ = ["Child", "cluster_records", "leftovers", "listening_ports", "processes_under"]
