// The shipped models (models/): each int8 model translates a committed set
// of our own sentences (tests/data/shipped_sentences.en) like its fp32
// model, greedy: at least kMinIdentical of the 40 translations identical.
// int8 rounding may flip a close choice (and the rest of that sentence with
// it); more than that would be a broken quantization, not rounding.
#include <cstdio>
#include <string>
#include <vector>

#include "mt/kernels.h"
#include "test_util.hpp"

using namespace mt;

namespace {

constexpr double kMinIdentical = 0.65;

std::vector<std::string> sentences() { return test::read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en"); }

std::vector<std::string> translate(const std::string& path, const std::vector<std::string>& lines) {
  auto model = Model::load(path);
  INFO(model.status().message());
  REQUIRE(model.ok());
  SessionOptions so;
  so.max_batch_size = 8;
  auto session = Session::create(*model, so);
  REQUIRE(session.ok());
  const TranslateOptions to = test::pinned_options();
  std::vector<std::string> out;
  for (size_t b = 0; b < lines.size(); b += 8) {
    const std::vector<std::string_view> batch(lines.begin() + b, lines.begin() + std::min(lines.size(), b + 8));
    TextTranslations results;
    REQUIRE(session->translate_text(batch, to, &results).ok());
    for (size_t i = 0; i < batch.size(); ++i) out.emplace_back(results[i][0].text);
  }
  return out;
}

}  // namespace

TEST_CASE("the shipped int8 models translate like their fp32 models", "[shipped]") {
  const std::string name = GENERATE("en-de-tiny", "en-zh-tiny");
  const std::string fp32 = std::string(MT_MODELS_DIR) + "/" + name + ".mtm";
  const std::string int8 = std::string(MT_MODELS_DIR) + "/" + name + ".int8.mtm";
  INFO(name);
  auto model = Model::load(int8);
  REQUIRE(model.ok());
  CHECK((*model)->quantization().int8);
  // Weights a quarter of fp32's; the vocabulary (pieces, normalizer rules and
  // piece trie, ~0.35 MB) is the same in both files.
  CHECK((*model)->file_size() <= 0.31 * double(Model::load(fp32).value()->file_size()));

  const auto lines = sentences();
  REQUIRE(lines.size() == 40);
  const auto a = translate(fp32, lines), b = translate(int8, lines);
  size_t identical = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    identical += a[i] == b[i];
    CHECK_FALSE(b[i].empty());
  }
  INFO(identical << " of " << lines.size() << " identical");
  CHECK(double(identical) >= kMinIdentical * double(lines.size()));
}

// Every platform translates like the x86 machine that wrote the expected file
// (`mt_translate --beam 1 --max-length-ratio 2 --max-length-offset 10`, any of
// its ISAs): the int8 kernels compute exact integers and a fixed-order
// epilogue, so a difference here is a bug of the platform's kernels, not noise.
TEST_CASE("the shipped int8 en-de model translates the committed sentences as on x86", "[shipped]") {
  const auto got = translate(std::string(MT_MODELS_DIR) + "/en-de-tiny.int8.mtm", sentences());
  const auto expected = test::read_lines(MT_TEST_DATA_DIR "/shipped_sentences.de-tiny-int8-greedy");
  INFO("kernels: " << best_kernels().isa);
  REQUIRE(expected.size() == 40);
  for (size_t i = 0; i < expected.size(); ++i) CHECK(got[i] == expected[i]);
}

// The other shipped models pinned the same way (files written by the x86
// release build's mt_translate with the options above, AVX2 kernels:
// `mt_translate --model models/M --beam 1 --max-length-ratio 2
// --max-length-offset 10 < tests/data/shipped_sentences.en`), but not
// exactly: fp32 sums (every GEMM of an fp32 model; attention, LayerNorm and
// softmax of an int8 one) are ordered differently by each ISA's kernels, and a
// close greedy choice may flip. Measured when pinned against avx2: en-de fp32
// 40 of 40 identical with MT_ISA=ref; the en-zh of 2026-11-27, fp32 and int8,
// 40 of 40 with ref, avx512 and avx512vnni (its predecessor's int8 had 39 of
// 40 with ref, so the int8 en-de model's exact agreement above is not
// guaranteed for every int8 model). NEON was not measured; kMinPinned leaves
// room for a few such flips, while a changed model, search or tokenizer
// changes far more lines.
TEST_CASE("the shipped fp32 models and the int8 en-zh model translate the committed sentences as pinned", "[shipped]") {
  constexpr double kMinPinned = 0.9;  // at least 36 of the 40 lines identical
  struct Pin {
    const char* model;
    const char* expected;
  };
  static const Pin kPins[] = {{"en-de-tiny.mtm", "shipped_sentences.de-tiny-fp32-greedy"},
                              {"en-zh-tiny.mtm", "shipped_sentences.zh-tiny-fp32-greedy"},
                              {"en-zh-tiny.int8.mtm", "shipped_sentences.zh-tiny-int8-greedy"}};
  const Pin& pin = kPins[GENERATE(0, 1, 2)];
  INFO(pin.model << " against tests/data/" << pin.expected << ", kernels: " << best_kernels().isa);
  const auto got = translate(std::string(MT_MODELS_DIR) + "/" + pin.model, sentences());
  const auto expected = test::read_lines(std::string(MT_TEST_DATA_DIR) + "/" + pin.expected);
  REQUIRE(expected.size() == 40);
  REQUIRE(got.size() == expected.size());
  size_t identical = 0;
  std::string differences;
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK_FALSE(got[i].empty());
    if (got[i] == expected[i])
      ++identical;
    else
      differences += "\n  line " + std::to_string(i + 1) + ": \"" + got[i] + "\", pinned \"" + expected[i] + "\"";
  }
  std::printf("%s: %zu of %zu translations as pinned (%s kernels)\n", pin.model, identical, expected.size(),
              best_kernels().isa);
  INFO(identical << " of " << expected.size() << " identical" << differences);
  CHECK(double(identical) >= kMinPinned * double(expected.size()));
}
