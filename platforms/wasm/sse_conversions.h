// Emscripten 3.1.6 translates _mm_cvtps_epi32 and _mm_cvttps_epi32 to a
// scalar loop of lrint calls (x86's 0x80000000 for out-of-range lanes has no
// SIMD128 equivalent); xsimd's exp, log and tanh convert a vector per call,
// which made log_softmax a fifth of a translation. Included before xsimd
// by the SSE-on-wasm units, this sends both to single SIMD128 instructions.
// Out-of-range and NaN lanes then saturate (NaN -> 0) instead of giving
// 0x80000000: xsimd clamps its arguments before converting.
#pragma once

#include <smmintrin.h>
#include <wasm_simd128.h>

namespace mt::wasm {

inline __m128i cvtps_epi32_simd128(__m128 a) {  // round half to even, as cvtps2dq
  return (__m128i)wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest((v128_t)a));
}
inline __m128i cvttps_epi32_simd128(__m128 a) { return (__m128i)wasm_i32x4_trunc_sat_f32x4((v128_t)a); }

}  // namespace mt::wasm

#define _mm_cvtps_epi32 ::mt::wasm::cvtps_epi32_simd128
#define _mm_cvttps_epi32 ::mt::wasm::cvttps_epi32_simd128
