import re,sys,collections,statistics
d=collections.defaultdict(lambda: collections.defaultdict(dict))
for l in open(sys.argv[1]):
    m=re.match(r'round (\d+) (base|new) core \d+ (\S+)/iterations:1\s+ns_per_rank_call=([\d.]+)(k?)',l)
    if m: d[m.group(3)][int(m.group(1))][m.group(2)]=float(m.group(4))*(1000 if m.group(5) else 1); continue
    m=re.match(r'round (\d+) (base|new) (\S+) core \d+ seconds ([\d.]+)',l)
    if m: d[m.group(3)][int(m.group(1))][m.group(2)]=float(m.group(4))
for k,v in d.items():
    r=[v[i]['new']/v[i]['base'] for i in sorted(v) if len(v[i])==2]
    b=statistics.median(v[i]['base'] for i in v); n=statistics.median(v[i]['new'] for i in v)
    print(f"| {k} | {b:.4g} | {n:.4g} | {statistics.median(r):.2f} [{min(r):.2f}–{max(r):.2f}] |")
