#!/usr/bin/env bash
# Creates .venv at the repository root with what the Python extension and its
# tests need (python/requirements-dev.txt: nanobind, scikit-build-core,
# pytest). A virtual environment because Debian 12's Python is "externally
# managed" (PEP 668): pip may not install into it, and a venv needs neither
# root nor --break-system-packages. Run as the user who builds (not through
# sudo); CMake finds .venv by itself (cmake/LockstepPython.cmake). Needs the
# python3-venv and python3-dev packages (tools/setup_debian.sh) and the
# package index; without them the build skips the extension and says why.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${LOCKSTEP_PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=python3
if [ ! -x .venv/bin/python3 ]; then
  "$python" -m venv .venv
fi
.venv/bin/python3 -m pip install -q --disable-pip-version-check -r python/requirements-dev.txt
echo "python_venv.sh: .venv ready ($(.venv/bin/python3 --version); $(.venv/bin/python3 -m pip list --disable-pip-version-check 2>/dev/null | grep -iE '^(nanobind|pytest|scikit.build.core) ' | tr -s ' ' | paste -sd, -))"
