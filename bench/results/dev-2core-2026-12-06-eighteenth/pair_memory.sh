# What a member pair of a fused workspace costs in memory, run from the
# repository root:
#   BIN=<build-bench/bin> bash pair_memory.sh
# 2 304 ranks as 72-wide TP groups (32 pipeline stages) and as 8-wide ones
# (288 stages): the difference in maximum RSS over the difference in member
# pairs, 32 * 72^2 - 288 * 8^2 = 147 456, is the bytes a pair costs. One
# token per call runs one-shot, 4 096 two-shot.
set -eu
BIN=${BIN:-$PWD/build-bench/bin}
dir=$(mktemp -d)
for tp in 72 8; do
  pp=$((2304 / tp))
  for tok in 1 4096; do
    cat > "$dir/tp${tp}_tok${tok}.yaml" <<YAML
version: 1
name: pairs-tp${tp}-tok${tok}
hardware: {name: big, sm: 100, gpus_per_node: 72, nodes_per_domain: 1, max_gpus: 65536, nvlink: true,
           hops: {intra_node: {latency_us: 1, bandwidth_gbps: 100}}}
parallel: {tp: ${tp}, pp: ${pp}}
model: {name: dense-wide, hidden: 8192, layers: ${pp}}
dispatch: {fused_backend: true, max_tokens: 4096}
workload: {steps: 1, tokens: [${tok}], layers: ${pp}}
YAML
  done
done
rss() { /usr/bin/time -f %M "$BIN/lockstep" sim "$dir/$1.yaml" --catalogue topologies 2>&1 >/dev/null | tail -1; }
for tok in 1 4096; do
  wide=$(rss tp72_tok$tok)
  narrow=$(rss tp8_tok$tok)
  echo "tokens $tok: tp72 ${wide} KiB, tp8 ${narrow} KiB, $(( (wide - narrow) * 1024 / 147456 )) bytes a pair"
done
rm -rf "$dir"
