"""simulate() and explore(): reports, determinism, agreement with the CLI."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

import lockstep

from test_scenario import SMALL


def test_simulate_small_scenario_report():
    s = lockstep.Scenario.from_yaml(SMALL)
    r = lockstep.simulate(s, seed=3)
    assert r.verdict == "clean" and r.as_expected and r.expected == "clean"
    assert not r.silent_failure
    assert r.seed == 3 and r.policy == "reference" and r.schedule == "random"
    assert r.trace_hash.startswith("0x") and len(r.trace_hash) == 18
    assert r.rank_calls > 0
    assert "verdict: clean" in r.explanation
    d = r.to_dict()
    assert d["verdict"] == "clean" and d["trace_hash"] == r.trace_hash and d["seed"] == 3
    assert json.loads(r.to_json()) == d
    assert r.first_divergent_decision is None and r.wait_for_dot == ""
    # The report names the build, as lockstep --version does.
    assert d["lockstep"]["build"] == lockstep.BUILD
    build = r"\d+\.\d+\.\d+ \((git [0-9a-f]+(, modified( [0-9a-f]+)?)?|no git revision)\)"
    assert re.fullmatch(build, lockstep.BUILD), lockstep.BUILD


def test_simulate_is_deterministic_and_seed_dependent():
    s = lockstep.Scenario.from_yaml(SMALL)
    a = lockstep.simulate(s, seed=5)
    b = lockstep.simulate(s, seed=5)
    assert a.trace_hash == b.trace_hash and a.to_dict() == b.to_dict()
    hashes = {lockstep.simulate(s, seed=seed).trace_hash for seed in range(1, 5)}
    assert len(hashes) > 1


def test_simulate_matches_the_cli(main_scenario, lockstep_cli):
    r = lockstep.simulate(lockstep.Scenario.from_file(str(main_scenario)), seed=2)
    cli = subprocess.run(
        [lockstep_cli, "sim", str(main_scenario), "--seed", "2", "--json"],
        capture_output=True, text=True,
    )
    assert cli.returncode == 0, cli.stderr
    assert r.to_dict() == json.loads(cli.stdout)


def test_mutant_hang_reports_the_first_divergent_decision(scenarios_dir, lockstep_cli):
    path = scenarios_dir / "faults" / "tp8-capacity-view.yaml"
    r = lockstep.simulate(lockstep.Scenario.from_file(str(path)), seed=1,
                          policy="capacity-from-local-view")
    assert r.verdict == "hang" and not r.as_expected and r.silent_failure
    assert r.first_divergent_decision
    assert r.blocked
    assert r.wait_for_dot.startswith("digraph wait_for")
    assert "wait" in r.explanation
    cli = subprocess.run(
        [lockstep_cli, "sim", str(path), "--seed", "1", "--policy", "capacity-from-local-view",
         "--json"],
        capture_output=True, text=True,
    )
    assert cli.returncode == 1
    assert json.loads(cli.stdout)["trace_hash"] == r.trace_hash


def test_simulate_errors():
    s = lockstep.Scenario.from_yaml(SMALL)
    with pytest.raises(lockstep.PolicyError) as e:
        lockstep.simulate(s, policy="no-such-policy")
    assert isinstance(e.value, ValueError) and "reference" in str(e.value)
    with pytest.raises(lockstep.BudgetError):
        lockstep.simulate(s, max_memory="1K")
    with pytest.raises(lockstep.LockstepError):
        lockstep.simulate(s, max_memory="lots")
    # A fault past the end of the run never fires: refused, naming the key.
    d = s.to_dict()
    d["faults"] = [{"kind": "kernel_launch_failure", "ranks": [1], "at_step": 7}]
    with pytest.raises(lockstep.ScenarioError, match="at_step"):
        lockstep.simulate(lockstep.Scenario.from_dict(d))


def test_edited_scenario_is_revalidated():
    s = lockstep.Scenario.from_yaml(SMALL)
    s.steps = 0
    with pytest.raises(lockstep.ScenarioError, match="workload.steps"):
        lockstep.simulate(s)


def test_explore_report():
    s = lockstep.Scenario.from_yaml(SMALL)
    r = lockstep.explore([s], seeds=4, start=2, jobs=2)
    assert r.all_acceptable
    assert [o["seed"] for o in r.outcomes] == [2, 3, 4, 5]
    assert r.scenarios[0]["counts"]["clean"] == 4
    assert r.scenarios[0]["first_failure"] is None
    one = lockstep.simulate(s, seed=3)
    assert r.outcomes[1]["trace_hash"] == one.trace_hash
    assert "py-tp2" in r.summary
    assert r.to_dict()["outcomes"] == r.outcomes
    # jobs does not change results.
    assert lockstep.explore(s, seeds=4, start=2, jobs=1).to_dict() == r.to_dict()


def test_explore_a_directory_with_a_mutant(scenarios_dir):
    r = lockstep.explore(scenarios_dir / "faults" / "tp8-capacity-view.yaml", seeds=1,
                         policy="capacity-from-local-view")
    assert not r.all_acceptable
    assert r.scenarios[0]["first_failure"]["verdict"] == "hang"
    assert "--policy capacity-from-local-view" in r.outcomes[0]["replay"]


def test_explore_errors():
    s = lockstep.Scenario.from_yaml(SMALL)
    with pytest.raises(lockstep.ConfigError):
        lockstep.explore(s, seeds=0)
    with pytest.raises(lockstep.PolicyError):
        lockstep.explore(s, seeds=1, policy="nope")
    with pytest.raises(TypeError):
        lockstep.explore([s, 3], seeds=1)
