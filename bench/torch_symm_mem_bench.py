#!/usr/bin/env python3
"""PyTorch symmetric-memory all-reduce baseline for docs/PERFORMANCE.md.

Times torch.ops.symm_mem.one_shot_all_reduce and two_shot_all_reduce_ (bf16,
sum, 1 KB to 256 MB) with CUDA-graph replay and CUDA events, the way
bench/gpu_allreduce_bench times lockstep's kernels and NCCL. Multicast stays
off: TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NCCL_NVLS_ENABLE=0 are forced
before torch loads, and no multimem operation is called.

Run:  torchrun --nproc-per-node 2 bench/torch_symm_mem_bench.py [--out results.csv]
"""
import argparse
import os

os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NCCL_NVLS_ENABLE"] = "0"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._symmetric_memory as symm_mem  # noqa: E402


def time_graph(fn, calls, replays=3):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm up outside the graph
            fn()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls):
                fn()
        graph.replay()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        total = 0.0
        for _ in range(replays):
            dist.barrier()
            start.record(stream)
            graph.replay()
            stop.record(stream)
            stop.synchronize()
            ms = torch.tensor([start.elapsed_time(stop)], device="cuda")
            dist.all_reduce(ms, op=dist.ReduceOp.MAX)  # the slowest rank counts
            total += ms.item()
    return total / 1e3 / replays / calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="")
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    group = dist.group.WORLD.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed before PyTorch 2.8
        symm_mem.enable_symm_mem_for_group(group)
    rows = []
    size = 1024
    while size <= args.max_bytes:
        n = size // 2
        calls = max(4, min(200, (512 << 20) // size))
        buf = symm_mem.empty(n, dtype=torch.bfloat16, device="cuda")
        symm_mem.rendezvous(buf, group)
        buf.fill_(0.001)
        plain = torch.full((n,), 0.001, dtype=torch.bfloat16, device="cuda")
        results = {}
        for name, fn in [
            ("torch_one_shot", lambda: torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", group)),
            ("torch_two_shot", lambda: torch.ops.symm_mem.two_shot_all_reduce_(buf, "sum", group)),
            ("torch_nccl", lambda: dist.all_reduce(plain)),
        ]:
            try:
                results[name] = time_graph(fn, calls)
            except Exception as e:  # noqa: BLE001 (a size an op refuses is reported, not fatal)
                results[name] = None
                if rank == 0:
                    print(f"# {name} at {size} bytes: {type(e).__name__}: {str(e).splitlines()[0]}")
        if rank == 0:
            for name, t in results.items():
                if t is None:
                    continue
                algbw = size / t / 1e9
                rows.append((name, size, t * 1e6, algbw, algbw * 2 * (world - 1) / world))
                print(f"{name:16s} {size:>10d} B {t * 1e6:10.2f} us  busbw {rows[-1][4]:8.2f} GB/s",
                      flush=True)
        del buf
        size *= 2
    if rank == 0 and args.out:
        with open(args.out, "w") as f:
            f.write("name,bytes,us,algbw_GBps,busbw_GBps\n")
            for r in rows:
                f.write(",".join(str(x) for x in r) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
