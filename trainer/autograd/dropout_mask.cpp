// dropout_mask_f32's definition and the choice of implementation.
#include "autograd/dropout_mask.hpp"

#include <string_view>

#include "autograd/dropout_mask_scalar.hpp"
#include "mt/kernels.h"

namespace mt::autograd {

void dropout_mask_f32_scalar(const float* x, float* y, float* mask, int64_t begin, int64_t end, uint64_t key,
                             uint64_t threshold, float keep_scale) {
  dropout_mask_scalar(x, y, mask, begin, end, key, threshold, keep_scale);
}

DropoutMaskF32 dropout_mask_f32_for(const KernelTable& kernels) {
#if MT_AUTOGRAD_HAS_AVX512
  if (std::string_view(kernels.isa).starts_with("avx512")) return &dropout_mask_f32_avx512;
#else
  (void)kernels;
#endif
  return &dropout_mask_f32_scalar;
}

}  // namespace mt::autograd
