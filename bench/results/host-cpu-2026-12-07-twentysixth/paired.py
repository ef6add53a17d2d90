#!/usr/bin/env python3
"""Reads h_rows_alt.txt (lines "round R SIDE BM_row/iterations:1 ... ns_per_rank_call=X ...")
and prints, per row, each side's median ns per rank-call, the paired ratio cur / base
(median and range over rounds) and, per side, the median over rounds of world 4 096 / world 8."""
import re
import statistics
import sys
from collections import defaultdict

ns = defaultdict(dict)  # (row, side) -> {round: ns}
for line in open(sys.argv[1] if len(sys.argv) > 1 else "h_rows_alt.txt"):
    m = re.match(r"round (\d+) (\w+) (\S+)/iterations:1 .*ns_per_rank_call=([\d.]+)([kM]?)", line)
    if m:
        scale = {"": 1.0, "k": 1e3, "M": 1e6}[m.group(5)]
        ns[(m.group(3), m.group(2))][int(m.group(1))] = float(m.group(4)) * scale

rows = sorted({row for row, _ in ns})
for row in rows:
    base, cur = ns.get((row, "base"), {}), ns.get((row, "cur"), {})
    rounds = sorted(set(base) & set(cur))
    if not rounds:
        continue
    ratios = [cur[r] / base[r] for r in rounds]
    print(f"{row}: base {statistics.median(base.values()):.0f} ns, cur {statistics.median(cur.values()):.0f} ns, "
          f"paired cur/base {statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}] over {len(rounds)} rounds")

for shape in ("BM_SimRankCalls/world:{}/fused:0/wide:0", "BM_SimRankCalls/world:{}/fused:0/wide:1",
              "BM_SimRankCallsFullPipeline/world:{}/fused:0"):
    for side in ("base", "cur"):
        small, big = ns.get((shape.format(8), side), {}), ns.get((shape.format(4096), side), {})
        rounds = sorted(set(small) & set(big))
        if rounds:
            w = [big[r] / small[r] for r in rounds]
            print(f"{shape.format('4096/8')} {side}: median {statistics.median(w):.2f} "
                  f"[{min(w):.2f}-{max(w):.2f}], {sum(x <= 1.5 for x in w)} of {len(w)} <= 1.5")
