# Per-function instruction difference of two callgrind outputs (flat, self
# cost), largest first: python3 profile_diff.py BASE.out NEW.out [N]
import re,subprocess,sys
def prof(f):
    out=subprocess.run(['callgrind_annotate',f],capture_output=True,text=True).stdout
    d={}
    for l in out.splitlines():
        m=re.match(r'\s*([\d,]+) \([\s\d.]+%\)\s+\?\?\?:(.*?) \[',l)
        if m:
            name=re.sub(r'\(.*','',m.group(2)).replace('lockstep::','').replace('(anonymous namespace)::','')
            d[name]=d.get(name,0)+int(m.group(1).replace(',',''))
    return d
A=prof(sys.argv[1]);B=prof(sys.argv[2])
keys=set(A)|set(B)
for k in sorted(keys,key=lambda k: -abs(B.get(k,0)-A.get(k,0)))[:int(sys.argv[3]) if len(sys.argv)>3 else 20]:
    print(f"{(B.get(k,0)-A.get(k,0))/1e6:8.1f}M  base {A.get(k,0)/1e6:6.1f}  new {B.get(k,0)/1e6:6.1f}  {k[:90]}")
