// The aarch64 KernelTables (dispatch.cpp picks the best one this CPU runs).
#pragma once

#include "mt/kernels.h"

namespace mt {

const KernelTable& neon_kernels();          // Advanced SIMD, every aarch64 CPU
const KernelTable& neon_dotprod_kernels();  // plus udot/sdot (Armv8.2 FEAT_DotProd)

}  // namespace mt
