# Pinned A/B of sim_bench's goal rows at world 8 (NCCL and fused), run from
# the repository root:
#   BASE=<old bin> NEW=<new bin> ROUNDS=8 bash rows_ab.sh OUT
# The two builds run at once on cores 0 and 1, swapped every round; OUT gets
# dev_ab.sh's line format (ab_summary.py of the seventeenth session reads it).
set -u
OUT=$1
BASE=${BASE:?}
NEW=${NEW:?}
ROUNDS=${ROUNDS:-8}
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then cb=0; cn=1; else cb=1; cn=0; fi
  for f in 0 1; do
    ( taskset -c $cb "$BASE/sim_bench" --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r base row fused:$f core $cb /" >> "$OUT" ) &
    ( taskset -c $cn "$NEW/sim_bench" --benchmark_filter="BM_SimRankCalls/world:8/fused:$f/wide:0" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s/^/round $r new row fused:$f core $cn /" >> "$OUT" ) &
    wait
  done
done
