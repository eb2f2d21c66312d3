// What an int8 GEMM tile needs besides its position: GemmU8S8's arguments
// (mt/kernels.h), gathered once per call by every ISA's intrinsics kernel.
#pragma once

#include <cstring>

#include "mt/kernels.h"

namespace mt::simd {

struct GemmU8S8Args {
  const uint8_t* A;
  size_t lda;
  const int8_t* Wp;
  const int32_t* w_sum;
  const float* w_scale;
  const float* a_scale;
  const int32_t* a_zero;
  const float* bias;
  const float* residual;
  size_t ldr;
  float* C;
  size_t ldc;
  int Kp;  // padded_k_i8(K): the packed weights and Aq rows are zero past K
  int n_end;
  Activation act;
};

// The 4 activations of one k group of a quantized row (k / 4 of
// packed_k4n16) at p, as one 32-bit word to broadcast against a panel row.
inline uint32_t activation_group(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace mt::simd
