# Medians of focused_ab.sh's output (eighteenth session), seconds, and new /
# base with the range of the rounds' ratios: python3 catalogue_summary.py OUT
import collections
import statistics
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    f = line.split()
    runs[f[3]][f[2]][int(f[1])] = float(f[7])
for scenario, v in runs.items():
    rounds = sorted(set(v["base"]) & set(v["new"]))
    b = statistics.median(v["base"][r] for r in rounds)
    n = statistics.median(v["new"][r] for r in rounds)
    ratios = [v["new"][r] / v["base"][r] for r in rounds]
    print(f"{scenario:40s} base {b:7.3f} s  new {n:7.3f} s  new/base {n / b:.3f} "
          f"[{min(ratios):.2f}-{max(ratios):.2f}]")
