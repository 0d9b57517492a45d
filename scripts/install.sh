#!/usr/bin/env bash
# Install ucs into the active Python environment.
#   bash scripts/install.sh          core package only
#   bash scripts/install.sh dev      everything the test-suite needs
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-core}"
case "$profile" in
  core) python -m pip install --quiet -e . ;;
  dev)  python -m pip install --quiet -c .ci/constraints.txt -e ".[dev,fast,plot]" ;;
  *) echo "unknown profile '$profile' (use: core, dev)" >&2; exit 2 ;;
esac
