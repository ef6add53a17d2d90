# Pinned A/B of two bench-preset builds on sim_bench rows, run from the
# repository root:
#   BASE=<old build-bench/bin> NEW=<new build-bench/bin> ROUNDS=4 bash rows_ab.sh OUT FILTER...
# The two builds run at once on cores 0 and 1, swapped every round; one line
# per row and build: "round R base|new ROW core C ns_per_rank_call=X peak=Y".
set -u
OUT=$1
shift
BASE=${BASE:?}
NEW=${NEW:?}
ROUNDS=${ROUNDS:-4}
row() {  # bin label core filter
  taskset -c "$3" "$1/sim_bench" --benchmark_filter="$4/" --benchmark_format=json 2>/dev/null |
    python3 -c '
import json, sys
for b in json.load(sys.stdin)["benchmarks"]:
    print(b["name"], "ns_per_rank_call=%.1f" % b.get("ns_per_rank_call", 0),
          "peak_heap_kib_per_rank=%.2f" % b.get("peak_heap_kib_per_rank", 0))' |
    sed "s/^/round $R $2 core $3 /" >> "$OUT"
}
for R in $(seq 1 "$ROUNDS"); do
  if [ $((R % 2)) = 1 ]; then cb=0; cn=1; else cb=1; cn=0; fi
  for f in "$@"; do
    row "$BASE" base $cb "$f" &
    row "$NEW" new $cn "$f" &
    wait
  done
done
