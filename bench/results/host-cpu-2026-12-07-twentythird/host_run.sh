# What ran on the nvidia-h100-x1 host this session, from the repository root
# with `.carry` holding two bundles (bench preset, built on the development
# machine; the system's Abseil, yaml-cpp, Boost.Context and Benchmark in
# lib/): .carry/base of 6a9261b and .carry/new of this session's change
# (sim_bench, lockstep, mpi_allreduce_baseline each). Writes under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/new/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
lscpu > $OUT/lscpu.txt 2>&1
ROWS='BM_SimRankCalls/world:(8|4096)/fused:0/wide:(0|1)|BM_SimRankCalls/world:(8|4096)/fused:1/wide:0|BM_SimRankCallsFullPipeline/world:(8|4096)/'
# 1. The world rows, one build at a time on core 3, base and new alternating,
#    four rounds.
for r in 1 2 3 4; do
  for side in base new; do
    LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c 3 .carry/$side/bin/sim_bench \
      --benchmark_filter="$ROWS" 2>/dev/null | grep '^BM_' | sed "s/^/round $r $side /" >> $OUT/h_rows_seq.txt
  done
done
# 2. The catalogue, one build at a time on core 3, two rounds of 100 seeds.
for r in 1 2; do
  for side in base new; do
    for f in topologies/scenarios/*.yaml; do
      s=$(basename "$f" .yaml)
      t0=$(date +%s.%N)
      LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c 3 .carry/$side/bin/lockstep explore "$f" --seeds 100 --jobs 1 >/dev/null 2>&1
      t1=$(date +%s.%N)
      echo "round $r $side $s $(awk "BEGIN{print ($t1 - $t0) * 1000 / 100}")" >> $OUT/h_catalogue_seq.txt
    done
  done
done
# 3. The goal rows of the new build, one run with its OpenMPI baseline.
LD_LIBRARY_PATH=$PWD/.carry/new/lib timeout 300 .carry/new/bin/sim_bench --benchmark_filter='BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/|BM_HangReportLatency' > $OUT/rows.txt 2>&1
echo "sim_bench rc $?" >> $OUT/rows.txt
