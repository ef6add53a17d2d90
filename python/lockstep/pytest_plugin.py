"""The lockstep pytest plugin (entry point ``pytest11``: ``lockstep.pytest_plugin``).

``pytest --lockstep-scenarios DIR`` turns every scenario YAML under DIR into
test items, one per seed (``--lockstep-seeds N``, from ``--lockstep-start S``),
with ids ``<file>::<scenario name>[seed=N]``. An item runs the scenario in the
simulator and fails, with the report's explanation and the command that
replays it, when the verdict is not the one the scenario expects (its
``expect:``, else clean or fail_stop). A file that does not parse is one
failing item with lockstep's message (file, line, key).

The ``lockstep_scenario`` fixture loads, builds and runs scenarios from Python
tests:

    def test_more_steps(lockstep_scenario):
        s = lockstep_scenario("scenarios/tp4.yaml", workload={"steps": 3})
        report = lockstep_scenario.run(s, seed=2)
        assert report.verdict == "clean", report.explanation
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Union

import pytest

__all__ = ["ScenarioFactory", "ScenarioFailure", "ScenarioFile", "ScenarioItem"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lockstep", "lockstep scenarios as tests")
    group.addoption(
        "--lockstep-scenarios",
        action="append",
        default=[],
        metavar="DIR",
        help="run every scenario YAML under DIR (or the file) as tests; may be repeated",
    )
    group.addoption(
        "--lockstep-seeds",
        type=int,
        default=1,
        metavar="N",
        help="seeds per scenario (default 1)",
    )
    group.addoption(
        "--lockstep-start", type=int, default=1, metavar="S", help="first seed (default 1)"
    )
    group.addoption(
        "--lockstep-policy",
        default=None,
        metavar="NAME",
        help="dispatch policy or mutant to run (default: each scenario's own)",
    )
    group.addoption(
        "--lockstep-catalogue",
        default=None,
        metavar="DIR",
        help="catalogue directory (hardware/, models/) for the scenarios",
    )


def _scenario_files(root: str) -> List[Path]:
    path = Path(root)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise pytest.UsageError(f"--lockstep-scenarios {root}: no such file or directory")
    files = [p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()]
    # A catalogue's hardware/ and models/ are not scenarios.
    files = [p for p in files if not {"hardware", "models"} & set(p.relative_to(path).parts[:-1])]
    return sorted(files)


class ScenarioFailure(Exception):
    """A scenario's verdict was not the expected one."""

    def __init__(self, report: Any, replay: str) -> None:
        super().__init__(report.explanation)
        self.report = report
        self.replay = replay


class ScenarioFile(pytest.File):
    """One scenario YAML: one item per seed."""

    def collect(self) -> Iterator[pytest.Item]:
        import lockstep

        config = self.config
        seeds = config.getoption("lockstep_seeds")
        start = config.getoption("lockstep_start")
        catalogue = config.getoption("lockstep_catalogue")
        try:
            scenario = lockstep.Scenario.from_file(str(self.path), catalogue=catalogue)
        except lockstep.ScenarioError as e:
            yield ScenarioItem.from_parent(self, name=self.path.stem, scenario=None, seed=0, error=e)
            return
        for seed in range(start, start + seeds):
            yield ScenarioItem.from_parent(
                self, name=f"{scenario.name}[seed={seed}]", scenario=scenario, seed=seed, error=None
            )


class ScenarioItem(pytest.Item):
    """One seed of one scenario."""

    def __init__(
        self,
        *,
        scenario: Any,
        seed: int,
        error: Optional[Exception],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.seed = seed
        self.error = error

    def runtest(self) -> None:
        import lockstep

        if self.error is not None:
            raise self.error
        policy = self.config.getoption("lockstep_policy")
        report = lockstep.simulate(self.scenario, seed=self.seed, policy=policy)
        self.user_properties.append(("verdict", report.verdict))
        self.user_properties.append(("trace_hash", report.trace_hash))
        if not report.as_expected:
            replay = f"lockstep sim {self.path} --seed {self.seed}"
            if policy:
                replay += f" --policy {policy}"
            raise ScenarioFailure(report, replay)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        import lockstep

        if isinstance(excinfo.value, ScenarioFailure):
            f = excinfo.value
            return f"{f.report.explanation.rstrip()}\n  trace hash {f.report.trace_hash}\n  replay: {f.replay}"
        if isinstance(excinfo.value, lockstep.LockstepError):
            return f"{type(excinfo.value).__name__}: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> "tuple[Union[os.PathLike[str], str], Optional[int], str]":
        return self.path, None, f"scenario {self.name}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: List[pytest.Item]
) -> None:
    roots = config.getoption("lockstep_scenarios")
    if not roots:
        return
    if config.getoption("lockstep_seeds") < 1:
        raise pytest.UsageError("--lockstep-seeds must be at least 1")
    seen = set()
    for root in roots:
        for path in _scenario_files(root):
            key = path.resolve()
            if key in seen:
                continue
            seen.add(key)
            # Ids relative to the rootdir, as pytest names files it collects itself.
            try:
                nodeid = path.resolve().relative_to(config.rootpath.resolve()).as_posix()
            except ValueError:
                nodeid = path.resolve().as_posix()
            items.extend(ScenarioFile.from_parent(session, path=path, nodeid=nodeid).collect())


class ScenarioFactory:
    """What the ``lockstep_scenario`` fixture returns.

    ``factory(source, **edits)``: ``source`` is a YAML file (a path, relative
    to the requesting test's directory when not absolute), a dict of the
    scenario schema, YAML text (``yaml=...``) or a Scenario; ``edits`` are
    top-level keys merged into the scenario's dict (mappings merged key by
    key, anything else replaced), e.g. ``workload={"steps": 3}``.
    ``factory.run(scenario, seed=1, **simulate_kwargs)`` simulates it.
    """

    def __init__(self, base: Path, catalogue: Optional[str] = None) -> None:
        self.base = base
        self.catalogue = catalogue

    def __call__(
        self,
        source: Any = None,
        *,
        yaml: Optional[str] = None,
        **edits: Any,
    ) -> Any:
        import lockstep

        if (source is None) == (yaml is None):
            raise TypeError("lockstep_scenario: give a source (path, dict, Scenario) or yaml=")
        if yaml is not None:
            scenario = lockstep.Scenario.from_yaml(yaml, catalogue=self.catalogue)
        elif isinstance(source, lockstep.Scenario):
            scenario = source.copy()
        elif isinstance(source, Mapping):
            scenario = lockstep.Scenario.from_dict(dict(source), catalogue=self.catalogue)
        elif isinstance(source, (str, os.PathLike)):
            path = Path(source)
            if not path.is_absolute():
                path = self.base / path
            scenario = lockstep.Scenario.from_file(str(path), catalogue=self.catalogue)
        else:
            raise TypeError(
                f"lockstep_scenario: a path, dict, Scenario or yaml= is needed, got "
                f"{type(source).__name__}"
            )
        if edits:
            data = scenario.to_dict()
            _merge(data, edits)
            edited = lockstep.Scenario.from_dict(data, catalogue=self.catalogue)
            edited.path = scenario.path
            scenario = edited
        return scenario

    def run(self, scenario: Any, seed: int = 1, **kwargs: Any) -> Any:
        import lockstep

        if not isinstance(scenario, lockstep.Scenario):
            scenario = self(scenario)
        return lockstep.simulate(scenario, seed=seed, **kwargs)


def _merge(into: Dict[str, Any], edits: Mapping[str, Any]) -> None:
    for key, value in edits.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


@pytest.fixture
def lockstep_scenario(request: pytest.FixtureRequest) -> ScenarioFactory:
    """Loads, builds and edits scenarios, and runs them (ScenarioFactory)."""
    return ScenarioFactory(Path(request.path).parent, request.config.getoption("lockstep_catalogue"))
