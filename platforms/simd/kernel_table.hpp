// The KernelTable of one ISA: every xsimd kernel instantiated for Arch.
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
KernelTable make_kernel_table(const char* isa) {
  return KernelTable{isa,
                     &gemm_f32<Arch>,
                     &layer_norm_f32<Arch>,
                     &softmax_f32<Arch>,
                     &log_softmax_f32<Arch>,
                     &argmax_f32<Arch>,
                     &embed_f32<Arch>,
                     &attention_f32<Arch>};
}

}  // namespace mt::simd
