// SplitMix64 (Steele et al. 2014): a 64-bit mix of a counter, for
// counter-based random streams (dropout masks, sampled segmentations).
#pragma once

#include <cstdint>

namespace mt::detail {

// The generator's increment: splitmix64(x) mixes x + kSplitMix64Gamma, so
// a stateful generator returns splitmix64(state) and adds it to state.
inline constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

inline uint64_t splitmix64(uint64_t z) {
  z += kSplitMix64Gamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace mt::detail
