"""Scenarios: files, YAML text, dicts, edits, and their errors."""

from __future__ import annotations

import pytest

import lockstep

SMALL = """\
version: 1
name: py-tp2
hardware: h200x8
parallel: {tp: 2}
model: qwen3-30b-a3b
workload: {steps: 1, tokens: [4], layers: 1}
expect: clean
"""


def test_from_file_fields(main_scenario):
    s = lockstep.Scenario.from_file(str(main_scenario))
    assert s.name == "tp4-ep2-qwen3-h200"
    assert s.path == str(main_scenario)
    assert s.parallel == lockstep.ParallelConfig(tp=4, ep=2)
    assert s.world_size == 4
    assert s.expect == "clean"
    assert s.hardware == "h200x8"
    assert s.steps == 3 and s.tokens == [1, 16, 128]


def test_yaml_and_dict_round_trips(main_scenario):
    s = lockstep.Scenario.from_file(str(main_scenario))
    again = lockstep.Scenario.from_yaml(s.to_yaml())
    assert again == s
    d = s.to_dict()
    assert d["parallel"]["tp"] == 4 and d["parallel"]["ep"] == 2
    assert d["workload"]["tokens"] == [1, 16, 128]
    assert d["expect"] == "clean"
    assert isinstance(d["hardware"], dict) and d["hardware"]["name"] == "h200x8"
    assert lockstep.Scenario.from_dict(d) == s


def test_edit_through_dict_and_fields():
    s = lockstep.Scenario.from_yaml(SMALL, path="small.yaml")
    d = s.to_dict()
    d["workload"]["steps"] = 2
    d["faults"] = [{"kind": "kernel_launch_failure", "ranks": [1], "at_call": 0}]
    d["expect"] = "fail_stop"
    edited = lockstep.Scenario.from_dict(d)
    assert edited.steps == 2 and edited.expect == "fail_stop"
    assert edited.faults[0]["kind"] == "kernel_launch_failure"
    assert edited.faults[0]["ranks"] == [1]
    s.steps = 2
    s.name = "renamed"
    s.parallel.tp = 2
    s.expect = None
    assert s.to_dict()["workload"]["steps"] == 2 and s.to_dict()["name"] == "renamed"
    assert "expect" not in s.to_dict()
    copy = s.copy()
    copy.name = "other"
    assert s.name == "renamed"


def test_bad_yaml_names_file_line_and_key():
    text = SMALL.replace("steps: 1", "steps: two")
    with pytest.raises(lockstep.ScenarioError) as e:
        lockstep.Scenario.from_yaml(text, path="bad.yaml")
    err = e.value
    assert isinstance(err, ValueError)
    assert err.file == "bad.yaml"
    assert err.line == 6
    assert err.key == "workload.steps"
    assert "expected an integer" in str(err)


def test_bad_file_names_the_file(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text(SMALL.replace("parallel: {tp: 2}", "parallel: {tp: 2, tensor: 3}"))
    with pytest.raises(lockstep.ScenarioError) as e:
        lockstep.Scenario.from_file(str(bad))
    assert e.value.file == str(bad)
    assert e.value.key == "parallel.tensor"
    assert e.value.line == 4
    with pytest.raises(lockstep.ScenarioError, match="missing.yaml"):
        lockstep.Scenario.from_file(str(tmp_path / "missing.yaml"))


def test_bad_dict():
    d = lockstep.Scenario.from_yaml(SMALL).to_dict()
    d["workload"]["steps"] = "many"
    with pytest.raises(lockstep.ScenarioError) as e:
        lockstep.Scenario.from_dict(d)
    assert e.value.key == "workload.steps" and e.value.file == "<dict>"
    d = lockstep.Scenario.from_yaml(SMALL).to_dict()
    d["workload"]["tokens"] = [object()]
    with pytest.raises(lockstep.ScenarioError, match=r"workload\.tokens\[0\]"):
        lockstep.Scenario.from_dict(d)
    with pytest.raises(lockstep.ScenarioError):
        lockstep.Scenario.from_dict(["not", "a", "dict"])
    d = lockstep.Scenario.from_yaml(SMALL).to_dict()
    d["hardware"] = "no-such-gpu"
    with pytest.raises(lockstep.ScenarioError) as e:
        lockstep.Scenario.from_dict(d)
    assert e.value.key == "hardware"
    with pytest.raises(lockstep.ScenarioError, match="verdict"):
        lockstep.Scenario.from_yaml(SMALL).expect = "fine"
