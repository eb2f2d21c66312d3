#!/usr/bin/env bash
# Installs libmt's build and test dependencies from Debian 12 packages, the
# aarch64 cross-build's included (scripts/test_aarch64.sh only checks them):
#   scripts/install-deps.sh           what scripts/test.sh and scripts/run.sh need
#   scripts/install-deps.sh --bench   also OpenBLAS and oneDNN, for bench_gemm_peers (scripts/bench.sh)
# Idempotent: packages already present are skipped, apt is only called when
# needed, the arm64 packages are only fetched once. Run in the install step of
# CI, so that no test step downloads anything.
set -euo pipefail
cd "$(dirname "$0")/.."

bench=0
for arg in "$@"; do
  case $arg in
    --bench) bench=1 ;;
    *) echo "usage: scripts/install-deps.sh [--bench]" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config
  libxsimd-dev
  libflatbuffers-dev flatbuffers-compiler
  catch2
  libbenchmark-dev          # bench/ (a default cmake configure builds it: scripts/run.sh)
  libsentencepiece-dev sentencepiece
  gnuplot-nox
  clang libclang-rt-14-dev  # the libFuzzer targets (fuzz/)
  valgrind                  # memcheck of mt_translate (scripts/valgrind.sh)
  libopenmpi-dev openmpi-bin  # data-parallel mt_train under mpirun (trainer/distributed/)
  emscripten                # the WebAssembly build, run by Node.js (scripts/test_wasm.sh)
  g++-aarch64-linux-gnu qemu-user-static  # the aarch64 cross-build, run under qemu (scripts/test_aarch64.sh)
  # The Python package (python/, scripts/test_python.sh): venv and pip build it
  # (scikit-build-core and pybind11 come from PyPI into pip's build
  # environment); its tests run on Debian's pytest and numpy.
  python3-dev python3-venv python3-pip python3-build python3-pytest python3-numpy pybind11-dev python3-pybind11
)
# bench_gemm_peers only (GEMM against OpenBLAS and oneDNN): nothing CI builds needs them.
[ $bench = 0 ] || packages+=(libopenblas-dev libdnnl-dev)

# SentencePiece and FlatBuffers for arm64, unpacked (not installed: the arm64
# SentencePiece package would remove the host's, they are not co-installable)
# in the folder scripts/test_aarch64.sh passes to the cross-build.
arm64_dir=build-aarch64-deps
arm64_packages=(libsentencepiece0:arm64 libsentencepiece-dev:arm64 libflatbuffers2:arm64 libflatbuffers-dev:arm64)

fail() {  # fail WHAT WHAT_TO_DO
  echo "install-deps: FAILED: $1" >&2
  echo "install-deps: $2" >&2
  exit 1
}
retry="check the network and the apt sources (/etc/apt/sources.list*), then run scripts/install-deps.sh again"

# NCCL's header and library for data-parallel training on GPUs, when nvcc is
# here: Debian has no NCCL package; PyPI's wheel for this CUDA major version
# does (2.32.3 for CUDA 13), unpacked into build-deps/nccl/ (the build finds
# it there; mt_train opens libnccl.so.2 at run time and runs without it).
nccl_version=2.32.3
nccl_dir=build-deps/nccl
fetch_nccl() {
  local nvcc cuda_major wheel_dir
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || return 0
  [ -f "$nccl_dir/.complete-$nccl_version" ] && return 0
  cuda_major=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  [ "$cuda_major" = 13 ] || { echo "install-deps: CUDA $cuda_major: no NCCL wheel pinned for it, data-parallel GPU training left out"; return 0; }
  echo "install-deps: fetching NCCL $nccl_version (PyPI nvidia-nccl-cu13) into $nccl_dir/"
  wheel_dir=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$wheel_dir" "nvidia-nccl-cu13==$nccl_version" ||
    fail "pip download nvidia-nccl-cu13==$nccl_version" "check the network and pip's index (PyPI), then run scripts/install-deps.sh again"
  rm -rf "$nccl_dir.tmp"
  mkdir -p "$nccl_dir.tmp"
  python3 - "$wheel_dir"/nvidia_nccl_cu13-*.whl "$nccl_dir.tmp" "$nccl_version" <<'PY' || fail "unpacking the NCCL wheel" "remove $nccl_dir.tmp/ and run scripts/install-deps.sh again"
import pathlib, sys, zipfile
wheel, out, version = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    for name in ("nvidia/nccl/include/nccl.h", "nvidia/nccl/lib/libnccl.so.2",
                 f"nvidia_nccl_cu13-{version}.dist-info/licenses/License.txt"):
        target = out / ("include" if name.endswith(".h") else "lib" if ".so" in name else ".") / pathlib.Path(name).name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(z.read(name))
PY
  rm -rf "$wheel_dir"
  touch "$nccl_dir.tmp/.complete-$nccl_version"
  rm -rf "$nccl_dir"
  mv "$nccl_dir.tmp" "$nccl_dir"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The stamp is written last: an interrupted unpack is redone, not trusted.
need_arm64=0
[ -f "$arm64_dir/.complete" ] || need_arm64=1

if [ ${#missing[@]} -eq 0 ] && [ $need_arm64 = 0 ]; then
  fetch_nccl
  echo "install-deps: all ${#packages[@]} packages present, arm64 packages in $arm64_dir/"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
need_update=0
[ ${#missing[@]} -eq 0 ] || need_update=1
if [ $need_arm64 = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install-deps: adding the arm64 architecture to dpkg (for apt-get download of arm64 packages)"
  "${sudo_cmd[@]}" dpkg --add-architecture arm64 ||
    fail "dpkg --add-architecture arm64" "run it as root (or with sudo), then run scripts/install-deps.sh again"
  need_update=1
fi
if [ $need_update = 1 ]; then
  "${sudo_cmd[@]}" apt-get update -qq || fail "apt-get update" "$retry"
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    fail "apt-get install ${missing[*]}" "$retry"
fi
if [ $need_arm64 = 1 ]; then
  echo "install-deps: fetching ${arm64_packages[*]} into $arm64_dir/"
  rm -rf "$arm64_dir.tmp"
  mkdir -p "$arm64_dir.tmp/debs"
  (cd "$arm64_dir.tmp/debs" && apt-get download -q "${arm64_packages[@]}") ||
    fail "apt-get download ${arm64_packages[*]}" \
         "arm64 must be a dpkg architecture (dpkg --print-foreign-architectures) with its package lists fetched (apt-get update); $retry"
  for deb in "$arm64_dir.tmp"/debs/*.deb; do
    dpkg-deb -x "$deb" "$arm64_dir.tmp" || fail "dpkg-deb -x $deb" "remove $arm64_dir.tmp/ and run scripts/install-deps.sh again"
  done
  touch "$arm64_dir.tmp/.complete"
  rm -rf "$arm64_dir"
  mv "$arm64_dir.tmp" "$arm64_dir"
fi
fetch_nccl
echo "install-deps: done"
