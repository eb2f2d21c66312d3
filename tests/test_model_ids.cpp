// Models whose ids are not their SentencePiece model's (OPUS-MT's vocab.json,
// fairseq dictionaries): the source vocabulary encodes into its model_ids,
// a target vocabulary in model-id order decodes (format version 3).
#include <algorithm>

#include "corpus_vocabulary.hpp"
#include "mt/languages.hpp"
#include "remapped_model.hpp"
#include "test_util.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace mt;

namespace {

// Without byte fallback, so that unknown text stays unknown runs.
const VocabularyData& corpus_vocabulary() {
  static const VocabularyData vocab = test::train_corpus_vocabulary(300, /*byte_fallback=*/false);
  return vocab;
}

using test::piece_of;
using test::Remapped;

Remapped remapped(int V, uint32_t seed) { return test::remapped(corpus_vocabulary(), V, seed); }

Expected<std::shared_ptr<const Model>> write_and_load(const Remapped& r, const std::string& name) {
  auto writer = test::remapped_writer(r, 5);
  REQUIRE(writer.ok());
  const std::string path = test::scratch_path(name);
  const Status written = writer->write(path);
  INFO(written.message());
  REQUIRE(written.ok());
  return Model::load(path);
}

}  // namespace

TEST_CASE("a vocabulary with model ids encodes into them, the target vocabulary decodes", "[text]") {
  const Remapped r = remapped(420, 7);
  auto loaded = write_and_load(r, "model-ids.mtm");
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  const Model& model = *loaded.value();
  CHECK(model.format_version() == 3);
  REQUIRE(model.target_vocabulary() != nullptr);
  CHECK(model.target_vocabulary()->pieces.size() == 420);
  CHECK(model.vocabulary()->model_ids == r.source.model_ids);

  auto plain_tokenizer = detail::Tokenizer::create(corpus_vocabulary());
  REQUIRE(plain_tokenizer.ok());
  const detail::Tokenizer& plain = *plain_tokenizer.value();
  const std::string lacking_piece = r.source.pieces[size_t(r.lacking[0])].text.substr(3);  // drop the "▁"
  const std::vector<std::string> texts = {"A man is walking along the river.", "Grüße aus Köln!", "emoji 😀 and 中文",
                                          "the " + lacking_piece + " of " + lacking_piece};
  for (const std::string& text : texts) {
    INFO(text);
    std::vector<std::byte> ws(plain.encode_workspace_bytes(text.size()));
    std::vector<int32_t> pieces(plain.max_encoded_ids(text.size()));
    size_t n = 0;
    REQUIRE(plain.encode(text, ws, pieces, &n).ok());
    pieces.resize(n);
    std::vector<int32_t> expected, kept_pieces;
    for (const int32_t p : pieces) expected.push_back(r.source.model_ids[size_t(p)]);

    std::vector<int32_t> ids;
    REQUIRE(model.encode(text, &ids).ok());
    CHECK(ids == expected);
    if (&text == &texts.back()) CHECK(std::count(ids.begin(), ids.end(), r.config.unk_id) >= 2);  // the lacking piece

    // Decoding model ids gives what SentencePiece decodes from the pieces,
    // but a piece the model lacks, which became unk.
    std::string decoded, plain_decoded;
    REQUIRE(model.decode(ids, &decoded).ok());
    std::vector<char> buf(plain.max_decoded_bytes(pieces.size()));
    for (int32_t& p : pieces) {
      if (std::find(r.lacking.begin(), r.lacking.end(), p) != r.lacking.end())
        p = piece_of(corpus_vocabulary(), PieceType::unknown);
    }
    REQUIRE(plain.decode(pieces, buf, &n).ok());
    CHECK(decoded == std::string(buf.data(), n));
  }
  // An id no piece encodes to still decodes, to its target piece.
  int32_t unmapped = 0;
  while (r.target.pieces[size_t(unmapped)].text.rfind("extra", 0) != 0) ++unmapped;
  std::string extra;
  REQUIRE(model.decode(std::vector<int32_t>{r.config.eos_id, unmapped}, &extra).ok());
  CHECK(extra == "extra" + std::to_string(unmapped));

  SECTION("text translation tokenizes, translates and decodes through them") {
    SessionOptions o;
    o.max_source_length = 64;
    o.max_target_length = 12;
    auto session = Session::create(loaded.value(), o);
    REQUIRE(session.ok());
    const std::vector<std::string_view> lines = {"A man is walking along the river."};
    TextTranslations texts;
    REQUIRE(session->translate_text(lines, {}, &texts).ok());
    std::vector<int32_t> ids;
    REQUIRE(model.encode(lines[0], &ids).ok());
    Translations results;
    const std::vector<std::span<const int32_t>> one = {ids};
    REQUIRE(session->translate(one, {}, &results).ok());
    std::string text;
    REQUIRE(model.decode(results[0][0].tokens, &text, true).ok());
    CHECK(texts[0][0].text == text);
  }
}

TEST_CASE("unknown text with a model id of its own gets it, as transformers' vocab.json lookup does", "[text]") {
  Remapped r = remapped(420, 9);
  const int32_t own = r.source.unknown_ids.front().model_id;
  r.source.unknown_ids.push_back({"\xD0\xB6\xD0\xB6", own});  // "жж", sorted after the "extraN" texts
  auto loaded = write_and_load(r, "unknown-ids.mtm");
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  const Model& model = *loaded.value();
  const auto encode = [&](const std::string& text) {
    std::vector<int32_t> ids;
    REQUIRE(model.encode(text, &ids).ok());
    return ids;
  };
  const std::vector<int32_t> space = encode(" ");
  const std::vector<int32_t> two = encode("\xD0\xB6\xD0\xB6"), one = encode("\xD0\xB6"),
                             three = encode("\xD0\xB6\xD0\xB6\xD0\xB6");
  REQUIRE(!two.empty());
  CHECK(two.back() == own);              // the run "жж" is in the table
  CHECK(one.back() == r.config.unk_id);  // "ж" and "жжж" are not
  CHECK(three.back() == r.config.unk_id);
  CHECK(two.size() == one.size());  // one id for the run, as SentencePiece merges it
  const std::vector<int32_t> inside = encode("a \xD0\xB6\xD0\xB6 b");
  CHECK(std::count(inside.begin(), inside.end(), own) == 1);

  SECTION("unsorted or orphaned unknown texts are refused") {
    Remapped bad = remapped(420, 9);
    std::swap(bad.source.unknown_ids.front(), bad.source.unknown_ids.back());
    auto writer = test::remapped_writer(bad, 5);
    REQUIRE(writer.ok());
    CHECK_THAT(writer->serialize().status().message(), Catch::Contains("duplicated or out of order"));
    bad = remapped(420, 9);
    bad.source.unknown_ids.front().model_id = 420;
    CHECK_THAT(write_and_load(bad, "unknown-range.mtm").status().message(),
               Catch::Contains("outside the source vocabulary"));
  }
}

TEST_CASE("model ids that do not fit the model are refused by name", "[text]") {
  Remapped r = remapped(420, 8);
  SECTION("model ids without a target vocabulary to decode with") {
    auto writer = random_model_writer(r.config, 5);
    REQUIRE(writer.ok());
    writer->set_vocabulary(r.source);
    CHECK_THAT(writer->serialize().status().message(), Catch::Contains("needs a target vocabulary"));
  }
  SECTION("a model id outside the source vocabulary") {
    r.source.model_ids[10] = 420;
    CHECK_THAT(write_and_load(r, "ids-range.mtm").status().message(), Catch::Contains("model id 420, outside"));
  }
  SECTION("the unknown piece not at unk_id") {
    r.source.model_ids[size_t(piece_of(r.source, PieceType::unknown))] = (r.config.unk_id + 1) % 420;
    CHECK_THAT(write_and_load(r, "ids-unk.mtm").status().message(), Catch::Contains("unknown piece has model id"));
  }
  SECTION("a target vocabulary of another size") {
    r.target.pieces.pop_back();
    CHECK_THAT(write_and_load(r, "ids-target-size.mtm").status().message(),
               Catch::Contains("target vocabulary has 419 pieces"));
  }
  SECTION("a count of model ids other than the pieces'") {
    r.source.model_ids.pop_back();
    auto writer = random_model_writer(r.config, 5);
    REQUIRE(writer.ok());
    writer->set_vocabulary(r.source);
    writer->set_target_vocabulary(r.target);
    CHECK_THAT(writer->serialize().status().message(),
               Catch::Contains("but " + std::to_string(r.source.model_ids.size()) + " model ids"));
  }
  SECTION("an explicit older format version") {
    r.config.stored_positions = false;  // so that the vocabulary is the first version 3 feature
    r.config.suppressed_ids.clear();
    auto writer = random_model_writer(r.config, 5);
    REQUIRE(writer.ok());
    writer->set_vocabulary(r.source);
    writer->set_target_vocabulary(r.target);
    writer->set_format_version(2);
    CHECK_THAT(writer->serialize().status().message(), Catch::Contains("vocabulary model_ids needs format version 3"));
  }
}

TEST_CASE("language tokens resolve to text, source and target prefixes by token or code", "[text]") {
  const ModelConfig config = test::tiny_config();
  auto with_languages = [&](const std::string& tokens, const std::string& placement) {
    auto writer = random_model_writer(config, 5);
    REQUIRE(writer.ok());
    ModelMetadata metadata;
    metadata.extra = {{"language_tokens", tokens}, {"language_placement", placement}};
    writer->set_metadata(metadata);
    auto bytes = writer->serialize();
    REQUIRE(bytes.ok());
    const std::string path = test::scratch_path("languages-" + placement + ".mtm");
    REQUIRE(writer->write(path).ok());
    auto model = Model::load(path);
    REQUIRE(model.ok());
    return model.value();
  };
  SECTION("M2M-100 and NLLB: source and target prefixes") {
    auto model = with_languages("__en__=40 __fr__=41 fra_Latn=42 broken= __xx__=99999", "prefix");
    const auto tokens = language_tokens(*model);
    REQUIRE(tokens.size() == 3);  // the damaged and out-of-range entries are skipped
    auto p = language_prefixes(*model, "en", "fr");
    REQUIRE(p.ok());
    CHECK(p->source_prefix == std::vector<int32_t>{40});
    CHECK(p->target_prefix == std::vector<int32_t>{41});
    p = language_prefixes(*model, "", "fra_Latn");
    REQUIRE(p.ok());
    CHECK(p->source_prefix.empty());
    CHECK(p->target_prefix == std::vector<int32_t>{42});
    CHECK_THAT(language_prefixes(*model, "en", "de").status().message(),
               Catch::Contains("target language 'de': not one of this model's languages (__en__ __fr__ fra_Latn)"));
  }
  SECTION("Marian: the target's code starts the text") {
    auto model = with_languages(">>fra<<=40 >>deu<<=41", "source_text");
    auto p = language_prefixes(*model, "", "deu");
    REQUIRE(p.ok());
    CHECK(p->source_prefix == std::vector<int32_t>{41});
    CHECK(p->target_prefix.empty());
    CHECK_THAT(language_prefixes(*model, "en", "deu").status().message(), Catch::Contains("target language alone"));
  }
  SECTION("a model of one language pair") {
    auto model = with_languages("", "");
    CHECK(language_tokens(*model).empty());
    CHECK(language_prefixes(*model, "", "").ok());
    CHECK_THAT(language_prefixes(*model, "", "fr").status().message(), Catch::Contains("no language tokens"));
  }
}
