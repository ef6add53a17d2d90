"""Shared fixtures: the source tree's scenarios and the lockstep CLI (when built)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SOURCE_DIR = Path(os.environ.get("LOCKSTEP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SCENARIOS = SOURCE_DIR / "topologies" / "scenarios"
MAIN_SCENARIO = SCENARIOS / "tp4-ep2-qwen3-h200.yaml"


@pytest.fixture
def scenarios_dir() -> Path:
    if not SCENARIOS.is_dir():
        pytest.skip(f"the source tree's scenarios are not at {SCENARIOS}")
    return SCENARIOS


@pytest.fixture
def main_scenario(scenarios_dir: Path) -> Path:
    return MAIN_SCENARIO


@pytest.fixture
def lockstep_cli() -> str:
    """The lockstep binary built beside this package (ctest sets LOCKSTEP_CLI)."""
    cli = os.environ.get("LOCKSTEP_CLI") or shutil.which("lockstep")
    if not cli or not os.access(cli, os.X_OK):
        pytest.skip("the lockstep CLI is not built here (set LOCKSTEP_CLI)")
    return cli
