# Medians of rows_ab.sh's output, and new / base with the range of the
# rounds' ratios: python3 ab_summary.py OUT
import collections
import statistics
import sys

rows = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    f = line.split()
    rows[f[5]][f[2]][int(f[1])] = float(f[6].split("=")[1])
for row, v in rows.items():
    rounds = sorted(set(v["base"]) & set(v["new"]))
    b = statistics.median(v["base"][r] for r in rounds)
    n = statistics.median(v["new"][r] for r in rounds)
    ratios = [v["new"][r] / v["base"][r] for r in rounds]
    print(f"{row:62s} base {b:8.1f}  new {n:8.1f}  new/base {n / b:.3f} "
          f"[{min(ratios):.2f}-{max(ratios):.2f}] ({len(rounds)} rounds)")
