#!/usr/bin/env bash
# Print the path of a CPython X.Y interpreter on this machine, or say how to get one (exit 2).
#
#   bash scripts/find_python.sh 3.13
#
# Looks for pythonX.Y on PATH (a pyenv shim counts only when it runs), then in pyenv's versions folder, then in
# /usr/bin and /usr/local/bin. .ci/run uses it to run README command 1 on the oldest and newest supported CPython.
set -euo pipefail
version="${1:?usage: find_python.sh X.Y}"
works() { [ -x "$1" ] && "$1" -c "import sys, venv; sys.exit(sys.version_info[:2] != tuple(map(int, '$version'.split('.'))))" 2>/dev/null; }
candidates=()
if command -v "python$version" >/dev/null 2>&1; then candidates+=("$(command -v "python$version")"); fi
root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
for dir in "$root"/versions/"$version".*/bin; do candidates+=("$dir/python$version"); done
candidates+=("/usr/local/bin/python$version" "/usr/bin/python$version")
for candidate in "${candidates[@]}"; do
  if works "$candidate"; then
    # a pyenv shim resolves to the real interpreter
    "$candidate" -c 'import sys; print(sys.executable)'
    exit 0
  fi
done
echo "find_python.sh: no CPython $version with venv on this machine; install one (e.g. 'pyenv install $version'," \
     "or your distribution's python$version and python$version-venv packages)" >&2
exit 2
