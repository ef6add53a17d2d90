#!/usr/bin/env bash
# Installs what lockstep builds with on Debian 12 (and Ubuntu 22.04+): the
# compiler, CMake, Ninja, Abseil, yaml-cpp, nlohmann-json, GoogleTest/Mock,
# Google Benchmark, Boost.Context, OpenMPI (the hardware runner and the MPI
# baseline), clang with its libFuzzer runtime, and Python's headers and venv
# module; then .venv with nanobind and pytest for the Python extension
# (tools/python_venv.sh, as the calling user; LOCKSTEP_SKIP_PYTHON_VENV=1 skips
# it). Works as root (containers have no sudo) and as a user with sudo. CUDA is optional and not installed
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
  python3 python3-dev python3-venv >/dev/null
echo "setup_debian.sh: packages installed"
if [ "${LOCKSTEP_SKIP_PYTHON_VENV:-0}" != 1 ]; then
  # Not through sudo: the venv belongs to whoever builds. A machine without
  # the package index still builds everything else (the extension is skipped).
  "$(dirname "$0")/python_venv.sh" ||
    echo "setup_debian.sh: .venv not ready (no package index?); the Python extension will be skipped" >&2
fi
