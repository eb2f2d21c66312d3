// The reference KernelTable.
#include "ref/kernels_ref.h"

namespace mt {

const KernelTable& reference_kernels() {
  static const KernelTable table{"ref",
                                 gemm_f32_ref,
                                 layer_norm_f32_ref,
                                 softmax_f32_ref,
                                 log_softmax_f32_ref,
                                 argmax_f32_ref,
                                 top_k_f32_ref,
                                 embed_f32_ref,
                                 attention_f32_ref,
                                 quantize_rows_u8_ref,
                                 gemm_u8s8_ref,
                                 embed_i8_ref};
  return table;
}

}  // namespace mt
