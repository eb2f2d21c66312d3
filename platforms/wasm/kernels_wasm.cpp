// The WebAssembly table. xsimd 8.1 has no wasm architecture, but Emscripten
// compiles x86 SSE intrinsics to SIMD128 instructions (this unit is built
// with -msse4.1 -msimd128), so platforms/simd/ is instantiated for
// xsimd::sse4_1 and runs as SIMD128. The int8 kernels use <wasm_simd128.h>
// directly: i32x4.dot_i16x8_s is wasm's pmaddwd.
#include "wasm/sse_conversions.h"  // first: before xsimd sees the SSE intrinsics
#include "ref/kernels_ref.h"
#include "simd/kernel_table.hpp"
#include "wasm/int8_wasm.h"
#include "wasm/kernels_wasm.h"

namespace mt {

const KernelTable& wasm_simd128_kernels() {
  static const KernelTable table = simd::make_kernel_table<xsimd::sse4_1>(
      "wasm_simd128", wasm::quantize_rows_u8_simd128, wasm::gemm_u8s8_simd128, embed_i8_ref);
  return table;
}

}  // namespace mt
