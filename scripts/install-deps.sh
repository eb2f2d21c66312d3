#!/usr/bin/env bash
# Installs libmt's build and test dependencies from Debian 12 packages.
# Idempotent: packages already present are skipped, apt is only called when needed.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libxsimd-dev
  libflatbuffers-dev flatbuffers-compiler
  catch2
  libbenchmark-dev
  libsentencepiece-dev sentencepiece
  gnuplot-nox
  clang libclang-rt-14-dev  # the libFuzzer targets (fuzz/)
  valgrind                  # memcheck of mt_translate (scripts/valgrind.sh)
  emscripten                # the WebAssembly build, run by Node.js (scripts/test_wasm.sh)
  libopenblas-dev libdnnl-dev  # bench_gemm_peers only (GEMM against OpenBLAS and oneDNN)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
