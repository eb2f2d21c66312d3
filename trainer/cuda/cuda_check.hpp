// CUDA runtime and cuBLAS failures inside the device autograd: they throw,
// as the CPU autograd's shape errors do, naming the call that failed (a
// trainer cannot go on after a device fault; tests report the message).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace mt::autograd::gpu {

[[noreturn]] inline void cuda_fail(const char* call, cudaError_t status) {
  throw std::runtime_error(std::string("CUDA: ") + call + " failed: " + cudaGetErrorString(status));
}

}  // namespace mt::autograd::gpu

#define MT_GPU_CHECK(call)                                                                    \
  do {                                                                                        \
    const cudaError_t mt_gpu_status_ = (call);                                                \
    if (mt_gpu_status_ != cudaSuccess) ::mt::autograd::gpu::cuda_fail(#call, mt_gpu_status_); \
  } while (0)

// After a kernel launch: configuration errors surface here, faults later.
#define MT_GPU_LAUNCHED() MT_GPU_CHECK(cudaGetLastError())
