#!/bin/bash
# Runs the CUDA tests on a machine with a GPU and says what it ran on: the
# kernels (test_cuda_kernels), the trainer's GPU autograd against the CPU one
# (test_cuda_trainer, when the trainer is built) and CUDA sessions against CPU ones
# (test_cuda_runtime, which reads models/ and tests/data/ from $MT_SOURCE_DIR,
# the tree it was built from, or the working directory: run it from the
# repository root).
#   tests/cuda/run_on_gpu.sh BUILD_DIR [catch2 options...]      every binary
#   tests/cuda/run_on_gpu.sh path/to/test_binary [catch2 options...]
# Exit status: 0 when every case of every binary passed, 2 when one is
# missing, else the first failing binary's status.
set -u
target=${1:-build-cuda}
shift || true
if [ -f "$target" ]; then
  bins=("$target")
else
  bins=("$target/tests/test_cuda_kernels" "$target/tests/test_cuda_runtime")
  [ -e "$target/tests/test_cuda_trainer" ] && bins+=("$target/tests/test_cuda_trainer")
fi
for bin in "${bins[@]}"; do
  if [ ! -x "$bin" ]; then
    echo "run_on_gpu.sh: no test binary at $bin (build it: cmake --build BUILD_DIR --target $(basename "$bin"))" >&2
    exit 2
  fi
done

echo "== GPUs"
nvidia-smi -L 2>&1 || echo "(nvidia-smi not available)"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv 2>/dev/null
result=0
for bin in "${bins[@]}"; do
  echo "== shared libraries of $bin"
  ldd "$bin" 2>&1
  if ldd "$bin" 2>&1 | grep -q "not found"; then
    echo "run_on_gpu.sh: missing libraries above (libcublas.so.13 lives in the CUDA toolkit's lib64; set LD_LIBRARY_PATH)" >&2
  fi
  echo "== tests of $bin"
  # Catch2 prints each case's duration and the device line (a WARN); failures
  # name the kernel or session, sizes, the worst element and how far off it is.
  # MT_REQUIRE_CUDA_DEVICE: here a missing device is a failure, not a skip.
  MT_REQUIRE_CUDA_DEVICE=1 "$bin" --durations yes "$@"
  status=$?
  echo "== $(basename "$bin") exit status: $status"
  if [ $status -ne 0 ] && [ $result -eq 0 ]; then result=$status; fi
done
exit $result
