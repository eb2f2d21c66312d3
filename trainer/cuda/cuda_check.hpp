// CUDA failures in the trainer: they throw, as the CPU autograd's shape
// errors do, naming the call that failed (a trainer cannot go on after a
// device fault; tests report the message). The library reports the same
// failures as a Status instead (lib/src/cuda/cuda_errors.hpp): it never
// throws across its C API. Kernels themselves (platforms/cuda) only return
// a CudaStatus; each caller converts it by its own layer's rule.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace mt::autograd::gpu {

// "CUDA: <call> failed: <reason>", for the runtime's and cuBLAS's errors alike.
[[noreturn]] inline void device_fail(const char* call, const char* reason) {
  throw std::runtime_error(std::string("CUDA: ") + call + " failed: " + reason);
}

}  // namespace mt::autograd::gpu

#define MT_GPU_CHECK(call)                                                                                          \
  do {                                                                                                              \
    const cudaError_t mt_gpu_status_ = (call);                                                                      \
    if (mt_gpu_status_ != cudaSuccess) ::mt::autograd::gpu::device_fail(#call, cudaGetErrorString(mt_gpu_status_)); \
  } while (0)

// After a kernel launch: configuration errors surface here, faults later.
#define MT_GPU_LAUNCHED() MT_GPU_CHECK(cudaGetLastError())
