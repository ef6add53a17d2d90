# Pinned A/B of two bench-preset builds on the scenarios a change targets,
# run from the repository root:
#   BASE=<old bin> NEW=<new bin> ROUNDS=8 bash focused_ab.sh OUT SCENARIO:SEEDS...
# The two builds run at once on cores 0 and 1, swapped every round; OUT gets
# dev_ab.sh's line format, so ab_summary.py (seventeenth session) reads it.
set -u
OUT=$1
shift
BASE=${BASE:?}
NEW=${NEW:?}
ROUNDS=${ROUNDS:-8}
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then cb=0; cn=1; else cb=1; cn=0; fi
  for spec in "$@"; do
    s=${spec%%:*}
    n=${spec##*:}
    ( t0=$(date +%s.%N); taskset -c $cb "$BASE/lockstep" explore "topologies/scenarios/$s.yaml" --seeds "$n" --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r base $s core $cb seconds $(awk "BEGIN{print $t1 - $t0}")" >> "$OUT" ) &
    ( t0=$(date +%s.%N); taskset -c $cn "$NEW/lockstep" explore "topologies/scenarios/$s.yaml" --seeds "$n" --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "round $r new $s core $cn seconds $(awk "BEGIN{print $t1 - $t0}")" >> "$OUT" ) &
    wait
  done
done
