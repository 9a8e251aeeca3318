#!/usr/bin/env bash
# Create .venv in the repository root and install outcomes with its dev/test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
echo "outcomes installed: $(.venv/bin/outcomes --version)"
