"""Wiring lockstep.DecisionRecorder into an engine's all-reduce entry point.

An engine records, on every rank, each all-reduce it dispatches: the group,
its peers, the call site, the shape, and the backend and algorithm its
dispatch chose with the inputs it decided on. The per-rank logs
(``<dir>/rank-<R>.jsonl``) are then compared across ranks and against
lockstep's simulator (docs/PYTHON.md, "Decision logs").

In SGLang the entry point is ``GroupCoordinator.all_reduce``
(python/sglang/srt/distributed/parallel_state.py); a hook looks like:

    from lockstep import DecisionRecorder

    recorder = DecisionRecorder(os.environ["LOCKSTEP_DECISION_LOG"],
                                rank=torch.distributed.get_rank(),
                                world=torch.distributed.get_world_size())
    original = GroupCoordinator.all_reduce

    def all_reduce(self, input_):
        backend, algorithm, inputs = which_backend(self, input_)  # the engine's own choice
        recorder.record(group=self.unique_name.split(":")[0], peers=list(self.ranks),
                        site=current_site(), tokens=input_.shape[0], hidden=input_.shape[-1],
                        dtype={torch.bfloat16: "bf16", torch.float16: "fp16",
                               torch.float32: "fp32"}[input_.dtype],
                        backend=backend, algorithm=algorithm, inputs=inputs)
        return original(self, input_)

    GroupCoordinator.all_reduce = all_reduce

This file runs without torch or GPUs: a toy engine (``ToyEngine``) stands in
for the serving engine, with a toy dispatch rule in place of the engine's
real one, so that the wiring itself can be run and tested:

    python python/examples/engine_hook.py /tmp/decision-log
"""

from __future__ import annotations

import sys
from typing import Dict, List, Optional, Tuple

from lockstep import DecisionRecorder


class ToyGroup:
    """What an engine's process-group object knows: its name and its ranks."""

    def __init__(self, name: str, ranks: List[int]) -> None:
        self.name = name
        self.ranks = ranks


class ToyEngine:
    """One rank of a toy tensor-parallel engine: every layer all-reduces its
    attention output and its MLP output over the TP group."""

    def __init__(self, rank: int, world: int, hidden: int = 4096) -> None:
        self.rank = rank
        self.tp = ToyGroup("tp", list(range(world)))
        self.hidden = hidden
        self.site = ""
        self.workspace_max_tokens = 2048
        self.custom_max_bytes = 8 << 20

    def choose_backend(self, group: ToyGroup, tokens: int) -> Tuple[str, Optional[str], Dict]:
        # The toy dispatch rule, standing in for the engine's real one.
        nbytes = tokens * self.hidden * 2
        inputs = {"tokens": tokens, "hidden": self.hidden,
                  "workspace_max_tokens": self.workspace_max_tokens,
                  "custom_max_bytes": self.custom_max_bytes}
        if len(group.ranks) == 1:
            return "skip", None, inputs
        if tokens <= self.workspace_max_tokens:
            return "fused", "one_shot" if nbytes <= 512 * 1024 else "two_shot", inputs
        if nbytes <= self.custom_max_bytes:
            return "custom", None, inputs
        return "nccl", None, inputs

    def all_reduce(self, group: ToyGroup, tokens: int) -> None:
        """The engine's all-reduce entry point (the data movement is elided)."""
        self.choose_backend(group, tokens)

    def forward(self, step: int, tokens: int, layers: int) -> None:
        for layer in range(layers):
            for site in ("attn_out", "mlp_out"):
                self.site = f"step {step} layer {layer} {site}"
                self.all_reduce(self.tp, tokens)


def install_recorder(engine: ToyEngine, recorder: DecisionRecorder) -> None:
    """Wraps the engine's all-reduce entry point so that every call is recorded."""
    original = engine.all_reduce

    def all_reduce(group: ToyGroup, tokens: int) -> None:
        backend, algorithm, inputs = engine.choose_backend(group, tokens)
        recorder.record(group=group.name, peers=group.ranks, site=engine.site, tokens=tokens,
                        hidden=engine.hidden, dtype="bf16", backend=backend,
                        algorithm=algorithm, inputs=inputs)
        original(group, tokens)

    engine.all_reduce = all_reduce  # type: ignore[method-assign]


def main(directory: str, world: int = 4, steps: int = 2) -> None:
    tokens_per_step = [1, 16, 4096]
    for rank in range(world):  # each rank of a real run is its own process
        engine = ToyEngine(rank, world)
        with DecisionRecorder(directory, rank=rank, world=world, scenario=None) as recorder:
            install_recorder(engine, recorder)
            for step in range(steps):
                engine.forward(step, tokens_per_step[step % len(tokens_per_step)], layers=2)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: engine_hook.py LOG_DIRECTORY")
    main(sys.argv[1])
    print(f"wrote {sys.argv[1]}/rank-0.jsonl ... rank-3.jsonl")
