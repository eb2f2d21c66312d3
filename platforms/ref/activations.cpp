// swish (SiLU), x * sigmoid(x) = x / (1 + e^-x), with our own e^x so every
// kernel table and the GPU compute the same bits: each step below is one
// IEEE float operation, repeated one for one by simd::swish_f32 and the CUDA
// epilogue (compiled with -ffp-contract=off: no step becomes an fma).
//
// e^x = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2 split in
// two so r is exact to float precision), e^r by the minimax polynomial of
// Cephes' expf (Moshier 1984): 1-2 ulp over [-87, 88], where x is clamped
// (swish is x beyond it, or -0). n is rounded by adding 1.5 * 2^23, whose
// low mantissa bits then hold it; 2^n is built in the exponent bits.
#include <cstdint>
#include <cstring>

#include "ref/kernels_ref.h"

namespace mt {

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

float exp_f32_ref(float x) {
  x = x < kExpF32Min ? kExpF32Min : x;  // NaN stays NaN: both comparisons are false
  x = x > kExpF32Max ? kExpF32Max : x;
  const float shifted = x * kLog2E + kRoundShift;
  const float n = shifted - kRoundShift;
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kExpP0;
  p = p * r + kExpP1;
  p = p * r + kExpP2;
  p = p * r + kExpP3;
  p = p * r + kExpP4;
  p = p * r + kExpP5;
  const float y = p * (r * r) + r + 1.0f;
  // n in [-126, 127]: the exponent field of 2^n is n + 127.
  const uint32_t n_bits = to_bits(shifted) - to_bits(kRoundShift);
  return y * from_bits((n_bits + 127u) << 23);
}

float swish_f32_ref(float x) { return x / (1.0f + exp_f32_ref(-x)); }

}  // namespace mt
