#!/usr/bin/env bash
# Runs lockstep's GPU tests and benchmarks on a GPU host from a bundle made by
# tools/gpu_bundle.sh, writing logs into OUT_DIR.
# Usage: tools/gpu_suite.sh BUNDLE OUT_DIR PHASE...   (PHASE: tests sanitize bench hw torch)
set -uo pipefail
bundle=$1 out=$2
shift 2
# Never NVLink multicast (shared hosts): NCCL, PyTorch and NVSHMEM all off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nccl_lib=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0] + '/lib')" 2>/dev/null)
export LD_LIBRARY_PATH=$bundle/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bin=$bundle/bin
mkdir -p "$out"
step() {  # step NAME TIMEOUT COMMAND...
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc ($((SECONDS - t0)) s)" | tee -a "$out/summary.txt"
  grep -E "FAILED|PASSED|SKIPPED|ERROR SUMMARY|Error|error" "$out/$name.log" | head -20
}
for phase in "$@"; do
  case $phase in
    tests)
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpus.txt"
      nvidia-smi topo -m >>"$out/gpus.txt"
      step lamport 100 "$bin/lamport_kernel_test"
      step two_gpu 100 "$bin/dispatch_two_gpu_test"
      step mpi 100 mpirun -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "$bin/dispatch_mpi_test"
      ;;
    sanitize)
      # API errors that callers handle (NCCL probing kernel images, peer access
      # already enabled) are not reported; memory errors and hazards are.
      step memcheck 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
        "$bin/lamport_kernel_test" --gtest_filter='*w2_bf16*:*w4_fp16*:*Fp32Acc*:*FusedResidual*'
      step racecheck 120 compute-sanitizer --tool racecheck --error-exitcode 9 \
        "$bin/lamport_kernel_test" --gtest_filter='*w2_bf16_h7168_one_shot*:*FusedResidual*'
      step memcheck_two_gpu 150 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
        "$bin/dispatch_two_gpu_test"
      ;;
    bench)
      step bench 280 "$bin/gpu_allreduce_bench" --benchmark_out="$out/bench.json" \
        --benchmark_out_format=json
      ;;
    hw)
      # lockstep hw: the multigpu tests, then three runs whose output the docs quote.
      export LOCKSTEP_CLI=$bin/lockstep LOCKSTEP_SOURCE_DIR=$PWD
      step hw_runner_test 400 "$bin/hw_runner_test"
      mpi="mpirun -np 2 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE"
      step hw_runs 180 bash -c "set -x
        $mpi $bin/lockstep hw topologies/scenarios/hw/tp2-ep2-qwen3-h200x2.yaml --compare
        $mpi $bin/lockstep hw topologies/scenarios/hw/tp2-h200x2-workspace-initialized-view.yaml \
          --policy local-predicates --kernel-wait-ms 2000 --watchdog-ms 4000
        $mpi $bin/lockstep hw topologies/scenarios/hw/tp2-h200x2-workspace-initialized-view.yaml \
          --policy local-predicates --consistency 1 --kernel-wait-ms 2000 --watchdog-ms 4000
        $mpi $bin/lockstep hw topologies/scenarios/hw/tp2-ep2-qwen3-h200x2.yaml \
          --policy allreduce-replicated-output
        $mpi $bin/lockstep hw topologies/scenarios/hw/tp2-ep2-qwen3-h200x2.yaml \
          --decision-log $out/decisions-hw
        $bin/lockstep sim topologies/scenarios/hw/tp2-ep2-qwen3-h200x2.yaml \
          --decision-log $out/decisions-sim
        $bin/lockstep check-log $out/decisions-hw --against $out/decisions-sim"
      ;;
    torch)
      step torch 200 torchrun --nproc-per-node 2 bench/torch_symm_mem_bench.py --out "$out/torch.csv"
      ;;
  esac
done
