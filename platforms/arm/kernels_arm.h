// The aarch64 KernelTables (dispatch.cpp picks the best one this CPU runs).
#pragma once

#include "mt/kernels.h"

namespace mt {

const KernelTable& neon_kernels();  // Advanced SIMD, every aarch64 CPU

}  // namespace mt
