"""DecisionRecorder: the decision-log format, numbering, validation."""

from __future__ import annotations

import json

import pytest

from lockstep import DecisionRecorder
from lockstep.recorder import read_log

CALL = dict(site="step 0 layer 0 attn_out", tokens=8, hidden=4096, dtype="bf16")


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_header_and_numbering(tmp_path):
    with DecisionRecorder(tmp_path / "run", rank=1, world=4, scenario="tp4") as rec:
        a = rec.record(group="tp", peers=[0, 1, 2, 3], backend="fused", algorithm="one_shot",
                       inputs={"library_available": True, "workspace_max_tokens": 2048,
                               "hint": "attn_tp"}, **CALL)
        rec.record(group="moe_ep", peers=[1, 3], backend="nccl", **CALL)
        rec.record(group="tp", peers=[0, 1, 2, 3], backend="custom", **CALL)
        assert rec.calls == 3 and rec.seq("tp") == 2 and rec.seq("moe_tp") == 0
    assert rec.closed
    written = lines(tmp_path / "run" / "rank-1.jsonl")
    assert written[0] == {"format": "lockstep-decision-log", "version": 1, "rank": 1,
                          "world": 4, "source": "python", "scenario": "tp4"}
    assert [(l["call"], l["group"], l["seq"]) for l in written[1:]] == [
        (0, "tp", 0), (1, "moe_ep", 0), (2, "tp", 1)]
    assert written[1] == a
    assert written[1]["algorithm"] == "one_shot" and written[2]["algorithm"] is None
    assert written[1]["inputs"]["workspace_max_tokens"] == 2048
    assert written[2]["inputs"] == {}
    assert set(written[1]) == {"call", "group", "peers", "seq", "site", "tokens", "hidden",
                               "dtype", "backend", "algorithm", "inputs"}
    header, calls = read_log(tmp_path / "run" / "rank-1.jsonl")
    assert header["rank"] == 1 and len(calls) == 3


def test_each_line_is_flushed(tmp_path):
    rec = DecisionRecorder(tmp_path, rank=0, world=1, source="sim")
    rec.record(group="tp", peers=[0], backend="skip", **CALL)
    # Readable before close: a run that hangs leaves its log up to the last call.
    assert len(lines(tmp_path / "rank-0.jsonl")) == 2
    rec.close()
    with pytest.raises(ValueError, match="after close"):
        rec.record(group="tp", peers=[0], backend="skip", **CALL)


def test_constructor_validation(tmp_path):
    with pytest.raises(ValueError, match="world"):
        DecisionRecorder(tmp_path, rank=0, world=0)
    with pytest.raises(ValueError, match="rank"):
        DecisionRecorder(tmp_path, rank=4, world=4)
    with pytest.raises(ValueError, match="rank"):
        DecisionRecorder(tmp_path, rank=True, world=4)
    with pytest.raises(ValueError, match="source"):
        DecisionRecorder(tmp_path, rank=0, world=2, source="gpu")
    DecisionRecorder(tmp_path, rank=0, world=2).close()
    with pytest.raises(FileExistsError):
        DecisionRecorder(tmp_path, rank=0, world=2)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"peers": [0, 5]}, "peers"),
        ({"peers": [1, 2]}, "not among the peers"),
        ({"peers": [0, 0]}, "repeated"),
        ({"peers": "01"}, "peers"),
        ({"tokens": -1}, "tokens"),
        ({"hidden": 1.5}, "hidden"),
        ({"dtype": "fp8"}, "dtype"),
        ({"group": ""}, "group"),
        ({"site": "two\nlines"}, "site"),
        ({"backend": None}, "backend"),
        ({"inputs": {"x": [1]}}, "input 'x'"),
        ({"inputs": {"x": None}}, "input 'x'"),
    ],
)
def test_record_validation(tmp_path, change, message):
    with DecisionRecorder(tmp_path, rank=0, world=4) as rec:
        args = dict(group="tp", peers=[0, 1, 2, 3], backend="nccl", **CALL)
        args.update(change)
        with pytest.raises(ValueError, match=message):
            rec.record(**args)
        assert rec.calls == 0  # nothing written, nothing numbered
    assert len(lines(tmp_path / "rank-0.jsonl")) == 1


def test_a_group_keeps_its_peers(tmp_path):
    with DecisionRecorder(tmp_path, rank=0, world=4) as rec:
        rec.record(group="moe", peers=[0, 2], backend="nccl", **CALL)
        with pytest.raises(ValueError, match="one peer set"):
            rec.record(group="moe", peers=[0, 1], backend="nccl", **CALL)


def test_recorder_needs_no_compiled_code(tmp_path):
    import subprocess
    import sys
    import textwrap

    import lockstep.recorder as recorder_module

    # Load recorder.py alone, with no lockstep package (nor extension) importable.
    code = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("recorder", {recorder_module.__file__!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        with m.DecisionRecorder({str(tmp_path)!r}, rank=0, world=2) as r:
            r.record(group="tp", peers=[0, 1], site="s", tokens=1, hidden=8, dtype="fp32",
                     backend="nccl")
        assert "torch" not in sys.modules and "lockstep" not in sys.modules
    """)
    subprocess.run([sys.executable, "-I", "-c", code], check=True)
    assert len(lines(tmp_path / "rank-0.jsonl")) == 2


def test_engine_hook_example(tmp_path):
    import importlib.util
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "engine_hook.py"
    spec = importlib.util.spec_from_file_location("engine_hook", example)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(str(tmp_path), world=2, steps=2)
    for rank in range(2):
        header, calls = read_log(tmp_path / f"rank-{rank}.jsonl")
        assert header["world"] == 2 and header["rank"] == rank
        assert calls and [c["call"] for c in calls] == list(range(len(calls)))
