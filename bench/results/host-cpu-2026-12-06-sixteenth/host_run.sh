set -u
export NCCL_NVLS_ENABLE=0
NCCL_LIB=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0] + '/lib')" 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/.carry/lib:$NCCL_LIB
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
lscpu > $OUT/lscpu.txt 2>&1; nvidia-smi -L > $OUT/gpu.txt 2>&1
# 1. The kernel tests (b71c8e3's two-shot poll value hoisted has not run on a GPU).
for t in lamport_kernel_test custom_kernel_test; do
  timeout 240 .carry/bin/$t > $OUT/$t.txt 2>&1; echo "$t rc $?" >> $OUT/$t.txt; tail -3 $OUT/$t.txt
done
# 2. Pinned A/B: 3febc01 (base) against ceddc5f (new), same scenarios and rows as dev_ab.sh.
BASE=.carry/base NEW=.carry/bin; AB=$OUT/h_ab_pinned.txt
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then cb=3; cn=9; else cb=9; cn=3; fi
  for s in tp8-llama3-h200 tp8-cuda-graphs-custom-llama3-h200 dpattn-dp8-ep8-deepseek-v3-h200 tp32-deepseek-v3-gb200; do
    n=3000; [ $s = tp32-deepseek-v3-gb200 ] && n=500
    ( t0=$(date +%s.%N); taskset -c $cb $BASE/lockstep explore topologies/scenarios/$s.yaml --seeds $n --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r base $s core $cb seconds $(awk "BEGIN{print $t1 - $t0}")" >> $AB ) &
    ( t0=$(date +%s.%N); taskset -c $cn $NEW/lockstep explore topologies/scenarios/$s.yaml --seeds $n --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r new $s core $cn seconds $(awk "BEGIN{print $t1 - $t0}")" >> $AB ) &
    wait
  done
  for f in 0 1; do
    ( taskset -c $cb $BASE/sim_bench --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r base row fused:$f core $cb /" >> $AB ) &
    ( taskset -c $cn $NEW/sim_bench --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r new row fused:$f core $cn /" >> $AB ) &
    wait
  done
done
# 3. The goal rows of ceddc5f, one run with its OpenMPI baseline.
timeout 400 .carry/bin/sim_bench --benchmark_filter='BM_CatalogueScenario|BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/|BM_HangReportLatency' > $OUT/rows.txt 2>&1
echo "sim_bench rc $?" >> $OUT/rows.txt
# 4. The run-ahead prototype (branch proto-run-ahead), same rows, same host, right after.
LOCKSTEP_PROTO_RUN_AHEAD=1 timeout 400 .carry/proto/sim_bench --benchmark_filter='BM_CatalogueScenario|BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/' > $OUT/proto_rows.txt 2>&1
echo "proto sim_bench rc $?" >> $OUT/proto_rows.txt
