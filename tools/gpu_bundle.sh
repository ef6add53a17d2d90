#!/usr/bin/env bash
# Stages GPU programs built here for a GPU host that lacks this machine's
# libraries (Abseil, Google Benchmark, yaml-cpp, Boost): copies the programs
# into DEST/bin and the shared libraries they need that are not part of the
# base system, CUDA or MPI into DEST/lib. On the GPU host:
#   LD_LIBRARY_PATH=DEST/lib:<NCCL lib dir> DEST/bin/<program>
# Usage: tools/gpu_bundle.sh BUILD_DIR DEST PROGRAM...
set -euo pipefail
if (($# < 3)); then
  echo "usage: tools/gpu_bundle.sh BUILD_DIR DEST PROGRAM..." >&2
  exit 2
fi
build=$1 dest=$2
shift 2
[[ -d $build ]] || { echo "gpu_bundle: BUILD_DIR '$build' is not a directory" >&2; exit 2; }
# DEST is emptied first: refuse anything that is not a bundle this script
# made (only bin/ and lib/ in it), so that swapped arguments cannot delete
# a source tree or a build folder.
if [[ -e $dest ]]; then
  stray=$(find "$dest" -mindepth 1 -maxdepth 1 ! -name bin ! -name lib -print -quit 2>/dev/null || true)
  if [[ ! -d $dest || -n $stray ]]; then
    echo "gpu_bundle: DEST '$dest' exists and is not a bundle (holds more than bin/ and lib/);" \
      "remove it or name another folder" >&2
    exit 2
  fi
fi
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
