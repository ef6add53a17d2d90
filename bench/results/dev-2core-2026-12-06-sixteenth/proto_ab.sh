# Pinned A/B of the run-ahead prototype: one bench-preset sim_bench/lockstep
# built with run_ahead_prototype.patch, LOCKSTEP_PROTO_RUN_AHEAD=0 (today's
# model) against =1 (run-ahead), at the same time on two cores, swapped every
# round. Run from the repository root: BIN=<build-bench/bin> bash proto_ab.sh OUT
set -u
OUT=$1
BIN=${BIN:-$PWD/build-bench/bin}
ROWS='BM_SimRankCalls/world:(8|4096)/fused:0/|BM_SimRankCallsFullPipeline/world:(8|4096)/fused:0'
for r in 1 2 3 4 5; do
  if [ $((r % 2)) = 1 ]; then cb=0; cn=1; else cb=1; cn=0; fi
  ( LOCKSTEP_PROTO_RUN_AHEAD=0 taskset -c $cb $BIN/sim_bench --benchmark_filter="$ROWS" 2>/dev/null | grep -o '^BM_[^ ]*\|ns_per_rank_call=[0-9.k]*' | paste - - | sed "s/^/round $r base core $cb /" >> $OUT ) &
  ( LOCKSTEP_PROTO_RUN_AHEAD=1 taskset -c $cn $BIN/sim_bench --benchmark_filter="$ROWS" 2>/dev/null | grep -o '^BM_[^ ]*\|ns_per_rank_call=[0-9.k]*' | paste - - | sed "s/^/round $r new core $cn /" >> $OUT ) &
  wait
  for s in tp8-llama3-h200 dpattn-dp8-ep8-deepseek-v3-h200; do
    ( t0=$(date +%s.%N); LOCKSTEP_PROTO_RUN_AHEAD=0 taskset -c $cb $BIN/lockstep explore topologies/scenarios/$s.yaml --seeds 2000 --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r base $s core $cb seconds $(awk "BEGIN{print $t1 - $t0}")" >> $OUT ) &
    ( t0=$(date +%s.%N); LOCKSTEP_PROTO_RUN_AHEAD=1 taskset -c $cn $BIN/lockstep explore topologies/scenarios/$s.yaml --seeds 2000 --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r new $s core $cn seconds $(awk "BEGIN{print $t1 - $t0}")" >> $OUT ) &
    wait
  done
done
