#!/bin/bash
# Runs the CUDA kernel tests on a machine with a GPU and says what it ran on.
#   tests/cuda/run_on_gpu.sh BUILD_DIR [catch2 options...]
#   tests/cuda/run_on_gpu.sh path/to/test_cuda_kernels [catch2 options...]
# Exit status: the test binary's (0 when every case passed), 2 when it is missing.
set -u
target=${1:-build-cuda}
shift || true
if [ -f "$target" ]; then
  bin=$target
else
  bin=$target/tests/test_cuda_kernels
fi
if [ ! -x "$bin" ]; then
  echo "run_on_gpu.sh: no test_cuda_kernels at $bin (build it: cmake --build BUILD_DIR --target test_cuda_kernels)" >&2
  exit 2
fi

echo "== GPUs"
nvidia-smi -L 2>&1 || echo "(nvidia-smi not available)"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv 2>/dev/null
echo "== shared libraries of $bin"
ldd "$bin" 2>&1
if ldd "$bin" 2>&1 | grep -q "not found"; then
  echo "run_on_gpu.sh: missing libraries above (libcublas.so.13 lives in the CUDA toolkit's lib64; set LD_LIBRARY_PATH)" >&2
fi
echo "== tests"
# Catch2 prints each case's duration and the device line (a WARN); failures
# name the kernel, sizes, the worst element and how far off it is.
# MT_REQUIRE_CUDA_DEVICE: here a missing device is a failure, not a skip.
MT_REQUIRE_CUDA_DEVICE=1 "$bin" --durations yes "$@"
status=$?
echo "== test_cuda_kernels exit status: $status"
exit $status
