# The twenty-sixth session's call on the GPU host: .carry/base is the bench
# build of c19681d (the twenty-fifth session's last commit), .carry/cur that
# of this session's simulator (fewer instructions a rank-call: the decision
# record reset from a constant, the posted input read in place, a host's
# outcome reused, a group's trace event prepared once, a check that stands
# for every member kept out of the agreements). Writes under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
lscpu > $OUT/lscpu.txt
# 1. Each world row and the fused row at world 8, base then cur (then cur
#    then base), core 3; the full pipeline at world 4 096 (6-8 s a run) in
#    the first two rounds only.
for r in 1 2 3 4 5 6 7 8; do
  if [ $((r % 2)) = 1 ]; then order="base cur"; else order="cur base"; fi
  rows='BM_SimRankCalls/world:8/fused:0/wide:0 BM_SimRankCalls/world:4096/fused:0/wide:0 BM_SimRankCalls/world:8/fused:0/wide:1 BM_SimRankCalls/world:4096/fused:0/wide:1 BM_SimRankCalls/world:8/fused:1/wide:0'
  if [ $r -le 2 ]; then rows="$rows BM_SimRankCallsFullPipeline/world:8/fused:0 BM_SimRankCallsFullPipeline/world:4096/fused:0"; fi
  for row in $rows; do
    for side in $order; do
      LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c 3 .carry/$side/bin/sim_bench \
        --benchmark_filter="^$row/" 2>/dev/null | grep '^BM_' | sed "s/^/round $r $side /" >> $OUT/h_rows_alt.txt
    done
  done
done
# 2. The goal rows of cur, one run with its OpenMPI baseline.
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/cur/bin/mpi_allreduce_baseline
LD_LIBRARY_PATH=$PWD/.carry/cur/lib timeout 300 .carry/cur/bin/sim_bench \
  --benchmark_filter='BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/|BM_HangReportLatency' \
  > $OUT/goal.txt 2>&1
echo "sim_bench rc $?" >> $OUT/goal.txt
