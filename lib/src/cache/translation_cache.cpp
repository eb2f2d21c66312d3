#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include "cache/translation_cache_impl.hpp"

namespace mt {

namespace {

constexpr size_t kEntryAlignment = 16;  // a Header: padding up to the ring's end always holds one

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

uint64_t TranslationCache::Impl::hash(std::span<const std::byte> key) const {
  // 64-bit FNV-1a, then a final mix so the low bits (the index) depend on all.
  uint64_t h = detail::fnv1a({reinterpret_cast<const uint8_t*>(key.data()), key.size()});
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return hash_bits >= 64 ? h : h & ((uint64_t(1) << hash_bits) - 1);
}

TranslationCache::Impl::Slot* TranslationCache::Impl::find(std::span<const std::byte> key, uint64_t h) {
  for (int p = 0; p < kProbes; ++p) {
    Slot& slot = slots[(h + uint64_t(p)) & (slot_count - 1)];
    if (slot.position == kEmpty) return nullptr;
    if (slot.position == kRemoved || slot.hash != h) continue;
    Header header;
    std::memcpy(&header, at(slot.position), sizeof(header));
    if (header.key_bytes == key.size() && std::memcmp(at(slot.position) + sizeof(Header), key.data(), key.size()) == 0)
      return &slot;
  }
  return nullptr;
}

void TranslationCache::Impl::evict_oldest() {
  Header header;
  std::memcpy(&header, at(tail), sizeof(header));
  if (header.bytes == 0) {  // padding up to the ring's end: skip it
    tail = round_up(tail + 1, ring_bytes);
    return;
  }
  slots[header.slot].position = kRemoved;
  tail += header.bytes;
  --stats.entries;
  ++stats.evictions;
}

void TranslationCache::Impl::insert(std::span<const std::byte> key, const StoredHypothesis* hypotheses,
                                    const std::span<const int32_t>* tokens, const std::span<const float>* log_probs,
                                    int count) {
  size_t value_bytes = 0;
  for (int i = 0; i < count; ++i)
    value_bytes += sizeof(StoredHypothesis) + tokens[i].size() * sizeof(int32_t) + log_probs[i].size() * sizeof(float);
  const size_t bytes = round_up(sizeof(Header) + round_up(key.size(), 4) + value_bytes, kEntryAlignment);
  if (bytes > ring_bytes || count > 0xFFFF || max_entries == 0) return;  // can never fit
  std::lock_guard<std::mutex> lock(mutex);
  const uint64_t h = hash(key);
  if (find(key, h) != nullptr) return;  // another session stored it meanwhile
  // A slot on the probe path: the first free one.
  Slot* slot = nullptr;
  for (int p = 0; p < kProbes && slot == nullptr; ++p) {
    Slot& s = slots[(h + uint64_t(p)) & (slot_count - 1)];
    if (s.position == kEmpty || s.position == kRemoved) slot = &s;
  }
  if (slot == nullptr) return;  // a crowded neighbourhood: not stored
  // Room: an entry never wraps (pad to the ring's end), the oldest go first.
  uint64_t position = head;
  const size_t to_end = ring_bytes - size_t(position % ring_bytes);
  if (to_end < bytes) position += to_end;
  while (tail < head && (position + bytes - tail > ring_bytes || stats.entries >= max_entries)) evict_oldest();
  if (tail == head) {
    tail = head = position;  // empty: start afresh, nothing to skip
  } else if (position != head) {
    const Header pad{};  // the skipped end, marked as padding (bytes 0)
    std::memcpy(at(head), &pad, sizeof(pad));
  }
  std::byte* entry = at(position);
  const Header header{uint32_t(bytes), uint32_t(key.size()), uint32_t(slot - slots), uint16_t(count)};
  std::memcpy(entry, &header, sizeof(header));
  std::byte* out = entry + sizeof(Header);
  if (!key.empty()) std::memcpy(out, key.data(), key.size());
  out += round_up(key.size(), 4);
  for (int i = 0; i < count; ++i) {
    std::memcpy(out, &hypotheses[i], sizeof(StoredHypothesis));
    out += sizeof(StoredHypothesis);
    if (!tokens[i].empty()) std::memcpy(out, tokens[i].data(), tokens[i].size() * sizeof(int32_t));
    out += tokens[i].size() * sizeof(int32_t);
    if (!log_probs[i].empty()) std::memcpy(out, log_probs[i].data(), log_probs[i].size() * sizeof(float));
    out += log_probs[i].size() * sizeof(float);
  }
  *slot = {h, position};
  head = position + bytes;
  ++stats.entries;
  ++stats.insertions;
}

Expected<std::shared_ptr<TranslationCache>> TranslationCache::create(const TranslationCacheOptions& options) {
  if (options.max_entries == 0 || options.max_entries > (size_t(1) << 28)) {
    return Status::error(Errc::invalid_argument, "translation cache max_entries = %zu: must be in [1, 2^28]",
                         options.max_entries);
  }
  // 64-bit arithmetic: size_t is 32 bits in WebAssembly.
  const uint64_t asked =
      options.memory_bytes != 0 ? uint64_t(options.memory_bytes) : uint64_t(options.max_entries) * 1024;
  const uint64_t limit = std::min<uint64_t>(uint64_t(1) << 40, SIZE_MAX / 2);
  if (asked < 256 || asked > limit) {
    return Status::error(Errc::invalid_argument,
                         "translation cache memory_bytes = %llu: must be in [256, %llu] (0: 1 KiB per entry)",
                         static_cast<unsigned long long>(asked), static_cast<unsigned long long>(limit));
  }
  const size_t ring = round_up(size_t(asked), kEntryAlignment);
  auto impl = std::make_unique<Impl>();
  impl->slot_count = 64;
  while (impl->slot_count < 2 * options.max_entries) impl->slot_count *= 2;
  const size_t index_bytes = impl->slot_count * sizeof(Impl::Slot);
  impl->memory.reset(new (std::nothrow) std::byte[index_bytes + ring]);
  if (impl->memory == nullptr) {
    return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes for the translation cache",
                         index_bytes + ring);
  }
  impl->slots = reinterpret_cast<Impl::Slot*>(impl->memory.get());
  std::uninitialized_fill_n(impl->slots, impl->slot_count, Impl::Slot{});
  impl->ring = impl->memory.get() + index_bytes;
  impl->ring_bytes = ring;
  impl->max_entries = options.max_entries;
  impl->memory_size = index_bytes + ring;
  return std::shared_ptr<TranslationCache>(new TranslationCache(std::move(impl)));
}

TranslationCache::TranslationCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TranslationCache::~TranslationCache() = default;

TranslationCache::Stats TranslationCache::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

size_t TranslationCache::max_entries() const { return impl_->max_entries; }
size_t TranslationCache::memory_size() const { return impl_->memory_size; }

void TranslationCache::clear() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::fill_n(impl_->slots, impl_->slot_count, Impl::Slot{});
  impl_->head = impl_->tail = 0;
  impl_->stats.entries = 0;
}

namespace detail {

void set_cache_hash_bits(TranslationCache& cache, int bits) {
  std::lock_guard<std::mutex> lock(cache.impl()->mutex);
  cache.impl()->hash_bits = bits;
}

}  // namespace detail

}  // namespace mt
