// Vocabularies built to hurt: work that stays linear in the text whatever the
// pieces, and scores that cannot be compared refused at load.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer_parity.hpp"

namespace mt::test {
namespace {

// BPE over "a" and "b" where every merge is an unused piece: "ab", "abab",
// "abababab", ... Encoding "abab...ab" proposes n/2 "ab" merges, then n/4
// "abab" ones, and so on; at the end each unused piece is split back into the
// pair that formed it, down to single letters. Looking up how each "ab" was
// formed by scanning the proposals from the latest made that n^2 / 4.
VocabularyData all_unused_bpe(int levels) {
  VocabularyData v;
  v.type = VocabularyType::bpe;
  v.add_dummy_prefix = false;
  v.remove_extra_whitespaces = false;
  v.pieces.push_back({"<unk>", 0.0f, PieceType::unknown});
  v.pieces.push_back({"a", -1.0f, PieceType::normal});
  v.pieces.push_back({"b", -1.0f, PieceType::normal});
  std::string piece = "ab";
  for (int level = 0; level < levels; ++level, piece += piece) {
    v.pieces.push_back({piece, -2.0f - float(level), PieceType::unused});
  }
  return v;
}

TEST_CASE("BPE with every merge unused stays linear and splits back to letters", "[tokenizer][hostile]") {
  auto tokenizer = detail::Tokenizer::create(all_unused_bpe(12));
  INFO(tokenizer.status().message());
  REQUIRE(tokenizer.ok());
  const detail::Tokenizer& t = **tokenizer;
  // 256 KiB: the old per-segment scan needed ~2e10 steps, over the encoder's
  // budget of 128 steps a byte (lib/src/tokenizer/bpe.cpp) by 500x.
  std::string text;
  for (int i = 0; i < 128 * 1024; ++i) text += "ab";
  const std::vector<int> ids = encode(t, text);  // REQUIREs success
  REQUIRE(ids.size() == text.size());
  size_t wrong = 0;
  for (size_t i = 0; i < ids.size(); ++i) wrong += ids[i] != (i % 2 == 0 ? 1 : 2);
  CHECK(wrong == 0);
}

TEST_CASE("vocabulary scores that are NaN or infinite are refused, naming the piece", "[tokenizer][hostile]") {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    VocabularyData v = all_unused_bpe(2);
    v.pieces[2].score = bad;
    const Status checked = v.validate();
    INFO(checked.message());
    CHECK(checked.code() == Errc::invalid_model);
    CHECK_THAT(checked.message(), Catch::Contains("piece 2 (\"b\")") && Catch::Contains("must be finite"));
    CHECK_FALSE(detail::Tokenizer::create(v).ok());

    // A model file carrying it is refused at load, not only by the writer.
    ModelConfig config = tiny_config();
    config.source_vocab_size = config.target_vocab_size = int(v.pieces.size());
    auto writer = random_model_writer(config, 5);
    REQUIRE(writer.ok());
    writer->set_vocabulary(all_unused_bpe(2));
    auto bytes = writer->serialize();
    REQUIRE(bytes.ok());
    // Patch the score in the serialized file: find -1.0f of piece "b"... the
    // writer stores scores as one float array; its second -1.0f is piece 2.
    std::vector<uint8_t>& file = bytes.value();
    const float minus_one = -1.0f;
    size_t found = 0, at = 0;
    for (size_t i = 0; i + 4 <= file.size(); i += 4) {
      if (std::memcmp(file.data() + i, &minus_one, 4) == 0 && std::memcmp(file.data() + i + 4, &minus_one, 4) != 0 &&
          i >= 4 && std::memcmp(file.data() + i - 4, &minus_one, 4) == 0) {
        at = i;
        ++found;
      }
    }
    REQUIRE(found == 1);
    std::memcpy(file.data() + at, &bad, 4);
    AlignedBytes image(file.size());
    std::memcpy(image.data, file.data(), file.size());
    auto loaded = Model::from_buffer(image.span(file.size()));
    INFO(loaded.status().message());
    REQUIRE_FALSE(loaded.ok());
    CHECK_THAT(loaded.status().message(), Catch::Contains("must be finite"));
  }
}

}  // namespace
}  // namespace mt::test
