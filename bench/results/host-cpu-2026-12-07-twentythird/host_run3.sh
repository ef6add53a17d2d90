# The third call on the nvidia-h100-x1 host this session: .carry/base of
# 6a9261b, .carry/new of ace762f (the session's last change to what runs).
# Writes under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/new/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
# 1. The per-core comparison alone, first, twice (in the second call it ran
#    after the per-machine rows, and its bare simulator runs were a third
#    slower than the world-8 row of the same process).
for i in 1 2; do
  LD_LIBRARY_PATH=$PWD/.carry/new/lib timeout 120 .carry/new/bin/sim_bench \
    --benchmark_filter='BM_SimVersusOpenMpi' 2>&1 | grep '^BM_' | sed "s/^/run $i /" >> $OUT/h_per_core.txt
done
# 2. Each world row, base then new (then new then base), core 3.
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  rows='BM_SimRankCalls/world:8/fused:0/wide:0 BM_SimRankCalls/world:4096/fused:0/wide:0 BM_SimRankCalls/world:8/fused:0/wide:1 BM_SimRankCalls/world:4096/fused:0/wide:1'
  if [ $r -le 3 ]; then rows="$rows BM_SimRankCallsFullPipeline/world:8/fused:0 BM_SimRankCallsFullPipeline/world:4096/fused:0"; fi
  for row in $rows; do
    for side in $order; do
      LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c 3 .carry/$side/bin/sim_bench \
        --benchmark_filter="^$row/" 2>/dev/null | grep '^BM_' | sed "s/^/round $r $side /" >> $OUT/h_rows_alt3.txt
    done
  done
done
# 3. The goal rows of the new build, one run with its OpenMPI baseline.
LD_LIBRARY_PATH=$PWD/.carry/new/lib timeout 300 .carry/new/bin/sim_bench --benchmark_filter='BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/|BM_HangReportLatency' > $OUT/rows3.txt 2>&1
echo "sim_bench rc $?" >> $OUT/rows3.txt
