// SplitMix64 (Steele et al. 2014): a 64-bit mix of a counter, for
// counter-based random streams (dropout masks, sampled segmentations).
#pragma once

#include <cstdint>

namespace mt::detail {

// The generator's increment: splitmix64(x) mixes x + kSplitMix64Gamma, so
// a stateful generator returns splitmix64(state) and adds it to state.
inline constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;
// The two multipliers of the mix (vector versions use them too).
inline constexpr uint64_t kSplitMix64Mul1 = 0xBF58476D1CE4E5B9ull;
inline constexpr uint64_t kSplitMix64Mul2 = 0x94D049BB133111EBull;

inline uint64_t splitmix64(uint64_t z) {
  z += kSplitMix64Gamma;
  z = (z ^ (z >> 30)) * kSplitMix64Mul1;
  z = (z ^ (z >> 27)) * kSplitMix64Mul2;
  return z ^ (z >> 31);
}

}  // namespace mt::detail
