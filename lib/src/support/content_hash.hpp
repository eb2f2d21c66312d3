// 64-bit hashes of bytes, not for adversaries: the translation cache's keys
// (fnv1a) and whole files (content_hash: a model file's fingerprint,
// mt_train's training files in DIR/run.txt).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace mt::detail {

// 64-bit FNV-1a of `bytes`, continuing from `h`.
inline uint64_t fnv1a(std::span<const uint8_t> bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (const uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// Every byte of `bytes` and their count: eight bytes a step in four
// independent chains (a few GB/s: milliseconds for a small model, ~0.1 s for
// a 300 MB one), the tail bytewise.
inline uint64_t content_hash(std::span<const uint8_t> bytes) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t lane[4] = {0xcbf29ce484222325ull ^ bytes.size(), 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                      0x165667b19e3779f9ull};
  size_t i = 0;
  for (; i + 32 <= bytes.size(); i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, bytes.data() + i + 8 * size_t(k), sizeof(w));
      lane[k] = (lane[k] ^ w) * kPrime;
      lane[k] ^= lane[k] >> 31;
    }
  }
  uint64_t h = fnv1a(bytes.subspan(i), lane[0]);
  for (int k = 1; k < 4; ++k) h = (h ^ lane[k]) * kPrime;
  return h;
}

}  // namespace mt::detail
