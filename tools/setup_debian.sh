#!/usr/bin/env bash
# Installs what lockstep builds with on Debian 12 (and Ubuntu 22.04+): the
# compiler, CMake, Ninja, Abseil, yaml-cpp, nlohmann-json, GoogleTest/Mock,
# Google Benchmark, Boost.Context, OpenMPI (the hardware runner and the MPI
# baseline) and clang with its libFuzzer runtime. Works as root (containers
# have no sudo) and as a user with sudo. CUDA is optional and not installed
# here: put nvcc on PATH (or /usr/local/cuda/bin) to build the kernels.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    SUDO=sudo
  else
    echo "setup_debian.sh: run as root, or as a user with sudo" >&2
    exit 2
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build clang libclang-rt-14-dev \
  libabsl-dev libyaml-cpp-dev nlohmann-json3-dev \
  libgtest-dev libgmock-dev googletest libbenchmark-dev \
  libboost-context1.81-dev openmpi-bin libopenmpi-dev \
  python3 >/dev/null
echo "setup_debian.sh: packages installed"
