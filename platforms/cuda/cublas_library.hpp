// cuBLAS opened at run time (dlopen) instead of linked: every program that
// links libmt with CUDA would otherwise load cuBLAS's several hundred MB of
// libraries at start (about 90 ms) even when it never uses a GPU. Only the
// first cuBLAS handle pays that now.
#pragma once

#include <cublas_v2.h>

namespace mt::cuda_detail {

// The few cuBLAS entry points libmt calls (types only from the headers).
struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  // cublasGemmEx as exported (the header adds a C++ overload of the same name).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

// libcublas.so.<the major version built against>, loaded on the first call;
// null when it cannot be opened or lacks a symbol.
const CublasLibrary* cublas_library();

}  // namespace mt::cuda_detail
