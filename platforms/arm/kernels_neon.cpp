// The aarch64 tables: platforms/simd/ instantiated for xsimd::neon64 (NEON is
// part of every aarch64 CPU) with the NEON int8 kernels; the dot-product
// table swaps in the udot GEMM. embed_i8 is the reference, as on x86.
#include "arm/int8_arm.h"
#include "arm/kernels_arm.h"
#include "ref/kernels_ref.h"
#include "simd/kernel_table.hpp"

namespace mt {

const KernelTable& neon_kernels() {
  static const KernelTable table =
      simd::make_kernel_table<xsimd::neon64>("neon", arm::quantize_rows_u8_neon, arm::gemm_u8s8_neon, embed_i8_ref);
  return table;
}

const KernelTable& neon_dotprod_kernels() {
  static const KernelTable table = [] {
    KernelTable t = neon_kernels();
    t.isa = "neon_dotprod";
    t.gemm_u8s8 = arm::gemm_u8s8_neon_dotprod;
    return t;
  }();
  return table;
}

}  // namespace mt
