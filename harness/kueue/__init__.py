"""Kueue behaviour: the queue layouts applied to a cluster and removed again, RayJobs sized for
the scenarios, the waits on Kueue's decisions, a RayJob's result as Ray would report it (`results`), whether an admitted job runs (`placement`), every behavioural scenario defined once
(`scenarios`, run by `run_scenario` with hooks at named steps), the invariant checker (with its
admission ledger) and the scale scenario."""
from harness.kueue import scenarios
from harness.kueue.admissions import AdmissionLedger
from harness.kueue.invariants import InvariantChecker
from harness.kueue.queues import (CLUSTER_QUEUE, FOUR_GPUS, LOCAL_QUEUE, PRIORITY_LABEL, RAYCLUSTER, RAYJOB, WORKLOAD,
                                  Queues, Size, flavor_usage, pods_running, rayjob)
from harness.kueue.expectations import StepResult, short_reason
from harness.kueue.placement import not_placed, refused
from harness.kueue.results import finish_rayjob
from harness.kueue.steps import ACTED, AFTER, BEFORE, Hook, Scenario, ScenarioRun, Step, StepRun, run_scenario

__all__ = ["ACTED", "AdmissionLedger", "AFTER", "BEFORE", "CLUSTER_QUEUE", "FOUR_GPUS", "LOCAL_QUEUE", "PRIORITY_LABEL", "RAYCLUSTER", "RAYJOB",
           "WORKLOAD", "Hook", "InvariantChecker", "Queues", "Scenario", "ScenarioRun", "Size", "Step", "StepResult", "StepRun",
           "finish_rayjob", "flavor_usage", "not_placed", "refused", "pods_running", "rayjob", "run_scenario", "scenarios", "short_reason"]
