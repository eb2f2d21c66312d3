// AVX2 + FMA3 kernels: instantiates platforms/simd/ for xsimd::fma3<avx2>,
// with the AVX2 int8 kernels (x86/*_avx2.cpp; embed_i8 runs once per token,
// so the reference serves). Compiled with -mavx2 -mfma (platforms/CMakeLists.txt).
#include "ref/kernels_ref.h"
#include "simd/kernel_table.hpp"
#include "x86/int8_x86.h"
#include "x86/kernels_x86.h"

namespace mt {

const KernelTable& avx2_kernels() {
  static const KernelTable table = simd::make_kernel_table<xsimd::fma3<xsimd::avx2>>("avx2", x86::quantize_rows_u8_avx2,
                                                                                     x86::gemm_u8s8_avx2, embed_i8_ref);
  return table;
}

}  // namespace mt
