#!/usr/bin/env bash
# Stages GPU programs built here for a GPU host that lacks this machine's
# libraries (Abseil, Google Benchmark, yaml-cpp, Boost): copies the programs
# into DEST/bin and the shared libraries they need that are not part of the
# base system, CUDA or MPI into DEST/lib. On the GPU host:
#   LD_LIBRARY_PATH=DEST/lib:<NCCL lib dir> DEST/bin/<program>
# Usage: tools/gpu_bundle.sh BUILD_DIR DEST PROGRAM...
set -euo pipefail
build=$1 dest=$2
shift 2
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
for program in "$@"; do
  path=$(find "$build" -type f -name "$program" -perm -u+x | head -1)
  [[ -n $path ]] || { echo "gpu_bundle: $program not found under $build" >&2; exit 1; }
  cp "$path" "$dest/bin/"
  ldd "$path" | awk '/=> \// {print $3}' |
    { grep -E 'libabsl_|libbenchmark|libyaml-cpp|libboost_|libmpi_cxx' || true; } | xargs -r -I{} cp -L {} "$dest/lib/"
done
du -sh "$dest"
