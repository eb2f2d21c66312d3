// The avx512vnni table: the avx512 table's fp32 and quantization kernels with
// the int8 GEMM on vpdpbusd (x86/gemm_u8s8_avx512vnni.cpp). Only copies
// pointers, so it needs no ISA flags of its own.
#include "x86/int8_x86.h"
#include "x86/kernels_x86.h"

namespace mt {

const KernelTable& avx512vnni_kernels() {
  static const KernelTable table = [] {
    KernelTable t = avx512_kernels();
    t.isa = "avx512vnni";
    t.gemm_u8s8 = x86::gemm_u8s8_avx512vnni;
    return t;
  }();
  return table;
}

}  // namespace mt
