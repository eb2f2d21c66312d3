// Reference int8 GEMM: exact int32 dot products of u8 activations and s8
// packed_k4n16 weights, then the float epilogue of mt/kernels.h in its fixed
// order. Compiled with -ffp-contract=off (platforms/CMakeLists.txt), and each
// float operation is its own statement, so no step is fused into an fma.
#include "ref/kernels_ref.h"

namespace mt {

void gemm_u8s8_ref(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                   const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                   float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act) {
  const int Kp = padded_k_i8(K);
  for (int m = 0; m < M; ++m) {
    const uint8_t* a = Aq + size_t(m) * lda;
    for (int n = n_begin; n < n_end; ++n) {
      const int8_t* w = Wp + packed_offset_i8(K, n, 0);
      int32_t acc = 0;
      // k % 4 and k / 4 of packed_offset_i8, walked directly.
      for (int k = 0; k < Kp; ++k) acc += int32_t(a[k]) * int32_t(w[(k / 4) * 64 + k % 4]);
      const int32_t centred = a_zero ? acc - a_zero[m] * w_sum[n] : acc;
      const float s = a_scale[m] * w_scale[n];
      float x = float(centred) * s;
      if (bias) x = x + bias[n];
      if (act == Activation::relu) x = x > 0.0f ? x : 0.0f;
      if (act == Activation::gelu) x = gelu_f32_ref(x);
      if (act == Activation::swish) x = swish_f32_ref(x);
      // Read the residual before writing C: they may alias.
      if (residual) x = x + residual[size_t(m) * ldr + n];
      C[size_t(m) * ldc + n] = x;
    }
  }
}

}  // namespace mt
