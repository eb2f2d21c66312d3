#!/usr/bin/env bash
# The Google Benchmark programs (bench/), outside CI: installs their packages
# (scripts/install-deps.sh --bench: OpenBLAS and oneDNN for bench_gemm_peers),
# configures build-bench with the benchmarks on and builds it.
#   scripts/bench.sh                        build all of them and list them
#   scripts/bench.sh NAME [ARGS...]         build only NAME and run it with ARGS, e.g.
#   scripts/bench.sh bench_kernels --benchmark_filter=gemm
#   scripts/bench.sh bench_translate --benchmark_filter='translate|load' --benchmark_min_time=0.5
# docs/performance.md and bench/results/ say what each measures.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
build="build-bench"

./scripts/install-deps.sh --bench
# Release, as the results in docs/ and bench/results/ were measured; no tests.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMT_BUILD_BENCHMARKS=ON -DMT_BUILD_TESTS=OFF > /dev/null
if [ $# -eq 0 ]; then
  cmake --build "$build" -j"${MT_JOBS:-2}"
  echo "bench: the benchmark programs in $build/bench/ (scripts/bench.sh NAME [ARGS...] runs one):"
  find "$build/bench" -maxdepth 1 -type f -executable -name 'bench_*' -printf '  %f\n' | sort
  exit 0
fi
name=$1
shift
cmake --build "$build" -j"${MT_JOBS:-2}" --target "$name"
[ -x "$build/bench/$name" ] || { echo "bench: $name is not a program in $build/bench/ (scripts/bench.sh lists them)" >&2; exit 1; }
exec "$build/bench/$name" "$@"
