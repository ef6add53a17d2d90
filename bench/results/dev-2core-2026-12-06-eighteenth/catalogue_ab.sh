# What a seed of every catalogue scenario costs two bench-preset builds, run
# at once on cores 0 and 1 (swapped every round), from the repository root:
#   BASE=<old bin> NEW=<new bin> ROUNDS=3 bash catalogue_ab.sh > OUT
# Per scenario: `explore FILE --seeds 50 --jobs 1` wall time / 50 (start-up
# and YAML loading included), the median over the rounds; then the sums.
set -u
BASE=${BASE:?}
NEW=${NEW:?}
ROUNDS=${ROUNDS:-3}
tmp=$(mktemp)
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then cb=0; cn=1; else cb=1; cn=0; fi
  for f in topologies/scenarios/*.yaml; do
    s=$(basename "$f" .yaml)
    ( t0=$(date +%s.%N); taskset -c $cb "$BASE/lockstep" explore "$f" --seeds 50 --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "base $s $(awk "BEGIN{print ($t1 - $t0) * 1000 / 50}")" >> "$tmp" ) &
    ( t0=$(date +%s.%N); taskset -c $cn "$NEW/lockstep" explore "$f" --seeds 50 --jobs 1 >/dev/null 2>&1; t1=$(date +%s.%N); echo "new $s $(awk "BEGIN{print ($t1 - $t0) * 1000 / 50}")" >> "$tmp" ) &
    wait
  done
done
python3 - "$tmp" <<'PY'
import collections, statistics, sys
ms = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    which, s, v = line.split()
    ms[s][which].append(float(v))
rows = sorted(((statistics.median(d["base"]), statistics.median(d["new"]), s) for s, d in ms.items()), reverse=True)
tb = sum(r[0] for r in rows); tn = sum(r[1] for r in rows)
print("| scenario | base, ms a seed | new | new / base |")
print("| --- | ---: | ---: | ---: |")
for b, n, s in rows:
    print(f"| {s} | {b:.3f} | {n:.3f} | {n / b:.3f} |")
print(f"| all {len(rows)} scenarios | {tb:.3f} | {tn:.3f} | {tn / tb:.3f} |")
PY
rm -f "$tmp"
