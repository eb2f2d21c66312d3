// CUDA failures in the library: runtime errors and failed launchers become a
// Status, never an exception (the C API cannot carry one). The trainer turns
// the same failures into exceptions instead (trainer/cuda/cuda_check.hpp).
#pragma once

#include <cuda_runtime.h>

#include "mt/cuda_kernels.h"
#include "mt/status.hpp"

namespace mt::detail {

inline Status cuda_error(Errc code, const char* what, cudaError_t e) {
  return Status::error(code, "%s: %s", what, cudaGetErrorString(e));
}

}  // namespace mt::detail

// A failed launcher (bad arguments: a libmt bug) returns an internal error
// naming `what` from the enclosing function.
#define MT_CUDA_LAUNCH(expr, what)                                                 \
  do {                                                                             \
    const ::mt::CudaStatus mt_launch_ = (expr);                                    \
    if (mt_launch_ != 0)                                                           \
      return ::mt::Status::error(::mt::Errc::internal, "CUDA %s failed: %s", what, \
                                 ::mt::cuda_status_string(mt_launch_));            \
  } while (0)
