// Reference GEMM on packed weights: one dot product per output element,
// accumulated in float in increasing k, then bias, activation, residual.
#include <cmath>

#include "ref/kernels_ref.h"

namespace mt {

float gelu_f32_ref(float x) { return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f))); }

void gemm_f32_ref(const float* A, size_t lda, const float* Wp, const float* bias, const float* residual, size_t ldr,
                  float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act) {
  for (int m = 0; m < M; ++m) {
    const float* a = A + size_t(m) * lda;
    for (int n = n_begin; n < n_end; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += a[k] * packed_at(Wp, K, n, k);
      if (bias) acc += bias[n];
      if (act == Activation::relu) acc = acc > 0.0f ? acc : 0.0f;
      if (act == Activation::gelu) acc = gelu_f32_ref(acc);
      if (act == Activation::swish) acc = swish_f32_ref(acc);
      // Read the residual before writing C: they may alias.
      if (residual) acc += residual[size_t(m) * ldr + n];
      C[size_t(m) * ldc + n] = acc;
    }
  }
}

}  // namespace mt
