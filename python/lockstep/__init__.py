"""lockstep from Python: layouts, dispatch decisions, scenarios, simulation,
exploration, fault kinds and mutants — the C++ types of lockstep through a thin
nanobind layer — plus a pytest plugin and ``DecisionRecorder`` (pure Python).

    import lockstep
    s = lockstep.Scenario.from_file("topologies/scenarios/tp4-ep2-qwen3-h200.yaml")
    r = lockstep.simulate(s, seed=1)
    print(r.verdict, r.trace_hash)

API: docs/PYTHON.md.
"""

from __future__ import annotations

from lockstep.errors import (
    BudgetError,
    ConfigError,
    LockstepError,
    PolicyError,
    ScenarioError,
)
from lockstep.recorder import DecisionRecorder

__all__ = [
    "BUILD",
    "BudgetError",
    "ConfigError",
    "Decision",
    "DecisionRecorder",
    "ExploreReport",
    "Layout",
    "LockstepError",
    "ParallelConfig",
    "ParallelWidths",
    "PolicyError",
    "Scenario",
    "ScenarioError",
    "SimReport",
    "decide",
    "decision_inputs",
    "default_catalogue",
    "explore",
    "fault_kinds",
    "mutants",
    "policies",
    "simulate",
    "verdicts",
]

try:
    from lockstep import _lockstep_ext as _ext
except ImportError as e:  # pragma: no cover - only without the compiled extension
    _ext = None
    _import_error = e
else:
    _import_error = None

if _ext is not None:
    import os as _os
    from typing import Iterable, List, NamedTuple, Optional, Union

    from lockstep._lockstep_ext import (
        BUILD,
        Decision,
        ExploreReport,
        Layout,
        ParallelConfig,
        ParallelWidths,
        Scenario,
        SimReport,
        decision_inputs,
        default_catalogue,
        fault_kinds,
        mutants,
        policies,
        verdicts,
    )

    # The hardware and models installed with the wheel (lockstep/catalogue).
    _ext._set_packaged_catalogue(_os.path.join(_os.path.dirname(__file__), "catalogue"))

    def simulate(
        scenario: Scenario,
        seed: int = 1,
        policy: Optional[str] = None,
        schedule: str = "random",
        *,
        swarm: bool = False,
        exact: bool = False,
        keep_trace: bool = False,
        max_memory: Optional[str] = None,
    ) -> SimReport:
        """One deterministic simulated run, as ``lockstep sim`` makes it.

        ``policy``: a policy or mutant name (None: the scenario's own);
        ``schedule``: ``random``, ``pct`` or ``pct:D``; ``swarm``: replace the
        scenario's faults by the seed's swarm draw; ``max_memory``: ``512M``,
        ``8G``, ``unlimited`` (default: half of physical memory). The GIL is
        released while it runs. Raises ScenarioError, PolicyError, BudgetError.
        """
        return _ext._simulate(
            scenario, seed, policy, schedule, swarm, exact, keep_trace, max_memory
        )

    def explore(
        scenarios: Union[Scenario, Iterable[Scenario], str, "_os.PathLike[str]"],
        seeds: int = 100,
        start: int = 1,
        *,
        swarm: bool = False,
        policy: Optional[str] = None,
        schedule: str = "random",
        jobs: int = 1,
        catalogue: Optional[str] = None,
    ) -> ExploreReport:
        """Seeds ``[start, start + seeds)`` of every scenario, as ``lockstep explore``.

        ``scenarios``: a Scenario, a list of them, or a path (a YAML file or a
        directory of them). Results do not depend on ``jobs``. The GIL is
        released while it runs.
        """
        if not isinstance(scenarios, (Scenario, str)) and isinstance(scenarios, _os.PathLike):
            scenarios = _os.fspath(scenarios)
        if not isinstance(scenarios, (Scenario, str)):
            scenarios = list(scenarios)
        return _ext._explore(scenarios, seeds, start, swarm, policy, schedule, jobs, catalogue)

    def decide(
        config: ParallelConfig,
        role: str = "tp",
        rank: int = 0,
        *,
        policy: str = "reference",
        **inputs: Union[bool, int, str, list, None],
    ) -> Decision:
        """Asks the dispatch core which backend one all-reduce takes.

        ``role``: the group the call reduces over (tp, attn_tp, attn_cp, moe_ep,
        moe_tp, moe_dp, pp) and ``rank`` the calling rank; ``inputs``: the call
        and the agreed state its predicates read — ``tokens`` and ``hidden``
        are required, the rest default to a healthy group (``decision_inputs()``
        lists them; docs/PYTHON.md gives defaults). The result holds the
        backend, algorithm and every predicate evaluated, with its inputs.
        """
        return _ext._decide(config, role, rank, policy, dict(inputs))

    class ImportResult(NamedTuple):
        """A deployment's scenario and what the import assumed or left out."""

        scenario: Scenario
        notes: List[str]

    def from_sglang_args(
        args: Iterable[str],
        *,
        hardware: Optional[str] = None,
        model_config: Optional[str] = None,
        name: Optional[str] = None,
        catalogue: Optional[str] = None,
    ) -> ImportResult:
        """The scenario of a ``python -m sglang.launch_server`` deployment (``lockstep import``).

        ``args``: its flags, read as SGLang 0.5.23's parser reads them;
        ``hardware``: a catalogue name (default h200x8 up to 8 ranks);
        ``model_config``: a Hugging Face config.json (default: next to
        ``--model-path``, else the catalogue model of that name). ``notes``
        lists what was assumed or not modelled. Raises ScenarioError naming a
        flag SGLang does not have, one given twice, an ambiguous abbreviation,
        or what lockstep cannot represent.
        """
        scenario, notes = _ext._from_sglang_args(list(args), hardware, model_config, name, catalogue)
        return ImportResult(scenario, list(notes))

    def from_vllm_args(
        args: Iterable[str],
        *,
        hardware: Optional[str] = None,
        model_config: Optional[str] = None,
        name: Optional[str] = None,
        catalogue: Optional[str] = None,
    ) -> ImportResult:
        """The scenario of a ``vllm serve`` deployment, as far as its flags map onto lockstep."""
        scenario, notes = _ext._from_vllm_args(list(args), hardware, model_config, name, catalogue)
        return ImportResult(scenario, list(notes))

    from lockstep._lockstep_ext import check_logs

    __all__ += ["ImportResult", "from_sglang_args", "from_vllm_args", "check_logs"]

    def layout(config: ParallelConfig, policy: str = "reference", fused: bool = True) -> Layout:
        """The groups of ``config`` under ``policy`` (``lockstep layout``)."""
        return config.layout(policy=policy, fused=fused)

    __all__.append("layout")
else:  # pragma: no cover

    def __getattr__(name: str):  # noqa: D401 - module attribute hook
        raise ImportError(
            f"lockstep.{name} needs the compiled extension lockstep._lockstep_ext, which did not "
            f"import ({_import_error}); DecisionRecorder and the errors work without it"
        )
