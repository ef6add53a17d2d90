# The twenty-fourth session's call on the nvidia-h100-x1 host: .carry/old is
# the bench build of ace762f (BM_SimVersusOpenMpi registered after
# BM_PerMachine), .carry/new that of ffea07b (registered before it).
# Whether the per-core comparison reads low after the per-machine rows:
# five whole goal runs, new, old, new, old, new. Writes under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
lscpu > $OUT/lscpu.txt
n=0
for side in new old new old new; do
  n=$((n + 1))
  export LOCKSTEP_MPI_BASELINE=$PWD/.carry/$side/bin/mpi_allreduce_baseline
  LD_LIBRARY_PATH=$PWD/.carry/$side/lib timeout 110 .carry/$side/bin/sim_bench \
    --benchmark_filter='BM_SimVersusOpenMpi|BM_PerMachine|BM_SimRankCalls/world:(8|4096)/fused:0/wide:0' \
    > $OUT/goal_${n}_${side}.txt 2>&1
  echo "run $n $side: sim_bench rc $?" >> $OUT/rc.txt
done
