// The reference KernelTable.
#include "ref/kernels_ref.h"

namespace mt {

const KernelTable& reference_kernels() {
  static const KernelTable table{.isa = "ref",
                                 .gemm_f32 = gemm_f32_ref,
                                 .layer_norm_f32 = layer_norm_f32_ref,
                                 .softmax_f32 = softmax_f32_ref,
                                 .log_softmax_f32 = log_softmax_f32_ref,
                                 .argmax_f32 = argmax_f32_ref,
                                 .top_k_f32 = top_k_f32_ref,
                                 .log_sum_exp_f32 = log_sum_exp_f32_ref,
                                 .log_softmax_top_k_f32 = log_softmax_top_k_f32_ref,
                                 .scaled_exp_f32 = scaled_exp_f32_ref,
                                 .embed_f32 = embed_f32_ref,
                                 .attention_f32 = attention_f32_ref,
                                 .quantize_rows_u8 = quantize_rows_u8_ref,
                                 .gemm_u8s8 = gemm_u8s8_ref,
                                 .embed_i8 = embed_i8_ref};
  return table;
}

}  // namespace mt
