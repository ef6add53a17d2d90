# The second call on the nvidia-h100-x1 host this session: the same bundles
# as host_run.sh (.carry/base of 6a9261b, .carry/new of the final change),
# base and new alternating at every step so that the host's drift (the
# first call's rounds moved 24 % for one binary) falls on both. Writes
# under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/new/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
# 1. Each world row, base then new (then new then base), six rounds, core 3.
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for row in 'BM_SimRankCalls/world:8/fused:0/wide:0' 'BM_SimRankCalls/world:4096/fused:0/wide:0' \
             'BM_SimRankCalls/world:8/fused:0/wide:1' 'BM_SimRankCalls/world:4096/fused:0/wide:1' \
             'BM_SimRankCalls/world:8/fused:1/wide:0' 'BM_SimRankCalls/world:4096/fused:1/wide:0'; do
    for side in $order; do
      LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c 3 .carry/$side/bin/sim_bench \
        --benchmark_filter="^$row/" 2>/dev/null | grep '^BM_' | sed "s/^/round $r $side /" >> $OUT/h_rows_alt.txt
    done
  done
done
# 2. The catalogue, scenario by scenario, base then new (then new then base),
#    two rounds of 100 seeds, core 3.
for r in 1 2; do
  if [ $r = 1 ]; then order="base new"; else order="new base"; fi
  for f in topologies/scenarios/*.yaml; do
    s=$(basename "$f" .yaml)
    for side in $order; do
      t0=$(date +%s.%N)
      LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c 3 .carry/$side/bin/lockstep explore "$f" --seeds 100 --jobs 1 >/dev/null 2>&1
      t1=$(date +%s.%N)
      echo "round $r $side $s $(awk "BEGIN{print ($t1 - $t0) * 1000 / 100}")" >> $OUT/h_catalogue_alt.txt
    done
  done
done
# 3. The goal rows of the new build, one run with its OpenMPI baseline.
LD_LIBRARY_PATH=$PWD/.carry/new/lib timeout 300 .carry/new/bin/sim_bench --benchmark_filter='BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/|BM_HangReportLatency' > $OUT/rows2.txt 2>&1
echo "sim_bench rc $?" >> $OUT/rows2.txt
