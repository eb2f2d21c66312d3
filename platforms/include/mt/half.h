// IEEE 754 binary16 ("half") conversions on the host, for the GPU's fp16
// weights (uploaded as half bits) and for the tests' references. The GPU
// converts activations with __float2half_rn; these give the same bits.
#pragma once

#include <cstdint>
#include <cstring>

namespace mt {

namespace half_detail {
// A value's bytes as another type's (Emscripten's libc++ has no bit_cast).
template <class To, class From>
inline To bits_as(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}
}  // namespace half_detail

// float -> half bits, rounded to nearest, ties to even. Values at or above
// 65520 in magnitude become infinities (65504 is the largest half), values
// at or below 2^-25 zeros of their sign; a NaN stays a quiet NaN with the
// top of its payload.
inline uint16_t f32_to_f16_bits(float value) {
  const uint32_t x = half_detail::bits_as<uint32_t>(value);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // 65520: ties to even, up to 2^16
  uint32_t kept, dropped, half_way;
  if (magnitude >= 0x38800000u) {  // 2^-14 and above: a normal half
    // Rebias the exponent (127 -> 15) and keep 10 of the 23 mantissa bits;
    // a carry out of the mantissa moves the exponent on, as it should.
    kept = (magnitude - 0x38000000u) >> 13;
    dropped = magnitude & 0x1fffu;
    half_way = 0x1000u;
  } else {
    // A subnormal half: the value in units of 2^-24. The float's mantissa
    // (implicit bit set) times 2^(exponent - 150 + 24).
    const uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return sign;  // below 2^-25: rounds to zero
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14 ... 24
    kept = mantissa >> shift;
    dropped = mantissa & ((1u << shift) - 1);
    half_way = 1u << (shift - 1);
  }
  if (dropped > half_way || (dropped == half_way && (kept & 1u))) ++kept;
  return uint16_t(sign | kept);
}

// half bits -> float: exact.
inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return half_detail::bits_as<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24, exact in float
    const float magnitude = float(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return half_detail::bits_as<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// A float rounded to the nearest half, as a float.
inline float round_to_f16(float value) { return f16_bits_to_f32(f32_to_f16_bits(value)); }

}  // namespace mt
