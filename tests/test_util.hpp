// Shared helpers for the tests: small configs and random models on disk.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <sanitizer/asan_interface.h>  // ASAN_(UN)POISON_MEMORY_REGION: no-ops without ASan

#include "mt/mt.hpp"
#include "test_skip.hpp"  // MT_SKIP(reason)

namespace mt::test {

// A model small enough that every test runs in milliseconds, with awkward
// sizes (vocabulary and d_ff not multiples of 16).
inline ModelConfig tiny_config() {
  ModelConfig c;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_model = 64;
  c.heads = 4;
  c.d_ff = 136;
  c.source_vocab_size = c.target_vocab_size = 301;
  c.max_positions = 128;
  c.shared_embeddings = c.tied_output = true;
  return c;
}

// A scratch directory removed at the end of the test program.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    // The pid and a random number: WebAssembly gives every process pid 42.
    auto d = std::filesystem::temp_directory_path() /
             ("libmt-test-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device()()));
    std::filesystem::create_directories(d);
    return d;
  }();
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup;
  return dir;
}

inline std::string scratch_path(const std::string& name) { return (scratch_dir() / name).string(); }

#ifdef MT_MODELS_DIR
// A shipped model (models/FILE), loaded once per test program.
inline std::shared_ptr<const Model> shipped_model(const std::string& file) {
  static std::map<std::string, std::shared_ptr<const Model>> models;
  std::shared_ptr<const Model>& m = models[file];
  if (m == nullptr) m = *Model::load(std::string(MT_MODELS_DIR "/") + file);
  return m;
}

// The shipped English-German int8 model.
inline std::shared_ptr<const Model> shipped_int8_model() { return shipped_model("en-de-tiny.int8.mtm"); }

// A session of it with these options.
inline Session shipped_session(const SessionOptions& options) {
  auto session = Session::create(shipped_int8_model(), options);
  REQUIRE(session.ok());
  return std::move(session.value());
}
#endif

// A text file's lines (without their newlines).
inline std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Each line as the model's source ids.
inline std::vector<std::vector<int32_t>> encode_lines(const Model& model, const std::vector<std::string>& lines) {
  std::vector<std::vector<int32_t>> ids(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) REQUIRE(model.encode(lines[i], &ids[i]).ok());
  return ids;
}

// The length limits the pinned translations (tests/data/shipped_sentences.*-greedy)
// were written with, `mt_translate --beam 1 --max-length-ratio 2
// --max-length-offset 10`: a model that loops on a line gives the pinned
// text only under them.
inline constexpr float kPinnedLengthRatio = 2.0f;
inline constexpr int kPinnedLengthOffset = 10;
inline TranslateOptions pinned_options() {
  TranslateOptions o;
  o.max_length_ratio = kPinnedLengthRatio;
  o.max_length_offset = kPinnedLengthOffset;
  return o;
}

#ifdef MT_TEST_DATA_DIR
// The 40 committed sentences (tests/data/shipped_sentences.en).
inline const std::vector<std::string>& shipped_sentences() {
  static const std::vector<std::string> lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  return lines;
}
#endif

// 64-byte aligned memory, as Model::from_buffer and sessions in caller
// memory ask for; under ASan a read past `size` is a report.
struct AlignedBytes {
  explicit AlignedBytes(size_t n) : size(n), capacity((n + 63) / 64 * 64) {
    data = static_cast<uint8_t*>(std::aligned_alloc(64, capacity));
    ASAN_POISON_MEMORY_REGION(data + size, capacity - size);
  }
  ~AlignedBytes() {
    ASAN_UNPOISON_MEMORY_REGION(data, capacity);
    std::free(data);
  }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  std::span<const uint8_t> span(size_t length) const { return {data, length}; }

  uint8_t* data = nullptr;
  size_t size = 0;
  size_t capacity = 0;
};

// A file's bytes in AlignedBytes: a model image to load in place, damage and restore.
struct AlignedFile : AlignedBytes {
  explicit AlignedFile(const std::string& path) : AlignedBytes(std::filesystem::file_size(path)) {
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(data), std::streamsize(size));
  }
};

inline std::shared_ptr<const Model> random_model(const ModelConfig& config, uint64_t seed,
                                                 const std::string& name = "model.mtm") {
  const std::string path = scratch_path(std::to_string(seed) + "-" + name);
  const Status written = write_random_model(config, seed, path);
  INFO(written.message());
  REQUIRE(written.ok());
  auto model = Model::load(path);
  INFO(model.status().message());
  REQUIRE(model.ok());
  return model.value();
}

// Deterministic pseudo-random source sentences of the given lengths, ids in [4, vocab).
inline std::vector<std::vector<int32_t>> make_sources(const std::vector<int>& lengths, int vocab, uint32_t seed) {
  std::vector<std::vector<int32_t>> out;
  uint32_t x = seed * 2654435761u + 1;
  for (int len : lengths) {
    std::vector<int32_t> s;
    for (int i = 0; i < len; ++i) {
      x = x * 1664525u + 1013904223u;
      s.push_back(int32_t(4 + (x >> 8) % uint32_t(vocab - 4)));
    }
    out.push_back(s);
  }
  return out;
}

inline std::vector<std::span<const int32_t>> spans(const std::vector<std::vector<int32_t>>& v) {
  return {v.begin(), v.end()};
}

}  // namespace mt::test
