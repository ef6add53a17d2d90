"""Medians of a dev_ab.sh output: base, new, and new / base per round.

Usage: python3 ab_summary.py AB_OUTPUT
Prints one Markdown row per scenario or benchmark row: the median base and
new figure (seconds, or ns per rank-call), and the median of the per-round
ratios new / base with their range.
"""
import collections
import re
import statistics
import sys

rounds = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    m = re.match(r"round (\d+) (base|new) row (\S+) core \d+ ns_per_rank_call=([\d.]+)(k?)", line)
    if m:
        value = float(m.group(4)) * (1000 if m.group(5) else 1)
        rounds["row " + m.group(3)][int(m.group(1))][m.group(2)] = value
        continue
    m = re.match(r"round (\d+) (base|new) (\S+) core \d+ seconds ([\d.]+)", line)
    if m:
        rounds[m.group(3)][int(m.group(1))][m.group(2)] = float(m.group(4))
for name, by_round in rounds.items():
    pairs = [r for r in by_round.values() if len(r) == 2]
    ratios = [r["new"] / r["base"] for r in pairs]
    base = statistics.median(r["base"] for r in pairs)
    new = statistics.median(r["new"] for r in pairs)
    print(f"| {name} | {base:.4g} | {new:.4g} | "
          f"{statistics.median(ratios):.3f} [{min(ratios):.3f}–{max(ratios):.3f}] |")
