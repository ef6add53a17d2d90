# What ran on the nvidia-h100-x1 host this session, from the repository root
# with `.carry` holding two bundles (tools/gpu_bundle.sh, bench preset):
# .carry/base of ceddc5f (sim_bench, lockstep; no simulator change from
# there to cb3cd4f) and .carry/new of 00e2c10 (63bce48 and a test; sim_bench,
# lockstep, mpi_allreduce_baseline). Writes under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/new/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
lscpu > $OUT/lscpu.txt 2>&1
# 1. Pinned A/B, base against new: the development machine's dev_ab.sh
#    scenarios and rows, on cores 3 and 9, swapped every round.
AB=$OUT/h_ab_pinned.txt
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then cb=3; cn=9; else cb=9; cn=3; fi
  for s in tp8-llama3-h200 tp8-cuda-graphs-custom-llama3-h200 dpattn-dp8-ep8-deepseek-v3-h200 tp32-deepseek-v3-gb200 pp2-dpattn-dp72-ep72-deepseek-v3-2xnvl72; do
    n=3000; [ $s = tp32-deepseek-v3-gb200 ] && n=500; [ $s = pp2-dpattn-dp72-ep72-deepseek-v3-2xnvl72 ] && n=60
    for side in base new; do
      if [ $side = base ]; then c=$cb; else c=$cn; fi
      ( t0=$(date +%s.%N); LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c $c .carry/$side/bin/lockstep explore topologies/scenarios/$s.yaml --seeds $n --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r $side $s core $c seconds $(awk "BEGIN{print $t1 - $t0}")" >> $AB ) &
    done
    wait
  done
  for f in 0 1; do
    for side in base new; do
      if [ $side = base ]; then c=$cb; else c=$cn; fi
      ( LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c $c .carry/$side/bin/sim_bench --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r $side row fused:$f core $c /" >> $AB ) &
    done
    wait
  done
done
# 2. The goal rows of the new build, one run with its OpenMPI baseline.
LD_LIBRARY_PATH=$PWD/.carry/new/lib timeout 420 .carry/new/bin/sim_bench --benchmark_filter='BM_CatalogueScenario|BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/|BM_HangReportLatency' > $OUT/rows.txt 2>&1
echo "sim_bench rc $?" >> $OUT/rows.txt
