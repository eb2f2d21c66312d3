// The corruption sweep: the shipped models, damaged thousands of ways. Every
// damaged file is either refused with a message or loads and translates;
// under AddressSanitizer (CI's second run) nothing reads out of bounds. The
// structure (everything outside the weight payloads: tables, vocabulary,
// scales, quantization) is where a loader can be fooled, so most flips land
// there; flips inside weights only change values, and the NaN/Inf check must
// catch the ones that make a weight non-finite.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace mt;
using test::AlignedFile;

namespace {

#ifndef MT_TEST_EMULATED
constexpr int kStructureFlips = 2500;  // per model
constexpr int kWeightFlips = 250;      // per model
#else  // under qemu, ~50x slower: every one of the first 1024 bytes, fewer random ones
constexpr int kStructureFlips = 1200;
constexpr int kWeightFlips = 60;
#endif
constexpr int kTruncations = 200;      // per model

struct Range {
  size_t begin, end;
};

// Byte ranges of the weight payloads (fp32 values or int8 codes).
std::vector<Range> weight_ranges(const Model& model) {
  std::vector<Range> out;
  const uint8_t* base = model.bytes().data();
  for (const TensorView& t : model.tensors()) {
    const size_t begin = size_t(t.data.data() - base);
    out.push_back({begin, begin + t.data.size()});
  }
  return out;
}

bool inside(const std::vector<Range>& ranges, size_t pos) {
  for (const Range& r : ranges)
    if (pos >= r.begin && pos < r.end) return true;
  return false;
}

// A model that loaded must translate: text, short lengths (within the
// model's max_positions, which a flip may have lowered), greedy or beam as
// the case says (one search per case keeps the ASan run to minutes).
void translate_once(const std::shared_ptr<const Model>& model, int beam) {
  SessionOptions so;
  so.max_batch_size = 2;
  so.max_source_length = std::min(24, model->config().max_positions);
  so.max_target_length = std::min(6, model->config().max_positions);
  so.max_beam_size = 2;
  so.max_text_bytes = 256;
  auto session = Session::create(model, so);
  INFO(session.status().message());
  REQUIRE(session.ok());
  const std::string_view text[] = {"A man rides a bike.", "\xff z"};
  const std::vector<std::vector<int32_t>> ids = {{5, 6, 7}, {8}};
  TranslateOptions to;
  to.truncate_long_sources = true;
  to.beam_size = beam;
  if (!model->vocabulary()) {  // a damaged table can drop the (optional) vocabulary: ids still work
    Translations out;
    const Status s = session->translate(test::spans(ids), to, &out);
    INFO(s.message());
    REQUIRE(s.ok());
    CHECK(out.size() == 2);
    return;
  }
  TextTranslations out;
  const Status s = session->translate_text(text, to, &out);
  INFO(s.message());
  REQUIRE(s.ok());
  REQUIRE(out.size() == 2);
  CHECK(out[0].size() == 1);
}

struct SweepCounts {
  int rejected = 0, loaded = 0;
  double slowest_ms = 0;
};

// Loads the (damaged) bytes; a refusal must say something, a success must
// translate (greedy for even cases, beam 2 for odd ones).
void try_load(std::span<const uint8_t> bytes, SweepCounts* counts) {
  const auto start = std::chrono::steady_clock::now();
  auto model = Model::from_buffer(bytes);
  const int beam = 1 + (counts->loaded + counts->rejected) % 2;
  if (model.ok()) {
    ++counts->loaded;
    translate_once(model.value(), beam);
  } else {
    ++counts->rejected;
    CHECK(std::strlen(model.status().message()) > 10);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  counts->slowest_ms = std::max(counts->slowest_ms, ms);
}

std::string model_path(const char* name) { return std::string(MT_MODELS_DIR) + "/" + name; }

}  // namespace

namespace {

// The flip sweep of one shipped model (a test case per model, so ctest runs
// them side by side: under ASan each takes minutes).
void sweep_flips(const char* name) {
  INFO(name);
  AlignedFile file(model_path(name));
  REQUIRE(file.size > 1000);
  std::vector<Range> weights;
  {
    auto intact = Model::from_buffer(file.span(file.size));
    REQUIRE(intact.ok());
    weights = weight_ranges(*intact.value());
  }
  std::vector<size_t> structure, payload;
  for (size_t pos = 0; pos < file.size; ++pos) (inside(weights, pos) ? payload : structure).push_back(pos);

  std::mt19937_64 rng(7);
  SweepCounts structure_counts, weight_counts;
  auto flip_at = [&](size_t pos, SweepCounts* counts) {
    const uint8_t original = file.data[pos];
    // XOR with a random non-zero byte, or the extremes a length or offset fears most.
    const int kind = int(rng() % 4);
    file.data[pos] = kind == 0 ? 0x00 : kind == 1 ? 0xFF : uint8_t(original ^ (1 + rng() % 255));
    if (file.data[pos] == original) file.data[pos] ^= 0x80;
    INFO("byte " << pos << " 0x" << std::hex << int(original) << " -> 0x" << int(file.data[pos]));
    try_load(file.span(file.size), counts);
    file.data[pos] = original;
  };
  // Every one of the first 1024 bytes (root table, vtables, config), then random structure bytes.
  for (size_t i = 0; i < structure.size() && i < 1024; ++i) flip_at(structure[i], &structure_counts);
  for (int i = 1024; i < kStructureFlips; ++i) flip_at(structure[rng() % structure.size()], &structure_counts);
  for (int i = 0; i < kWeightFlips; ++i) flip_at(payload[rng() % payload.size()], &weight_counts);

  std::printf("corruption sweep %s: %d structure flips (%d refused, %d loaded and translated), "
              "%d weight flips (%d refused, %d loaded), slowest case %.1f ms\n",
              name, kStructureFlips, structure_counts.rejected, structure_counts.loaded, kWeightFlips,
              weight_counts.rejected, weight_counts.loaded,
              std::max(structure_counts.slowest_ms, weight_counts.slowest_ms));
  CHECK(structure_counts.rejected + structure_counts.loaded == kStructureFlips);
  CHECK(structure_counts.rejected > kStructureFlips / 10);  // the verifier does see damage
  // The file is intact again.
  REQUIRE(Model::from_buffer(file.span(file.size)).ok());
}

}  // namespace

TEST_CASE("the shipped int8 model with flipped bytes is refused or translates", "[corruption]") {
  sweep_flips("en-de-tiny.int8.mtm");
}

TEST_CASE("the shipped fp32 model with flipped bytes is refused or translates", "[corruption]") {
  sweep_flips("en-de-tiny.mtm");
}

TEST_CASE("shipped models cut short are refused", "[corruption]") {
  const char* name = GENERATE("en-de-tiny.int8.mtm", "en-de-tiny.mtm");
  INFO(name);
  AlignedFile file(model_path(name));
  std::mt19937_64 rng(11);
  std::vector<size_t> lengths = {0, 1, 4, 7, 8, 9, 16, 63, 64, 65, 512, 4096, file.size - 1, file.size - 2,
                                 file.size - 64, file.size / 2};
  while (lengths.size() < size_t(kTruncations)) lengths.push_back(rng() % file.size);
  SweepCounts counts;
  for (size_t length : lengths) {
    INFO("cut to " << length << " of " << file.size << " bytes");
    ASAN_POISON_MEMORY_REGION(file.data + length, file.size - length);  // the cut-off part is gone
    try_load(file.span(length), &counts);
    ASAN_UNPOISON_MEMORY_REGION(file.data + length, file.size - length);
    CHECK(counts.loaded == 0);
  }
  std::printf("corruption sweep %s: %zu truncations, %d refused\n", name, lengths.size(), counts.rejected);
}

TEST_CASE("a NaN or Inf weight is reported by name when asked, and never crashes translation", "[corruption]") {
  AlignedFile file(model_path("en-de-tiny.mtm"));
  std::vector<TensorView> tensors;
  {
    auto intact = Model::from_buffer(file.span(file.size));
    REQUIRE(intact.ok());
    tensors.assign(intact.value()->tensors().begin(), intact.value()->tensors().end());
  }
  std::mt19937_64 rng(13);
  LoadOptions check;
  check.check_weights_finite = true;
  int reported = 0;
  for (int i = 0; i < 60; ++i) {
    const TensorView& t = tensors[rng() % tensors.size()];
    REQUIRE(t.dtype == DType::f32);
    const size_t element = rng() % (t.data.size() / sizeof(float));
    // from_buffer loads in place: the views point into our buffer.
    float* slot = reinterpret_cast<float*>(file.data + (t.data.data() - file.data)) + element;
    const float original = *slot;
    const bool nan = i % 2 == 0;
    *slot = nan ? std::nanf("") : (i % 4 == 1 ? INFINITY : -INFINITY);

    auto checked = Model::from_buffer(file.span(file.size), check);
    INFO(t.name << " element " << element);
    REQUIRE_FALSE(checked.ok());
    const std::string message = checked.status().message();
    CHECK_THAT(message, Catch::Contains(std::string(t.name)) && Catch::Contains(nan ? "NaN" : "Inf") &&
                            Catch::Contains("element " + std::to_string(element)));
    reported += !checked.ok();

    // Unchecked, the model loads (no weight byte is read) and translates into something.
    auto unchecked = Model::from_buffer(file.span(file.size));
    REQUIRE(unchecked.ok());
    if (i < 12) translate_once(unchecked.value(), 1 + i % 2);
    *slot = original;
  }
  std::printf("corruption sweep: %d non-finite weights reported by name\n", reported);
}
