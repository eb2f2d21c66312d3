// Reference scaled dot-product attention of one head (Vaswani et al. 2017, eq. 1).
#include "ref/kernels_ref.h"

namespace mt {

void attention_f32_ref(const float* q, size_t q_stride, const float* k, const float* v, size_t kv_stride, float* out,
                       size_t out_stride, int Tq, int Tk, int dh, float scale, int causal_offset, float* scratch) {
  for (int i = 0; i < Tq; ++i) {
    const float* qi = q + size_t(i) * q_stride;
    float* oi = out + size_t(i) * out_stride;
    int keys = Tk;
    if (causal_offset >= 0 && i + causal_offset + 1 < keys) keys = i + causal_offset + 1;
    for (int j = 0; j < keys; ++j) {
      const float* kj = k + size_t(j) * kv_stride;
      float dot = 0.0f;
      for (int d = 0; d < dh; ++d) dot += qi[d] * kj[d];
      scratch[j] = scale * dot;
    }
    softmax_f32_ref(scratch, keys);
    // Zeroed only now, so out may even alias q.
    for (int d = 0; d < dh; ++d) oi[d] = 0.0f;
    for (int j = 0; j < keys; ++j) {
      const float* vj = v + size_t(j) * kv_stride;
      for (int d = 0; d < dh; ++d) oi[d] += scratch[j] * vj[d];
    }
  }
}

}  // namespace mt
