// Dropout's forward over a range of elements, one implementation per ISA:
// for i in [begin, end) of the stream with this key,
//   kept     = (splitmix64(key + i) >> 11) >= threshold
//   mask[i]  = kept ? keep_scale : 0
//   y[i]     = x[i] * mask[i]
// Integer mixing and one product per element, so every implementation gives
// the same bits (test_autograd compares them).
#pragma once

#include <cstdint>

namespace mt {
struct KernelTable;
}

namespace mt::autograd {

using DropoutMaskF32 = void (*)(const float* x, float* y, float* mask, int64_t begin, int64_t end, uint64_t key,
                                uint64_t threshold, float keep_scale);

// Plain C++: the definition.
void dropout_mask_f32_scalar(const float* x, float* y, float* mask, int64_t begin, int64_t end, uint64_t key,
                             uint64_t threshold, float keep_scale);
#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
#define MT_AUTOGRAD_HAS_AVX512 1
// Eight 64-bit draws per vector multiply (AVX-512DQ's vpmullq); x86-64
// builds only, for CPUs whose kernel table is an AVX-512 one.
void dropout_mask_f32_avx512(const float* x, float* y, float* mask, int64_t begin, int64_t end, uint64_t key,
                             uint64_t threshold, float keep_scale);
#else
#define MT_AUTOGRAD_HAS_AVX512 0
#endif

// The one to run with this kernel table (its ISA, so MT_ISA picks it too).
DropoutMaskF32 dropout_mask_f32_for(const KernelTable& kernels);

}  // namespace mt::autograd
