// The WebAssembly KernelTable: SIMD128, which every current browser and
// Node.js run (the build targets it; there is no run-time choice in wasm).
#pragma once

#include "mt/kernels.h"

namespace mt {

const KernelTable& wasm_simd128_kernels();

}  // namespace mt
