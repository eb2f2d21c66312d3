// Helpers shared by the kernel tests (test_kernels, test_kernels_int8).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mt/kernels.h"

namespace mt::test {

// n uniform floats in [lo, hi], the same for the same seed.
inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The SIMD tables to check against the reference.
inline std::vector<const KernelTable*> simd_tables() {
  std::vector<const KernelTable*> tables;
  for (const KernelTable* t : available_kernels())
    if (std::string(t->isa) != "ref") tables.push_back(t);
  return tables;
}

inline const char* act_name(Activation act) {
  return act == Activation::none   ? "none"
         : act == Activation::relu ? "relu"
         : act == Activation::gelu ? "gelu"
                                   : "swish";
}

}  // namespace mt::test
