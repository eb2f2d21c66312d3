// The x86 KernelTables. Each lives in a translation unit compiled with its ISA
// flags: call one only after dispatch.cpp has checked that the CPU runs it.
#pragma once

#include "mt/kernels.h"

namespace mt {

const KernelTable& avx2_kernels();        // AVX2 + FMA3
const KernelTable& avx512_kernels();      // AVX-512 F/CD/BW/DQ/VL
const KernelTable& avx512vnni_kernels();  // avx512, with the int8 GEMM on AVX512-VNNI

}  // namespace mt
