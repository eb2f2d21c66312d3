// The translation cache's store: entries back to back in a ring of bytes
// (the oldest overwritten first), found through an open-addressing index of
// (hash, position) slots. Keys are compared in full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <cstring>
#include <span>

#include "mt/translation_cache.hpp"
#include "support/content_hash.hpp"

namespace mt {

struct TranslationCache::Impl {
  // One stored hypothesis, followed by its tokens and its token
  // log-probabilities (Hypothesis::token_log_probs).
  struct StoredHypothesis {
    float score;
    float log_prob;
    uint32_t length;
    uint32_t log_prob_count;
  };

  // Looks `key` up; on a hit calls read(hypotheses, count) with the
  // entry's bytes, under the lock. Counts hits and misses. (Whether a
  // source was cut is the caller's: the key holds the source as cut.)
  template <class Read>
  bool lookup(std::span<const std::byte> key, Read&& read);
  // Stores `key` with `count` hypotheses (each's tokens in `tokens[i]`,
  // token log-probabilities in `log_probs[i]`).
  void insert(std::span<const std::byte> key, const StoredHypothesis* hypotheses,
              const std::span<const int32_t>* tokens, const std::span<const float>* log_probs, int count);

  uint64_t hash(std::span<const std::byte> key) const;

  struct Slot {
    uint64_t hash = 0;
    uint64_t position = kEmpty;  // logical position of the entry in the ring
  };
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static constexpr uint64_t kRemoved = ~uint64_t(0) - 1;
  static constexpr int kProbes = 32;

  // Entry header at a ring position: sizes, the slot that finds it, flags.
  struct Header {
    uint32_t bytes;      // the whole entry, header included, 8-aligned
    uint32_t key_bytes;  // key after the header
    uint32_t slot;       // its index slot
    uint16_t count;      // hypotheses after the key
  };

  std::byte* at(uint64_t position) { return ring + position % ring_bytes; }
  void evict_oldest();
  Slot* find(std::span<const std::byte> key, uint64_t h);

  mutable std::mutex mutex;
  std::unique_ptr<std::byte[]> memory;
  Slot* slots = nullptr;
  size_t slot_count = 0;  // a power of two
  std::byte* ring = nullptr;
  size_t ring_bytes = 0;
  uint64_t head = 0, tail = 0;  // logical positions: entries live in [tail, head)
  size_t max_entries = 0, memory_size = 0;
  Stats stats;
  int hash_bits = 64;  // tests force collisions with fewer
};

template <class Read>
bool TranslationCache::Impl::lookup(std::span<const std::byte> key, Read&& read) {
  std::lock_guard<std::mutex> lock(mutex);
  Slot* slot = find(key, hash(key));
  if (slot == nullptr) {
    ++stats.misses;
    return false;
  }
  ++stats.hits;
  const std::byte* entry = at(slot->position);
  Header h;
  std::memcpy(&h, entry, sizeof(h));
  read(entry + sizeof(Header) + h.key_bytes, int(h.count));
  return true;
}

namespace detail {
// Tests: only the low `bits` of each key's hash count, so keys collide.
void set_cache_hash_bits(TranslationCache& cache, int bits);
}  // namespace detail

}  // namespace mt
