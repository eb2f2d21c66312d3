// SplitMix64 (Steele et al. 2014): a 64-bit mix of a counter, for
// counter-based random streams (dropout masks, sampled segmentations).
#pragma once

#include <cstdint>

namespace mt::detail {

inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace mt::detail
