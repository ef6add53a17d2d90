# Pinned A/B of sim_bench's rows by world size (8 and 4 096: tp8 groups,
# one group as wide as the world, NCCL and fused), run from the repository
# root:
#   BASE=<old bin> NEW=<new bin> ROUNDS=4 bash world_rows_ab.sh OUT
# The two builds run at once on cores 0 and 1, swapped every round; OUT gets
# dev_ab.sh's line format (ab_summary.py of the seventeenth session reads it).
set -u
OUT=$1
BASE=${BASE:?}
NEW=${NEW:?}
ROUNDS=${ROUNDS:-4}
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then cb=0; cn=1; else cb=1; cn=0; fi
  for row in world:8/fused:0/wide:0 world:8/fused:1/wide:0 world:4096/fused:0/wide:0 world:4096/fused:1/wide:0 world:8/fused:0/wide:1 world:4096/fused:0/wide:1; do
    ( taskset -c $cb "$BASE/sim_bench" --benchmark_filter="BM_SimRankCalls/$row/" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s|^|round $r base row $row core $cb |" >> "$OUT" ) &
    ( taskset -c $cn "$NEW/sim_bench" --benchmark_filter="BM_SimRankCalls/$row/" 2>/dev/null | grep -o 'ns_per_rank_call=[0-9.k]*' | sed "s|^|round $r new row $row core $cn |" >> "$OUT" ) &
    wait
  done
done
