set -u
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=$PWD/.carry/lib
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
lscpu > $OUT/lscpu.txt 2>&1
# A/B of the user path, before (314aa6d) and after this session's changes: the two
# binaries run at the same time on two cores (swapped every round), so that the
# host's speed changes fall on both.
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then cb=3; cn=9; else cb=9; cn=3; fi
  for s in tp8-llama3-h200 tp8-cuda-graphs-custom-llama3-h200 dpattn-dp8-ep8-deepseek-v3-h200 tp32-deepseek-v3-gb200; do
    n=3000; [ $s = tp32-deepseek-v3-gb200 ] && n=500
    ( t0=$(date +%s.%N); taskset -c $cb .carry/bin/lockstep_base explore topologies/scenarios/$s.yaml --seeds $n --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r base $s core $cb seconds $(awk "BEGIN{print $t1 - $t0}")" >> $OUT/ab_pinned.txt ) &
    ( t0=$(date +%s.%N); taskset -c $cn .carry/bin/lockstep explore topologies/scenarios/$s.yaml --seeds $n --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r new $s core $cn seconds $(awk "BEGIN{print $t1 - $t0}")" >> $OUT/ab_pinned.txt ) &
    wait
  done
done
.carry/bin/sim_bench --benchmark_filter='BM_CatalogueScenario|BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/' > $OUT/rows.txt 2>&1
echo "sim_bench rc $?" >> $OUT/rows.txt
