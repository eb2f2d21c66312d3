// A translation cache: sentences translated before come back without
// decoding. Its memory is allocated once, when it is created; lookups and
// insertions allocate nothing. The key is the model (a fingerprint of its
// file), every option that changes the output, and the whole source (its
// token ids, compared in full: a hash collision is never a wrong answer).
// One cache serves any number of sessions of one model, on any threads
// (a lock guards it). Give it to a call with TranslateOptions::cache.
#pragma once

#include "mt/export.h"

#include <cstddef>
#include <cstdint>
#include <memory>

#include "mt/status.hpp"

namespace mt {

struct TranslationCacheOptions {
  size_t max_entries = 1024;  // sentences kept at most; the oldest go first
  size_t memory_bytes = 0;    // for the entries (keys and hypotheses); 0: 1 KiB per entry
};

class MT_API TranslationCache {
 public:
  static Expected<std::shared_ptr<TranslationCache>> create(const TranslationCacheOptions& options = {});
  ~TranslationCache();
  TranslationCache(const TranslationCache&) = delete;
  TranslationCache& operator=(const TranslationCache&) = delete;

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t insertions = 0;
    uint64_t evictions = 0;  // entries dropped to make room
    size_t entries = 0;      // held now
  };
  Stats stats() const;
  size_t max_entries() const;
  size_t memory_size() const;  // bytes allocated at creation: all it ever uses
  void clear();                // drops every entry (statistics kept)

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  explicit TranslationCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mt
