// The KernelTable of one ISA: every xsimd kernel instantiated for Arch, plus
// the int8 kernels, which are written with intrinsics (xsimd 8.1 has no VNNI)
// and passed in by the per-ISA translation unit.
// Included only by the per-ISA translation units (platforms/x86/, platforms/arm/).
#pragma once

#include "mt/kernels.h"
#include "simd/attention.hpp"
#include "simd/embed.hpp"
#include "simd/gemm.hpp"
#include "simd/layer_norm.hpp"
#include "simd/softmax.hpp"

namespace mt::simd {

template <class Arch>
KernelTable make_kernel_table(const char* isa, QuantizeRowsU8 quantize_rows_u8, GemmU8S8 gemm_u8s8, EmbedI8 embed_i8) {
  return KernelTable{.isa = isa,
                     .gemm_f32 = &gemm_f32<Arch>,
                     .layer_norm_f32 = &layer_norm_f32<Arch>,
                     .softmax_f32 = &softmax_f32<Arch>,
                     .log_softmax_f32 = &log_softmax_f32<Arch>,
                     .argmax_f32 = &argmax_f32<Arch>,
                     .top_k_f32 = &top_k_f32<Arch>,
                     .log_sum_exp_f32 = &log_sum_exp_f32<Arch>,
                     .log_softmax_top_k_f32 = &log_softmax_top_k_f32<Arch>,
                     .scaled_exp_f32 = &scaled_exp_f32<Arch>,
                     .embed_f32 = &embed_f32<Arch>,
                     .attention_f32 = &attention_f32<Arch>,
                     .quantize_rows_u8 = quantize_rows_u8,
                     .gemm_u8s8 = gemm_u8s8,
                     .embed_i8 = embed_i8};
}

}  // namespace mt::simd
