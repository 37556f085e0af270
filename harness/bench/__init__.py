"""Benchmarks: medians of several runs, against a reference measured in the same run.

    python -m harness.bench validate|cluster|flux|scale|rehearse
"""
