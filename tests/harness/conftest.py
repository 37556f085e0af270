"""Fixtures of the tests of the harness itself (process hygiene, isolation of parallel runs)."""
from __future__ import annotations

import sys

import pytest

from harness.testing import Child


@pytest.fixture
def spawn():
    """spawn(*args) runs `python *args` from the repository root; whatever is left is killed after."""
    children: list[Child] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Child:
        child = Child([sys.executable, *args], env)
        children.append(child)
        return child

    yield start
    for child in children:
        child.kill_all()

