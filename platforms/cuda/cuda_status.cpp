// Readable names for the statuses the CUDA launchers return.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "mt/cuda_kernels.h"

namespace mt {

const char* cuda_status_string(CudaStatus status) {
  if (status == 0) return "success";
  if (status >= kCublasStatusBase) return cublasGetStatusString(cublasStatus_t(status - kCublasStatusBase));
  return cudaGetErrorString(cudaError_t(status));
}

}  // namespace mt
