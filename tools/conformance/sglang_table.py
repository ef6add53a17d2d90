#!/usr/bin/env python3
"""Expected-conformance table computed from SGLang's own functions, on a CPU.

For every layout in the grid (see ``grid()``) this imports SGLang (with the
``torchstub`` stand-in for PyTorch) and asks SGLang itself:

* whether its server-argument resolution accepts the layout (the parallel
  hooks of ``run_resolution_pipeline``, run in pipeline order);
* which process groups ``initialize_model_parallel`` builds and which group
  objects it reuses, and which workspace tag
  ``_tag_groups_for_flashinfer_allreduce_only`` stamps on them;
* which group the MoE output reduces over (``post_experts_reduction_group``);
* what the layer-boundary exit decides for a MoE FFN in a decode step
  (``exit_facts`` / ``ExitPolicy._decide``);
* the DP padding mode and whether the FlashInfer fused all-reduce is turned on
  automatically.

Where a function cannot run on a CPU its logic is reproduced here, with a
comment citing ``sglang/srt/...py:LINE @ 0.5.23``.

Usage:
    python3 tools/conformance/sglang_table.py --sglang /work/research/sglang \
        > tests/conformance/sglang-0.5.23.tsv

Exits 0 with "sglang not importable: ..." on stderr when SGLang cannot be
imported, so the table is optional in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import tempfile
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROLES = ("tp", "attn_tp", "attn_cp", "moe_ep", "moe_tp", "moe_dp", "pp")
PINNED_VERSION = "0.5.23"

# DeepSeek-V3 facts the table fixes (HF config.json of deepseek-ai/DeepSeek-V3).
DSV3_CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "moe_intermediate_size": 2048,
    "intermediate_size": 18432,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "torch_dtype": "bfloat16",
    "vocab_size": 129280,
}
DECODE_TOKENS_PER_DP_GROUP = 8


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def grid(restrict):
    """tp 1..32, pp {1,2,4}, ep/moe_dp/attn_dp divisors of tp, attn_cp {1,2},
    world = tp*pp <= 64.  With ``restrict`` the three divisor axes keep only
    powers of two and tp itself."""
    for tp in range(1, 33):
        ds = divisors(tp)
        if restrict:
            ds = [d for d in ds if d & (d - 1) == 0 or d == tp]
        for pp in (1, 2, 4):
            if tp * pp > 64:
                continue
            for ep in ds:
                for moe_dp in ds:
                    for attn_dp in ds:
                        for attn_cp in (1, 2):
                            yield tp, pp, ep, moe_dp, attn_dp, attn_cp


# --------------------------------------------------------------------------
# Import SGLang
# --------------------------------------------------------------------------


def import_sglang(path):
    sys.path.insert(0, HERE)
    import torchstub

    torchstub.install()
    sys.path.insert(0, os.path.abspath(path))
    logging.disable(logging.CRITICAL)
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        import importlib.metadata

        import sglang.srt.distributed.parallel_state as ps
        import sglang.srt.server_args as server_args_mod
        import sglang.srt.arg_groups.pipeline  # noqa: F401 (registers hooks)
        import sglang.srt.layers.layer_boundary.exit as exit_mod
        import sglang.srt.layers.sampler  # noqa: F401 (initialize_model_parallel imports it)
    version = None
    for dist_info in os.listdir(path):
        if dist_info.startswith("sglang-") and dist_info.endswith(".dist-info"):
            version = dist_info[len("sglang-") : -len(".dist-info")]
    if version is None:
        try:
            version = importlib.metadata.version("sglang")
        except Exception:
            version = "unknown"
    return version, torchstub, ps, server_args_mod, exit_mod


# --------------------------------------------------------------------------
# Error reporting
# --------------------------------------------------------------------------


def where(exc):
    """``file.py:LINE`` of the innermost frame inside the sglang package."""
    frames = traceback.extract_tb(exc.__traceback__)
    best = None
    for fr in frames:
        if f"{os.sep}sglang{os.sep}" in fr.filename and HERE not in fr.filename:
            best = fr
    if best is None:
        return "?"
    fn = best.filename
    idx = fn.rfind(f"{os.sep}sglang{os.sep}srt{os.sep}")
    rel = fn[idx + 1 :] if idx >= 0 else os.path.basename(fn)
    return f"{rel}:{best.lineno}"


def reason_of(exc, loc=None):
    msg = str(exc) or type(exc).__name__
    msg = " ".join(msg.replace("\t", " ").split())
    return f"{msg[:160]} @ {loc or where(exc)}"


# --------------------------------------------------------------------------
# Stage 1: server arguments
# --------------------------------------------------------------------------


class Sglang:
    def __init__(self, path):
        (self.version, self.torchstub, self.ps, self.sa_mod, self.exit_mod) = import_sglang(path)
        self.model_dir = tempfile.mkdtemp(prefix="dsv3cfg-")
        with open(os.path.join(self.model_dir, "config.json"), "w") as f:
            json.dump(DSV3_CONFIG, f)
        from sglang.srt.runtime_context import override_platform

        self.override_platform = override_platform

    # The server-argument hooks that read the parallel layout, in the order
    # run_resolution_pipeline calls them (sglang/srt/arg_groups/pipeline.py
    # :46 handle_deprecated_dp_attention, :283 handle_data_parallelism,
    # :287 handle_context_parallelism, :302-304 MoE hooks), plus the two
    # post-process passes the table reports (model_hook.py:747 fusion
    # auto-enable, pipeline.py:319 boundary reduction).  Hooks that size
    # memory, CUDA graphs or attention backends need a GPU and are not run.
    def server_args(self, tp, pp, ep, moe_dp, attn_dp, attn_cp):
        from sglang.srt.arg_groups import cuda_graph_hook, moe_hook, parallel_hook
        from sglang.srt.arg_groups.arg_utils import record_fields
        from sglang.srt.arg_groups.boundary_reduction import resolve_boundary_reduction
        from sglang.srt.arg_groups.overrides import (
            _enforce_disable_allreduce_fusion,
            _flashinfer_allreduce_fusion_auto_enable,
            resolving_view,
            run_post_process_pass,
        )
        from sglang.srt.arg_groups.resolution_hooks import run_hook

        sa = self.sa_mod.ServerArgs(
            model_path=self.model_dir,
            tp_size=tp,
            pp_size=pp,
            ep_size=ep,
            moe_dp_size=moe_dp,
            attn_cp_size=attn_cp,
            # The deprecated spelling the brief names; resolution turns it
            # into --attn-dp-size (parallel_hook.py:39).
            dp_size=attn_dp,
            enable_dp_attention=attn_dp > 1,
            load_format="dummy",
            # Normally sized by handle_gpu_memory_settings (GPU-only); the
            # DP hook divides it (parallel_hook.py:331).
            chunked_prefill_size=8192,
        )
        # What run_resolution_pipeline sets up first (pipeline.py:28-38) and
        # ServerArgs.resolve_once around it (server_args.py:262).
        sa._raw_input = {f.name: getattr(sa, f.name) for f in record_fields(type(sa))}
        sa._resolved_overrides = list(getattr(sa, "_resolved_overrides", ()))
        sa._input_frozen = True
        steps = [
            lambda: run_hook(parallel_hook.handle_deprecated_dp_attention, sa),
            # pipeline.py:180: resolves cuda_graph_config, which
            # handle_data_parallelism reads (parallel_hook.py:344).
            lambda: run_hook(cuda_graph_hook.handle_cuda_graph_config, sa),
            lambda: run_hook(parallel_hook.handle_data_parallelism, sa),
            lambda: run_hook(parallel_hook.handle_context_parallelism, sa),
            lambda: run_hook(moe_hook.handle_a2a_moe, sa),
        ]
        for step in steps:
            step()
        # Fusion auto-enable as on one SM90 node (overrides.py:955-1003).
        with self.override_platform(
            is_cuda=True, is_sm90=True, is_sm100=False, is_blackwell=False, is_hip=False
        ):
            run_post_process_pass(sa, _flashinfer_allreduce_fusion_auto_enable)
            run_post_process_pass(sa, _enforce_disable_allreduce_fusion)
        run_post_process_pass(sa, resolve_boundary_reduction)
        view = resolving_view(sa)
        return {
            "fusion_backend": view.flashinfer_allreduce_fusion_backend,
            "boundary_reduction": view.boundary_reduction,
            "attn_dp_size": view.attn_dp_size,
            "attn_cp_size": view.attn_cp_size,
            "ep_size": view.ep_size,
            "moe_dp_size": view.moe_dp_size,
            "moe_a2a_backend": view.moe_a2a_backend,
            "enable_lora": bool(view.enable_lora),
        }

    # ----------------------------------------------------------------------
    # Stage 2: process groups
    # ----------------------------------------------------------------------

    def build_groups(self, tp, pp, r):
        """Run the real initialize_model_parallel with a recording
        GroupCoordinator (the real one opens NCCL/custom all-reduce
        communicators, parallel_state.py:295)."""
        ps = self.ps
        from sglang.srt.runtime_context import get_parallel

        created = []

        class RecordingCoordinator:
            def __init__(self, group_ranks, local_rank, torch_distributed_backend, **kw):
                self.group_ranks = [list(g) for g in group_ranks]
                self.group_name = kw.get("group_name")
                # parallel_state.py:295 GroupCoordinator.__init__ calls
                # torch.distributed.new_group once per rank list.
                for ranks in self.group_ranks:
                    self.torchstub_pg = self._new_group(ranks)
                mine = [g for g in self.group_ranks if 0 in g] or self.group_ranks
                self.ranks = mine[0]
                self.world_size = len(mine[0])
                self.rank_in_group = 0
                self.local_rank = local_rank
                self.pynccl_comm = None
                self.ca_comm = None
                created.append(self)

            _new_group = staticmethod(lambda ranks: __import__("torch").distributed.new_group(ranks))

        world = tp * pp
        self.torchstub.set_world(0, world)
        saved = ps.GroupCoordinator
        ps.GroupCoordinator = RecordingCoordinator
        for name in ("_TP", "_ATTN_TP", "_SHARED_EXPERTS_TP", "_ATTN_CP", "_DCP", "_MOE_DP",
                     "_MOE_EP", "_MOE_TP", "_PP", "_SELF_PP", "_PDMUX_PREFILL_TP_GROUP"):
            setattr(ps, name, None)
        ctx = get_parallel()
        ctx.clear_stamp()
        widths = dict(
            tp_size=tp,
            pp_size=pp,
            moe_ep_size=r["ep_size"],
            attn_dp_size=r["attn_dp_size"],
            attn_cp_size=r["attn_cp_size"],
            moe_dp_size=r["moe_dp_size"],
            attn_dcp_size=1,
            shared_experts_tp_size=None,
        )
        try:
            world_group = RecordingCoordinator([list(range(world))], 0, "nccl", group_name="world")
            with ctx.override(world_group=world_group, **widths):
                ps.initialize_model_parallel(backend="nccl")
        finally:
            ps.GroupCoordinator = saved
        return {
            "tp": ps._TP,
            "attn_tp": ps._ATTN_TP,
            "attn_cp": ps._ATTN_CP,
            "moe_ep": ps._MOE_EP,
            "moe_tp": ps._MOE_TP,
            "moe_dp": ps._MOE_DP,
            "pp": ps._PP,
        }

    # ----------------------------------------------------------------------
    # Stage 3: everything that reads the built groups
    # ----------------------------------------------------------------------

    @contextlib.contextmanager
    def runtime(self, tp, pp, r, groups):
        """Publish the widths and groups for rank 0 and patch the few runtime
        accessors that need a published ServerArgs (flags/config bags)."""
        import types

        from sglang.srt.layers import dp_attention
        from sglang.srt.layers.layer_boundary import exit as exit_mod
        from sglang.srt.layers.layer_boundary import layout as layout_mod
        from sglang.srt.layers.moe import utils as moe_utils
        from sglang.srt.layers.moe.utils import MoeA2ABackend
        from sglang.srt.runtime_context import get_parallel

        attn_dp = r["attn_dp_size"]
        attn_cp = r["attn_cp_size"]
        attn_tp = tp // attn_dp // attn_cp
        moe_tp = tp // r["ep_size"] // r["moe_dp_size"]
        dp_enabled = attn_dp > 1
        fields = dict(
            tp_size=tp, pp_size=pp, moe_ep_size=r["ep_size"], attn_dp_size=attn_dp,
            attn_cp_size=attn_cp, moe_dp_size=r["moe_dp_size"], attn_dcp_size=1,
            attn_tp_size=attn_tp, moe_tp_size=moe_tp, attn_dp_enabled=dp_enabled,
            num_dp_ranks=attn_dp, tp_rank=0, pp_rank=0, attn_tp_rank=0, attn_dp_rank=0,
            attn_cp_rank=0, moe_ep_rank=0, moe_tp_rank=0, moe_dp_rank=0, dwdp_size=1,
            tp_group=groups["tp"], attn_tp_group=groups["attn_tp"],
            attn_cp_group=groups["attn_cp"], moe_ep_group=groups["moe_ep"],
            moe_tp_group=groups["moe_tp"], moe_dp_group=groups["moe_dp"],
            pp_group=groups["pp"],
        )
        backend = MoeA2ABackend(r["moe_a2a_backend"]) if r["moe_a2a_backend"] else MoeA2ABackend.NONE
        fake_flags_dp = types.SimpleNamespace(
            enabled=dp_enabled, use_world_group_for_gather=False, joiner_skip_all_gather=False,
            scoped_gather_slot=None, max_len_with_idle=False,
            # dp_attention.py:238 sizes the SUM_LEN buffer from these.
            buffer_hidden_size=DSV3_CONFIG["hidden_size"],
            buffer_dtype=types.SimpleNamespace(itemsize=2),  # bf16
        )
        fake_flags = types.SimpleNamespace(dp=fake_flags_dp)
        fake_exec = types.SimpleNamespace(
            comm=types.SimpleNamespace(enable_quant_communications=False,
                                       boundary_reduction=r["boundary_reduction"]),
            moe=types.SimpleNamespace(moe_a2a_backend=r["moe_a2a_backend"]),
        )
        fake_lora = types.SimpleNamespace(enable_lora=r["enable_lora"])
        fake_spec = types.SimpleNamespace(speculative_algorithm=None)
        patches = [
            (dp_attention, "get_flags", lambda: fake_flags),
            (dp_attention, "get_spec", lambda: fake_spec),
            (moe_utils, "get_moe_a2a_backend", lambda: backend),
            (moe_utils, "get_exec", lambda: fake_exec),
            (moe_utils, "get_lora", lambda: fake_lora),
            # No flashinfer-cutlass FP4 MoE all-gather (moe/utils.py:744):
            # the table's model is FP8 DeepSeek-V3 with the default runner.
            (moe_utils, "should_use_flashinfer_cutlass_moe_fp4_allgather", lambda: False),
            # post_experts_output_is_complete: no combine that sums in place
            # without an all-to-all backend (moe/utils.py).
            (moe_utils, "post_experts_output_is_complete", lambda is_tp_path: False),
            (exit_mod, "get_moe_a2a_backend", lambda: backend),
            (exit_mod, "get_exec", lambda: fake_exec),
            (exit_mod, "get_lora", lambda: fake_lora),
            (layout_mod, "is_dp_attention_enabled", lambda: dp_enabled),
        ]
        saved = [(m, n, getattr(m, n)) for m, n, _ in patches]
        for m, n, v in patches:
            setattr(m, n, v)
        try:
            with get_parallel().override(**fields):
                yield
        finally:
            for m, n, v in saved:
                setattr(m, n, v)

    def tags(self, groups, names):
        ps = self.ps
        for g in groups.values():
            if hasattr(g, "_fi_workspace_hint"):
                del g._fi_workspace_hint
        ps._ENABLE_FLASHINFER_ALLREDUCE_ONLY = True
        try:
            ps._tag_groups_for_flashinfer_allreduce_only()
        finally:
            ps._ENABLE_FLASHINFER_ALLREDUCE_ONLY = False
        out, seen = [], set()
        for role in ROLES:
            g = groups[role]
            if id(g) in seen:
                continue
            seen.add(id(g))
            hint = getattr(g, "_fi_workspace_hint", None)
            if hint is not None:
                out.append(f"{names[id(g)]}:{hint}")
        return ";".join(out) or "-"

    def moe_workspace(self, groups, names):
        from sglang.srt.layers.moe import utils as moe_utils
        from sglang.srt.runtime_context import get_parallel

        g = moe_utils.post_experts_reduction_group()  # moe/utils.py:900
        p = get_parallel()
        # Which branch of moe/utils.py:905-910 returned it.
        if moe_utils.can_merge_post_experts_all_reduce():
            role = "tp"
        elif p.moe_ep_size > 1:
            role = "moe_ep"
        else:
            role = "moe_tp"
        assert g is groups[role]
        return f"{role}:{names[id(g)]}", g

    def exit_case(self, tp, r, groups, names, moe_ws_group):
        """exit_facts and ExitPolicy._decide for a MoE FFN at a non-terminal
        layer in a decode step."""
        import types

        from sglang.srt.layers import dp_attention
        from sglang.srt.layers.layer_boundary import exit as ex
        from sglang.srt.layers.layer_boundary import ops
        from sglang.srt.layers.layer_boundary.contracts import BatchVariant, StageKind
        from sglang.srt.layers.layer_boundary.layout import SumGroup
        from sglang.srt.layers.layer_boundary.output import UnreducedOutput
        from sglang.srt.runtime_context import get_parallel

        p = get_parallel()
        attn_dp, attn_cp = r["attn_dp_size"], r["attn_cp_size"]
        strategy = r["boundary_reduction"]
        # --- The FFN's OutputContract, reproduced from _resolve_ffn
        # (layers/layer_boundary/factories.py:146-258 @ 0.5.23) for a sparse
        # (MoE) FFN, BatchVariant.ORDINARY, non-terminal, PLAIN_ADD update, no
        # output transform, no prefill CP (decode), no all-to-all backend:
        use_rs = strategy in ("rs", "rs+rsv")  # factories.py:158
        use_rsv = strategy in ("rsv", "rs+rsv")  # factories.py:159
        on_rank_rows = False  # factories.py:127-128, no a2a => not scattered over DP
        # factories.py:175-180
        on_cp_shards = attn_cp > 1 and p.moe_dp_size == attn_cp and not False
        if attn_dp > 1:  # factories.py:230-231 (cp_shards is False in decode)
            may_leave = may_scatter = attn_cp == 1 or on_cp_shards
        else:  # factories.py:232-233
            may_leave = may_scatter = True
        output = types.SimpleNamespace(
            group=SumGroup.MOE_OUTPUT,  # factories.py:186
            may_defer_to_next=may_leave,  # factories.py:251-255 (non-terminal, plain add)
            may_reduce_scatter=use_rs and may_scatter,  # factories.py:256
            may_reduce_scatterv=use_rsv and may_leave,  # factories.py:257
            update=types.SimpleNamespace(applied_at_exit=False, quantized_sum=False),
            sum_impl=None,
            transform=None,
        )
        # --- The bound path: boundary.py:785 returns over DP when the output
        # is on the DP-gathered rows and the residual on this rank's rows.
        path = types.SimpleNamespace(
            output=output,
            returns_over_dp=attn_dp > 1,
            output_move_completes_sum=False,
            writes_at_handoff=False,
            output_move=None,
        )
        plan = types.SimpleNamespace(
            finishes_directly=False, terminal=False, _speculative_algo=None, fusions=None,
        )
        facts = ex.exit_facts(StageKind.FFN, plan, BatchVariant.ORDINARY, path)  # exit.py:82
        sda = ex._sum_deferral_allowed(plan, output, scattered=False)  # exit.py:137
        path.exit = facts
        plan.path_for = lambda fb: path

        # --- The decode batch.
        global_num_tokens = [DECODE_TOKENS_PER_DP_GROUP] * attn_dp
        padding = None
        if attn_dp > 1:
            padding = dp_attention.DpPaddingMode.get_dp_padding_mode(False, global_num_tokens)
        fb = types.SimpleNamespace(
            dp_padding_mode=padding or dp_attention.DpPaddingMode.MAX_LEN,
            global_dp_buffer_len=sum(global_num_tokens),
            batch_size=DECODE_TOKENS_PER_DP_GROUP,
            input_ids=types.SimpleNamespace(shape=(DECODE_TOKENS_PER_DP_GROUP,)),
        )
        policy = ex.ExitPolicy(plan)
        with _patch(ex, "_ffn_has_tokens", lambda f: True):
            decision = policy._decide(fb, path)  # exit.py:239
        plan_str = self.classify(decision, path, groups, names, moe_ws_group, ops, ex, UnreducedOutput)
        flags = f"{int(sda)},{int(facts.may_defer_sum)},{int(facts.single_sum)},{int(facts.reduce_scatterv)}"
        pad = "-" if padding is None else ("max_len" if padding.is_max_len() else "sum_len")
        return flags, plan_str, pad

    def sum_roles(self, names, moe_ws_group):
        """The roles a MoE output's sum runs over when the exit completes it:
        sum_output -> sum_post_experts_output (moe/utils.py:875-883, 886-897):
        one merged TP all-reduce, or EP then MoE-TP."""
        from sglang.srt.layers.moe import utils as moe_utils
        from sglang.srt.runtime_context import get_parallel

        p = get_parallel()
        reduce_ep = p.moe_ep_size > 1
        reduce_tp = p.moe_tp_size > 1
        if reduce_ep and reduce_tp and moe_utils.can_merge_post_experts_all_reduce():
            return ["tp"]
        roles = []
        if reduce_ep:
            roles.append("moe_ep")
        if reduce_tp:
            roles.append("moe_tp")
        return roles

    def classify(self, decision, path, groups, names, moe_ws_group, ops, ex, UnreducedOutput):
        """Map ExitDecision.complete (a functools.partial) to the table's names."""
        c = decision.complete
        f = c.func
        if getattr(f, "__func__", None) is ex.ExitPolicy._complete_now:
            dp_step = c.keywords["dp_step"]
            owes_sum = c.keywords["owes_sum"]
            roles = self.sum_roles(names, moe_ws_group)
            if dp_step is ops.dp_reduce_scatterv:
                return "reduce_scatterv:tp"
            if dp_step is ops.dp_reduce_scatter:
                return "reduce_scatter:tp"
            if owes_sum and roles:
                if path.returns_over_dp:
                    return "all_reduce_then_scatter:" + "+".join(roles)
                return "complete_now:" + "+".join(roles)
            return "nothing"
        if f is ex._defer:
            wrap = c.args[0]
            kw = wrap.keywords
            if "reduce_to_dp_local" in kw:
                inner = kw["reduce_to_dp_local"]
                if inner.func is ops.all_reduce_to_dp_local:
                    g = inner.args[0]
                    return f"defer_all_reduce_scatter:{names[id(g)]}"
                if inner.func is ops.to_dp_local:
                    step = inner.args[0]
                    kind = "reduce_scatterv" if step is ops.dp_reduce_scatterv else "reduce_scatter"
                    return f"{kind}:tp"
            g = kw.get("group")
            return f"defer:{names[id(g)]}"
        return f"unknown:{getattr(f, '__name__', f)}"


@contextlib.contextmanager
def _patch(mod, name, value):
    old = getattr(mod, name)
    setattr(mod, name, value)
    try:
        yield
    finally:
        setattr(mod, name, old)


def fmt_groups(groups):
    parts = []
    for role in ROLES:
        subs = sorted(groups[role].group_ranks, key=lambda g: g[0])
        parts.append(f"{role}=" + ",".join("[" + ",".join(map(str, g)) + "]" for g in subs))
    return ";".join(parts)


CREATION_ROLE = {"attention_tp": "attn_tp"}


def row_for(s, layout):
    tp, pp, ep, moe_dp, attn_dp, attn_cp = layout
    head = [str(x) for x in layout]
    dash = ["-"] * 8
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            r = s.server_args(*layout)
    except REFUSALS as e:  # every refusal is a row
        return head + ["reject_server_args", reason_of(e)] + dash
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            groups = s.build_groups(tp, pp, r)
            # DeepseekV2AttentionMLA: assert num_heads % attn_tp_size == 0
            # (models/deepseek_v2.py:2057 @ 0.5.23), reproduced: building the
            # model needs real tensors.
            attn_tp = tp // r["attn_dp_size"] // r["attn_cp_size"]
            if DSV3_CONFIG["num_attention_heads"] % attn_tp:
                raise _Reproduced(
                    f"assert num_heads % attn_tp_size == 0 "
                    f"({DSV3_CONFIG['num_attention_heads']} % {attn_tp})",
                    "models/deepseek_v2.py:2057",
                )
            # _reject_unsupported_cp_moe (layers/layer_boundary/factories.py:66-89,
            # called at 562-566 @ 0.5.23), reproduced: a MoE on the TP group (no
            # all-to-all backend) whose data-parallel groups are the CP ranks,
            # under attention DP. The attention is built first, so the heads
            # check above wins when both refuse.
            if attn_cp > 1 and moe_dp == attn_cp and attn_dp > 1:
                raise _Reproduced(
                    "NotImplementedError: a MoE on the TP group with moe_dp_size == "
                    "attn_cp_size under attention DP and attention CP",
                    "layers/layer_boundary/factories.py:85",
                )
    except _Reproduced as e:
        return head + ["reject_model", reason_of(e, e.loc)] + dash
    except REFUSALS as e:
        return head + ["reject_model", reason_of(e)] + dash
    names = {id(g): CREATION_ROLE.get(g.group_name, g.group_name) for g in groups.values()}
    objects = ";".join(f"{role}={names[id(groups[role])]}" for role in ROLES)
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        with s.runtime(tp, pp, r, groups):
            tags = s.tags(groups, names)
            moe_ws, moe_ws_group = s.moe_workspace(groups, names)
            flags, plan, pad = s.exit_case(tp, r, groups, names, moe_ws_group)
    fusion = int(r["fusion_backend"] is not None)
    return head + ["accept", "-", fmt_groups(groups), objects, tags, moe_ws, flags, plan, pad, str(fusion)]


# What SGLang raises to refuse a layout; anything else is a harness bug and
# propagates.
REFUSALS = (AssertionError, ValueError, RuntimeError, NotImplementedError)


class _Reproduced(Exception):
    def __init__(self, msg, loc):
        super().__init__(msg)
        self.loc = loc


HEADER = [
    "tp", "pp", "ep", "moe_dp", "attn_dp", "attn_cp", "verdict", "reason", "groups",
    "objects", "tags", "moe_ws", "exit_facts", "plan", "dp_padding", "fusion_auto",
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sglang", required=True, help="directory containing the sglang package")
    ap.add_argument("--limit", type=int, default=None, help="only the first N layouts (debugging)")
    args = ap.parse_args(argv)
    try:
        s = Sglang(args.sglang)
    except Exception as e:  # noqa: BLE001
        print(f"sglang not importable: {type(e).__name__}: {e}", file=sys.stderr)
        return 0
    full = sum(1 for _ in grid(False))
    restrict = full > 20000
    layouts = list(grid(restrict))
    if args.limit:
        layouts = layouts[: args.limit]
    out = sys.stdout
    w = out.write
    w(f"# sglang {s.version} expected-conformance table (computed by SGLang's own functions on a CPU)\n")
    w("# generator: python3 tools/conformance/sglang_table.py --sglang <dir containing sglang/> > tests/conformance/sglang-"
      f"{s.version}.tsv\n")
    w("# model: DeepseekV3ForCausalLM (hidden 7168, 128 heads, 256 experts, bf16); platform: CUDA SM90, one node (nnodes=1)\n")
    w("# server args: --tp-size tp --pp-size pp --ep-size ep --moe-dp-size moe_dp --attn-cp-size attn_cp"
      " [--dp-size attn_dp --enable-dp-attention when attn_dp>1]; no speculative decoding, no LoRA,"
      " --moe-a2a-backend none, --boundary-reduction auto\n")
    w("# server-arg checks run: handle_deprecated_dp_attention, handle_data_parallelism, handle_context_parallelism,"
      " handle_a2a_moe, _flashinfer_allreduce_fusion_auto_enable, _enforce_disable_allreduce_fusion,"
      " resolve_boundary_reduction (GPU-only hooks: memory, CUDA graph, attention backend are not run)\n")
    w("# model checks: initialize_model_parallel with a recording GroupCoordinator (+ ParallelContext width validation),"
      " DeepseekV2AttentionMLA heads % attn_tp (reproduced, models/deepseek_v2.py:2057),"
      " _reject_unsupported_cp_moe (reproduced, layers/layer_boundary/factories.py:66-89)\n")
    w(f"# grid: tp 1..32, pp {{1,2,4}}, ep/moe_dp/attn_dp divisors of tp, attn_cp {{1,2}}, tp*pp<=64; "
      f"full product {full} rows" + ("; RESTRICTED: ep/moe_dp/attn_dp only powers of two or tp" if restrict else "") + "\n")
    w(f"# decode case: {DECODE_TOKENS_PER_DP_GROUP} tokens per attention-DP group, MoE FFN at a non-terminal layer;"
      " exit_facts = sum_deferral_allowed,may_defer_sum,single_sum,reduce_scatterv (exit.py:82-137)\n")
    w("# plan mapping of ExitPolicy._decide's ExitDecision.complete (exit.py:239):"
      " _complete_now with dp_step=dp_reduce_scatterv -> reduce_scatterv:tp;"
      " with dp_step=dp_reduce_scatter -> reduce_scatter:tp;"
      " owes_sum and returns over DP -> all_reduce_then_scatter:<sum roles>;"
      " owes_sum otherwise -> complete_now:<sum roles> (tp when EP+MoE-TP merge, else moe_ep then moe_tp, moe/utils.py:886-897);"
      " no sum owed -> nothing;"
      " _defer(UnreducedOutput(group=G)) -> defer:<creation role of G>;"
      " _defer(UnreducedOutput(reduce_to_dp_local=all_reduce_to_dp_local(G))) -> defer_all_reduce_scatter:<creation role of G>;"
      " _defer(UnreducedOutput(reduce_to_dp_local=to_dp_local(dp_reduce_scatter[v]))) -> reduce_scatter[v]:tp (run by the next layer's input)\n")
    w("# dp_padding: DpPaddingMode.get_dp_padding_mode(is_extend=False, [8]*attn_dp) with no custom all-reduce communicator on the TP group"
      " (dp_attention.py:165-204, 222-242)\n")
    w("# tags: _tag_groups_for_flashinfer_allreduce_only with _ENABLE_FLASHINFER_ALLREDUCE_ONLY=True (parallel_state.py:2357);"
      " moe_ws: post_experts_reduction_group branch:creation role (moe/utils.py:900)\n")
    w("\t".join(HEADER) + "\n")
    counts = {}
    for layout in layouts:
        row = row_for(s, layout)
        counts[row[6]] = counts.get(row[6], 0) + 1
        w("\t".join(row) + "\n")
    print("rows: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
