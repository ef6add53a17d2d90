# Medians of a paired A/B's output, and new / base with the range of the
# rounds' ratios. Two line formats, told apart by their fields:
#   rows_ab.sh:          round R base|new core C ROW ns_per_rank_call=X ...
#   focused_ab.sh (the eighteenth session's, catalogue scenarios):
#                        round R base|new SCENARIO core C seconds S
# python3 ab_summary.py OUT
import collections
import statistics
import sys

runs = collections.defaultdict(lambda: collections.defaultdict(dict))
unit, digits = "", 1
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 8 and f[6] == "seconds":
        key, value, unit, digits = f[3], float(f[7]), " s", 3
    else:
        key, value = f[5], float(f[6].split("=")[1])
    runs[key][f[2]][int(f[1])] = value
for key, v in runs.items():
    rounds = sorted(set(v["base"]) & set(v["new"]))
    b = statistics.median(v["base"][r] for r in rounds)
    n = statistics.median(v["new"][r] for r in rounds)
    ratios = [v["new"][r] / v["base"][r] for r in rounds]
    print(f"{key:62s} base {b:8.{digits}f}{unit}  new {n:8.{digits}f}{unit}  new/base {n / b:.3f} "
          f"[{min(ratios):.2f}-{max(ratios):.2f}] ({len(rounds)} rounds)")
