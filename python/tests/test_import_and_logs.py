"""Deployment import (lockstep import) and decision-log checks (lockstep check-log) from Python."""

from __future__ import annotations

import json

import pytest

import lockstep


def write_config(directory):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "hidden_size": 7168,
                "num_hidden_layers": 61,
                "num_attention_heads": 128,
                "n_routed_experts": 256,
                "first_k_dense_replace": 3,
            }
        )
    )
    return directory


def test_from_sglang_args_gives_a_scenario_that_simulates(tmp_path):
    model = write_config(tmp_path / "DeepSeek-V3")
    result = lockstep.from_sglang_args(
        ["--model-path", str(model), "--tp", "8", "--ep", "8", "--enable-dp-attention", "--dp", "8"]
    )
    assert isinstance(result, lockstep.ImportResult)
    assert result.scenario.parallel.tp == 8
    assert result.scenario.parallel.dp_attention
    assert any("DeepSeek-V3 from" in note for note in result.notes)
    assert lockstep.simulate(result.scenario, seed=1).verdict == "clean"


def test_from_vllm_args_maps_dp_with_expert_parallelism(tmp_path):
    model = write_config(tmp_path / "DeepSeek-V3")
    result = lockstep.from_vllm_args([str(model), "-tp", "4", "-dp", "2", "--enable-expert-parallel"])
    assert result.scenario.parallel.tp == 8
    assert result.scenario.parallel.attn_dp == 2
    assert any("attention DP 2 over 8 ranks" in note for note in result.notes)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--tp", "4", "--tpx", "2"], "unknown flag --tpx"),
        (["--pp", "2"], "ambiguous option --pp"),
        (["--tp", "4", "--tp-size", "2"], "set the same option"),
        (["--tp", "4", "--enable-mscclpp"], "cannot represent --enable-mscclpp"),
    ],
)
def test_bad_sglang_flags_raise_naming_them(tmp_path, flags, message):
    model = write_config(tmp_path / "DeepSeek-V3")
    with pytest.raises(lockstep.ScenarioError, match=message):
        lockstep.from_sglang_args(["--model-path", str(model)] + flags)


def test_recorder_logs_are_checked_and_a_divergence_is_named(tmp_path):
    logs = tmp_path / "logs"
    for rank in range(2):
        with lockstep.DecisionRecorder(logs, rank=rank, world=2) as rec:
            for layer in range(3):
                initialized = not (rank == 1 and layer == 2)
                rec.record(
                    group="tp",
                    peers=[0, 1],
                    site=f"layer {layer}",
                    tokens=4,
                    hidden=4096,
                    dtype="bf16",
                    backend="fused" if initialized else "nccl",
                    inputs={"workspace_initialized": initialized},
                )
    result = lockstep.check_logs(str(logs))
    assert result["diverged"]
    assert result["summary"].startswith("first divergent decision: tp [0,1] call 2 at layer 2")
    assert "rank 1 chose nccl" in result["summary"]
    assert "workspace_initialized=false" in result["summary"]


def test_check_logs_raises_on_a_missing_directory(tmp_path):
    with pytest.raises(lockstep.ScenarioError, match="not a directory of decision logs"):
        lockstep.check_logs(str(tmp_path / "nowhere"))
