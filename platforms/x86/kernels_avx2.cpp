// AVX2 + FMA3 kernels: instantiates platforms/simd/ for xsimd::fma3<avx2>.
// Compiled with -mavx2 -mfma (platforms/CMakeLists.txt).
#include "simd/kernel_table.hpp"
#include "x86/kernels_x86.h"

namespace mt {

const KernelTable& avx2_kernels() {
  static const KernelTable table = simd::make_kernel_table<xsimd::fma3<xsimd::avx2>>("avx2");
  return table;
}

}  // namespace mt
