// Token embedding times a scale plus positional encoding, one block per token.
// The arithmetic uses the _rn intrinsics so nvcc cannot contract it into fmas:
// the steps of embed_f32_ref / embed_i8_ref, rounded the same way, give the
// same bits (an fp16 table: those of embed_f32_ref on the table widened).
#include <cuda_fp16.h>

#include "device_common.cuh"

namespace mt {
namespace {

constexpr int kThreads = 128;

__device__ inline const float* position_row(const float* pos_table, const int32_t* positions, int position, int m,
                                            int C) {
  if (pos_table == nullptr) return nullptr;
  return pos_table + size_t(positions ? positions[m] : position) * C;
}

__global__ void embed_f32_kernel(const float* table, int C, const int32_t* ids, float scale, const float* pos_table,
                                 const int32_t* positions, int position, float* y) {
  const int m = blockIdx.x;
  const float* row = table + size_t(ids[m]) * C;
  const float* pe = position_row(pos_table, positions, position, m, C);
  float* out = y + size_t(m) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float e = __fmul_rn(row[c], scale);
    out[c] = pe ? __fadd_rn(e, pe[c]) : e;
  }
}

__global__ void embed_i8_kernel(const int8_t* table, const float* row_scales, int C, const int32_t* ids, float scale,
                                const float* pos_table, const int32_t* positions, int position, float* y) {
  const int m = blockIdx.x;
  const int id = ids[m];
  const int8_t* row = table + size_t(id) * C;
  const float row_scale = row_scales[id];
  const float* pe = position_row(pos_table, positions, position, m, C);
  float* out = y + size_t(m) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float e = __fmul_rn(__fmul_rn(float(row[c]), row_scale), scale);
    out[c] = pe ? __fadd_rn(e, pe[c]) : e;
  }
}

__global__ void embed_f16_kernel(const uint16_t* table, int C, const int32_t* ids, float scale, const float* pos_table,
                                 const int32_t* positions, int position, float* y) {
  const int m = blockIdx.x;
  const uint16_t* row = table + size_t(ids[m]) * C;
  const float* pe = position_row(pos_table, positions, position, m, C);
  float* out = y + size_t(m) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float e = __fmul_rn(__half2float(__ushort_as_half(row[c])), scale);
    out[c] = pe ? __fadd_rn(e, pe[c]) : e;
  }
}

}  // namespace

CudaStatus embed_f32_cuda(const float* table, int C, const int32_t* ids, int M, float scale, const float* pos_table,
                          const int32_t* positions, int position, float* y, CudaStream stream) {
  if (C < 0 || M < 0) return cuda_detail::kInvalidArgument;
  if (C == 0 || M == 0) return 0;
  embed_f32_kernel<<<M, kThreads, 0, stream>>>(table, C, ids, scale, pos_table, positions, position, y);
  return cuda_detail::launch_status();
}

CudaStatus embed_i8_cuda(const int8_t* table, const float* row_scales, int C, const int32_t* ids, int M, float scale,
                         const float* pos_table, const int32_t* positions, int position, float* y, CudaStream stream) {
  if (C < 0 || M < 0) return cuda_detail::kInvalidArgument;
  if (C == 0 || M == 0) return 0;
  embed_i8_kernel<<<M, kThreads, 0, stream>>>(table, row_scales, C, ids, scale, pos_table, positions, position, y);
  return cuda_detail::launch_status();
}

CudaStatus embed_f16_cuda(const uint16_t* table, int C, const int32_t* ids, int M, float scale, const float* pos_table,
                          const int32_t* positions, int position, float* y, CudaStream stream) {
  if (C < 0 || M < 0) return cuda_detail::kInvalidArgument;
  if (C == 0 || M == 0) return 0;
  embed_f16_kernel<<<M, kThreads, 0, stream>>>(table, C, ids, scale, pos_table, positions, position, y);
  return cuda_detail::launch_status();
}

}  // namespace mt
