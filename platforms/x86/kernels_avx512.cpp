// AVX-512 kernels: instantiates platforms/simd/ for xsimd::avx512bw, with the
// AVX-512BW int8 kernels (x86/*_avx512.cpp; embed_i8 is the reference).
// Compiled with -mavx512f/cd/bw/dq/vl (platforms/CMakeLists.txt).

// GCC 12 warns inside its own avx512fintrin.h when xsimd's exp/log/sqrt are
// inlined (GCC bug 105593, _mm512_undefined_ps); fixed in GCC 13.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include "ref/kernels_ref.h"
#include "simd/kernel_table.hpp"
#include "x86/int8_x86.h"
#include "x86/kernels_x86.h"

namespace mt {

const KernelTable& avx512_kernels() {
  static const KernelTable table = simd::make_kernel_table<xsimd::avx512bw>("avx512", x86::quantize_rows_u8_avx512,
                                                                            x86::gemm_u8s8_avx512, embed_i8_ref);
  return table;
}

}  // namespace mt
