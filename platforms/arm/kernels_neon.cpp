// NEON kernels (aarch64, where NEON is always present): instantiates
// platforms/simd/ for xsimd::neon64. The int8 kernels are the references
// until the dot-product ones land.
#include "arm/kernels_arm.h"
#include "ref/kernels_ref.h"
#include "simd/kernel_table.hpp"

namespace mt {

const KernelTable& neon_kernels() {
  static const KernelTable table = simd::make_kernel_table<xsimd::neon64>(
      "neon", quantize_rows_u8_ref, gemm_u8s8_ref, embed_i8_ref);
  return table;
}

}  // namespace mt
