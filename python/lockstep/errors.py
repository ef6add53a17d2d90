"""The exceptions lockstep raises, each carrying lockstep's own message.

``ScenarioError`` messages name the file, the line and the key when the error is
in a scenario's YAML (``scenario.yaml:12: workload.steps: expected an integer,
got 'two'``); those three are also attributes (``None`` when the message does
not have them). Pure Python: usable without the compiled extension.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = [
    "LockstepError",
    "ScenarioError",
    "ConfigError",
    "PolicyError",
    "BudgetError",
]

# "FILE:LINE: KEY: message" (sim/scenario/scenario_yaml.cc, Reader::Error).
_LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<key>[^:\s][^:]*?): (?P<what>.*)$", re.S)


class LockstepError(Exception):
    """Base of lockstep's errors; alone, an internal error (a bug in lockstep)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message: str = message


class ScenarioError(LockstepError, ValueError):
    """A scenario that does not parse or validate, or a run it cannot make."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.file: Optional[str] = None
        self.line: Optional[int] = None
        self.key: Optional[str] = None
        m = _LOCATED.match(message)
        if m:
            self.file = m.group("file")
            self.line = int(m.group("line"))
            self.key = m.group("key")


class ConfigError(LockstepError, ValueError):
    """A parallel configuration SGLang refuses, or bad decision inputs."""


class PolicyError(LockstepError, ValueError):
    """A dispatch policy lockstep does not know (the message lists the known ones)."""


class BudgetError(LockstepError, ValueError):
    """A run whose memory estimate is over the budget (max_memory)."""
