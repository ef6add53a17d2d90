"""ParallelConfig, layouts and single decisions through the dispatch core."""

from __future__ import annotations

import json
import subprocess

import pytest

import lockstep


def test_parallel_config_fields_and_widths():
    c = lockstep.ParallelConfig(tp=4, ep=2)
    assert (c.tp, c.ep, c.pp, c.world_size) == (4, 2, 1, 4)
    assert c.short_name == "tp4-ep2"
    w = c.widths()
    assert (w.moe_ep, w.moe_tp, w.attn_tp) == (2, 2, 4)
    assert w.hybrid_ep_tp
    c.tp = 8
    assert c.world_size == 8
    assert c == lockstep.ParallelConfig(tp=8, ep=2)
    assert "tp=8" in repr(c)


def test_invalid_config_raises_config_error_with_sglang_rule():
    c = lockstep.ParallelConfig(tp=4, ep=3)
    with pytest.raises(lockstep.ConfigError) as e:
        c.validate()
    assert isinstance(e.value, ValueError)
    assert "ep" in str(e.value)
    with pytest.raises(lockstep.ConfigError):
        c.layout()


def test_layout_groups_tags_and_exit_plan():
    layout = lockstep.ParallelConfig(tp=4, ep=2).layout()
    assert layout.world_size == 4
    assert layout.peers("tp", 1) == [0, 1, 2, 3]
    # Hybrid EP+TP: MOE_EP and MOE_TP have the same size and other peers.
    assert layout.peers("moe_ep", 0) == [0, 2]
    assert layout.peers("moe_tp", 0) == [0, 1]
    names = [g["name"] for g in layout.groups]
    assert names[0] == "tp"
    assert set(layout.tags) == set(names)
    assert set(layout.tags.values()) <= {"none", "attn_tp", "moe"}
    assert layout.ffn_exit["hybrid_ep_tp"] is True
    assert layout.ffn_exit["moe"]["kind"]
    assert layout.object_name("attn_tp") == "tp"  # attn_tp == tp: one object


def test_layout_matches_the_cli_json(lockstep_cli):
    layout = lockstep.ParallelConfig(tp=8, ep=4, attn_dp=2).layout(policy="sglang-pr30700")
    out = subprocess.run(
        [lockstep_cli, "layout", "--tp", "8", "--ep", "4", "--attn-dp", "2", "--policy",
         "sglang-pr30700", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert layout.to_dict() == json.loads(out)
    assert json.loads(layout.to_json()) == json.loads(out)


def test_layout_unknown_policy_and_role():
    config = lockstep.ParallelConfig(tp=2)
    with pytest.raises(lockstep.PolicyError) as e:
        config.layout(policy="no-such-policy")
    assert "reference" in str(e.value)  # the known names are listed
    with pytest.raises(lockstep.ConfigError):
        config.layout().peers("tensor", 0)
    with pytest.raises(lockstep.ConfigError):
        config.layout().peers("tp", 2)


def test_decide_fitting_call_takes_the_fused_kernel():
    d = lockstep.decide(lockstep.ParallelConfig(tp=4), "tp", 0, tokens=8, hidden=4096)
    assert d.backend == "fused"
    assert d.algorithm == "one_shot"
    assert d.peers == [0, 1, 2, 3]
    assert d.group == "tp"
    held = {p["name"]: p["held"] for p in d.predicates}
    assert held["workspace_peers_match"] and held["elements_fit"]  # trtllm: tokens * hidden
    assert all(p["backend"] == "fused" for p in d.predicates)
    assert d.first_failed("fused") is None
    assert d.explanation.startswith("fused")
    as_dict = d.to_dict()
    assert as_dict["backend"] == "fused" and as_dict["inputs"] == {"tokens": 8, "hidden": 4096}
    assert json.loads(d.to_json())["fingerprint"] == d.fingerprint


def test_decide_over_capacity_falls_back_and_names_the_predicate():
    d = lockstep.decide(
        lockstep.ParallelConfig(tp=4), "tp", 0, tokens=4096, hidden=4096, workspace_max_tokens=128
    )
    assert d.backend in ("custom", "nccl")
    assert d.first_failed("fused") in ("tokens_fit", "elements_fit")
    failed = [p for p in d.predicates if not p["held"]]
    assert failed and "false" in failed[0]["text"]


def test_decide_workspace_bound_to_other_peers_is_refused():
    # tp4-ep2: a workspace bound to MOE_EP [0,2] while the call reduces over MOE_TP [0,1].
    d = lockstep.decide(
        lockstep.ParallelConfig(tp=4, ep=2), "moe_tp", 0, tokens=8, hidden=2048,
        hint="moe", workspace_peers=[0, 2],
    )
    assert d.backend != "fused"
    assert d.first_failed("fused") == "workspace_peers_match"


def test_decide_depends_on_policy_and_inputs_deterministically():
    config = lockstep.ParallelConfig(tp=8)
    a = lockstep.decide(config, "tp", 3, tokens=16, hidden=7168)
    b = lockstep.decide(config, "tp", 3, tokens=16, hidden=7168)
    assert a.fingerprint == b.fingerprint
    c = lockstep.decide(config, "tp", 3, tokens=16, hidden=7168, library_available=False)
    assert c.backend != "fused" and c.first_failed("fused") == "library_available"
    assert c.fingerprint != a.fingerprint


def test_decide_bad_inputs():
    config = lockstep.ParallelConfig(tp=2)
    with pytest.raises(lockstep.ConfigError, match="tokens"):
        lockstep.decide(config, "tp", 0, hidden=4096)
    with pytest.raises(lockstep.ConfigError, match="did you mean"):
        lockstep.decide(config, "tp", 0, tokens=1, hidden=4096, tokenz=3)
    with pytest.raises(lockstep.ConfigError, match="dtype"):
        lockstep.decide(config, "tp", 0, tokens=1, hidden=4096, dtype="fp8x")
    with pytest.raises(lockstep.ConfigError, match="true or false"):
        lockstep.decide(config, "tp", 0, tokens=1, hidden=4096, contiguous=1)
    with pytest.raises(lockstep.PolicyError):
        lockstep.decide(config, "tp", 0, policy="nope", tokens=1, hidden=4096)
    assert "workspace_peers" in lockstep.decision_inputs()


def test_fault_kinds_mutants_policies_verdicts():
    kinds = lockstep.fault_kinds()
    assert kinds and {"name", "outcome", "stage", "params", "gpu_injectable"} <= set(kinds[0])
    assert "kernel_launch_failure" in {k["name"] for k in kinds}
    mutants = lockstep.mutants()
    assert len(mutants) >= 13
    assert all(m["expected"] in lockstep.verdicts() for m in mutants)
    names = [p["name"] for p in lockstep.policies()]
    assert names[0] == "reference" and "sglang-pr30700" in names
    assert {m["name"] for m in mutants} <= set(names)
    assert lockstep.verdicts()[0] == "clean"
