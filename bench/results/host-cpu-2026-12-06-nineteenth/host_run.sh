# What ran on the nvidia-h100-x1 host this session, from the repository root
# with `.carry` holding two bundles (bench preset, built on the development
# machine, the system's Abseil, yaml-cpp, Boost.Context and Benchmark in
# lib/): .carry/base of 464e00c (sim_bench, lockstep) and .carry/new of
# 0b79457 (sim_bench, lockstep, mpi_allreduce_baseline). Writes under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/new/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
lscpu > $OUT/lscpu.txt 2>&1
# 1. The catalogue, base against new at once on cores 3 and 9 (swapped every
#    round), as catalogue_ab.sh on the development machine.
CAT=$OUT/h_catalogue_raw.txt
for r in 1 2; do
  if [ $((r % 2)) = 1 ]; then cb=3; cn=9; else cb=9; cn=3; fi
  for f in topologies/scenarios/*.yaml; do
    s=$(basename "$f" .yaml)
    for side in base new; do
      if [ $side = base ]; then c=$cb; else c=$cn; fi
      ( t0=$(date +%s.%N); LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c $c .carry/$side/bin/lockstep explore "$f" --seeds 50 --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "$side $s $(awk "BEGIN{print ($t1 - $t0) * 1000 / 50}")" >> $CAT ) &
    done
    wait
  done
done
# 2. The goal rows at world 8, base against new, four pinned rounds.
AB=$OUT/h_rows_ab.txt
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then cb=3; cn=9; else cb=9; cn=3; fi
  for f in 0 1; do
    for side in base new; do
      if [ $side = base ]; then c=$cb; else c=$cn; fi
      ( LD_LIBRARY_PATH=$PWD/.carry/$side/lib taskset -c $c .carry/$side/bin/sim_bench --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r $side row fused:$f core $c /" >> $AB ) &
    done
    wait
  done
done
# 3. The goal rows of the new build, one run with its OpenMPI baseline.
LD_LIBRARY_PATH=$PWD/.carry/new/lib timeout 300 .carry/new/bin/sim_bench --benchmark_filter='BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/|BM_SimRankCallsFullPipeline/world:(8|4096)/|BM_HangReportLatency' > $OUT/rows.txt 2>&1
echo "sim_bench rc $?" >> $OUT/rows.txt
