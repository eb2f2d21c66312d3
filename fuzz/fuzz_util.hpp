// Shared pieces of the libFuzzer targets: models in 64-byte aligned memory
// and a reader that turns the fuzzer's bytes into choices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "mt/mt.hpp"

namespace mt::fuzz {

// Bytes copied into 64-byte aligned memory (Model::from_buffer needs it).
class AlignedBytes {
 public:
  AlignedBytes(const uint8_t* data, size_t size)
      : data_(static_cast<uint8_t*>(::operator new(size ? size : 1, std::align_val_t(64)))), size_(size) {
    if (size) std::memcpy(data_, data, size);
  }
  ~AlignedBytes() { ::operator delete(data_, std::align_val_t(64)); }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  std::span<const uint8_t> span() const { return {data_, size_}; }

 private:
  uint8_t* data_;
  size_t size_;
};

// Consumes the fuzzer's input front to back; zeros once it runs out.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | byte();
    return v;
  }
  float f32() {
    const uint32_t bits = u32();
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  // An int in [lo, hi], or sometimes just outside, so range checks get hit.
  int range(int lo, int hi) {
    const uint8_t b = byte();
    if (b == 255) return hi + 1 + int(byte());
    if (b == 254) return lo - 1 - int(byte());
    return lo + int(u32() % uint32_t(hi - lo + 1));
  }
  size_t left() const { return size_ - pos_; }
  const uint8_t* rest() const { return data_ + pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// A very small model (1 + 1 layers, d_model 8, vocabulary 24): cheap to
// translate with, and a small seed for the model-file target.
inline ModelConfig micro_config() {
  ModelConfig c;
  c.encoder_layers = c.decoder_layers = 1;
  c.d_model = 8;
  c.heads = 2;
  c.d_ff = 12;
  c.source_vocab_size = c.target_vocab_size = 24;
  c.max_positions = 64;
  c.shared_embeddings = c.tied_output = true;
  return c;
}

}  // namespace mt::fuzz
