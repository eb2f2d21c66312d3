// Readable names for the statuses the CUDA launchers return.
#include <cuda_runtime.h>

#include "cublas_library.hpp"
#include "mt/cuda_kernels.h"

namespace mt {

const char* cuda_status_string(CudaStatus status) {
  if (status == 0) return "success";
  if (status >= kCublasStatusBase) {
    const cuda_detail::CublasLibrary* cublas = cuda_detail::cublas_library();
    return cublas ? cublas->status_string(cublasStatus_t(status - kCublasStatusBase)) : "cuBLAS error";
  }
  return cudaGetErrorString(cudaError_t(status));
}

}  // namespace mt
