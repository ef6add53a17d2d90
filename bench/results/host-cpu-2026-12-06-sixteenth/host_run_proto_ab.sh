set -u
export NCCL_NVLS_ENABLE=0
export LD_LIBRARY_PATH=$PWD/.carry/lib
export LOCKSTEP_MPI_BASELINE=$PWD/.carry/bin/mpi_allreduce_baseline
export LOCKSTEP_TOPOLOGIES=$PWD/topologies
B=.carry/proto/sim_bench; AB=$OUT/host_proto_ab.txt
ROWS='BM_SimRankCalls/world:(8|4096)/fused:0/'
# Pinned pairs: the prototype's binary with the model off (base) and on (new).
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then cb=3; cn=9; else cb=9; cn=3; fi
  ( LOCKSTEP_PROTO_RUN_AHEAD=0 taskset -c $cb $B --benchmark_filter="$ROWS" 2>/dev/null | grep -o '^BM_[^ ]*\|ns_per_rank_call=[0-9.k]*' | paste - - | sed "s/^/round $r base core $cb /" >> $AB ) &
  ( LOCKSTEP_PROTO_RUN_AHEAD=1 taskset -c $cn $B --benchmark_filter="$ROWS" 2>/dev/null | grep -o '^BM_[^ ]*\|ns_per_rank_call=[0-9.k]*' | paste - - | sed "s/^/round $r new core $cn /" >> $AB ) &
  wait
done
# Per core against OpenMPI, off and on alternately, each run with its own baseline.
for v in 0 1 1 0; do
  echo "model $v" >> $OUT/host_proto_per_core.txt
  LOCKSTEP_PROTO_RUN_AHEAD=$v timeout 120 $B --benchmark_filter='BM_SimVersusOpenMpi/fused:0' 2>&1 | grep -E '^BM_' >> $OUT/host_proto_per_core.txt
done
