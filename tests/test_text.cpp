// Text in, text out: a model file carrying its vocabulary translates UTF-8
// through the session, the C API and mt_translate's library path.
#include <cstring>

#include "mt/mt.h"
#include "corpus_vocabulary.hpp"
#include "line_break_model.hpp"
#include "test_util.hpp"
#include "tokenizer/line_breaks.hpp"
#include "tokenizer/tokenizer.hpp"
#include "vocab/vocab_train.hpp"
#include "access.hpp"

using namespace mt;

namespace {

// A unigram vocabulary of 500 pieces trained once on tests/data/text/corpus.txt.
const VocabularyData& corpus_vocabulary() {
  static const VocabularyData vocab = test::train_corpus_vocabulary(500, /*byte_fallback=*/true);
  return vocab;
}

ModelConfig config_for(const VocabularyData& v) {
  ModelConfig c = test::tiny_config();
  c.source_vocab_size = c.target_vocab_size = int(v.pieces.size());
  return c;
}

std::shared_ptr<const Model> text_model(uint64_t seed, uint32_t format_version = kModelFormatVersion) {
  const VocabularyData& v = corpus_vocabulary();
  auto writer = random_model_writer(config_for(v), seed);
  REQUIRE(writer.ok());
  writer->set_vocabulary(v);
  writer->set_format_version(format_version);
  const std::string version = format_version == kModelFormatVersion ? "" : "-v" + std::to_string(format_version);
  const std::string path = test::scratch_path("text-" + std::to_string(seed) + version + ".mtm");
  REQUIRE(writer->write(path).ok());
  auto model = Model::load(path);
  INFO(model.status().message());
  REQUIRE(model.ok());
  return model.value();
}

Session text_session(std::shared_ptr<const Model> model, int max_text_bytes = 400) {
  SessionOptions o;
  o.max_batch_size = 8;
  o.max_source_length = 64;
  o.max_target_length = 16;
  o.max_text_bytes = max_text_bytes;
  auto s = Session::create(std::move(model), o);
  INFO(s.status().message());
  REQUIRE(s.ok());
  return std::move(s.value());
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

}  // namespace

TEST_CASE("the vocabulary survives a write -> load round trip in format versions 1 and 2", "[text]") {
  const uint32_t version = GENERATE(1u, kModelFormatVersion);
  auto model = text_model(1, version);
  CHECK(model->format_version() == version);
  const VocabularyData* loaded = model->vocabulary();
  REQUIRE(loaded != nullptr);
  const VocabularyData& v = corpus_vocabulary();
  REQUIRE(loaded->pieces.size() == v.pieces.size());
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    CHECK(loaded->pieces[i].text == v.pieces[i].text);
    CHECK(loaded->pieces[i].score == v.pieces[i].score);
    CHECK(loaded->pieces[i].type == v.pieces[i].type);
  }
  CHECK(loaded->precompiled_charsmap == v.precompiled_charsmap);
  CHECK(loaded->normalization_name == "nmt_nfkc");
  CHECK(loaded->byte_fallback);
  CHECK(loaded->type == VocabularyType::unigram);
  REQUIRE(detail::tokenizer_of(*model) != nullptr);
}

TEST_CASE("a model without a vocabulary refuses text", "[text]") {
  auto model = test::random_model(test::tiny_config(), 2);
  CHECK(model->vocabulary() == nullptr);
  auto session = Session::create(model, {});
  REQUIRE(session.ok());
  std::string_view one[] = {"hello"};
  TextTranslations out;
  const Status s = session->translate_text(one, {}, &out);
  CHECK_THAT(s.message(), Catch::Contains("no vocabulary"));
}

TEST_CASE("a model loaded without its vocabulary translates ids and refuses text", "[text]") {
  auto with = text_model(4);
  LoadOptions options;
  options.load_vocabulary = false;
  auto model = Model::load(test::scratch_path("text-4.mtm"), options);
  REQUIRE(model.ok());
  CHECK((*model)->vocabulary() == nullptr);
  CHECK(detail::tokenizer_of(**model) == nullptr);
  Session ids_only = text_session(model.value());
  Session full = text_session(with);
  const std::vector<int32_t> sentence = {40, 41, 42, 43};
  std::span<const int32_t> one[] = {sentence};
  Translations a, b;
  REQUIRE(ids_only.translate(one, {}, &a).ok());
  REQUIRE(full.translate(one, {}, &b).ok());
  CHECK(std::vector<int32_t>(a[0][0].tokens.begin(), a[0][0].tokens.end()) ==
        std::vector<int32_t>(b[0][0].tokens.begin(), b[0][0].tokens.end()));
  std::string_view text[] = {"hello"};
  TextTranslations out;
  CHECK_THAT(ids_only.translate_text(text, {}, &out).message(),
             Catch::Contains("no vocabulary (or was loaded without it)"));
}

TEST_CASE("vocabularies that do not fit the config are refused by name", "[text]") {
  const VocabularyData& v = corpus_vocabulary();
  const std::string path = test::scratch_path("bad-vocab.mtm");
  SECTION("size") {
    ModelConfig c = config_for(v);
    c.source_vocab_size = c.target_vocab_size = int(v.pieces.size()) + 1;
    auto writer = random_model_writer(c, 3);
    REQUIRE(writer.ok());
    writer->set_vocabulary(v);
    REQUIRE(writer->write(path).ok());
    CHECK_THAT(Model::load(path).status().message(),
               Catch::Contains("vocabulary has " + std::to_string(v.pieces.size()) + " pieces"));
  }
  SECTION("special ids") {
    ModelConfig c = config_for(v);
    c.unk_id = 10;
    auto writer = random_model_writer(c, 3);
    REQUIRE(writer.ok());
    writer->set_vocabulary(v);
    REQUIRE(writer->write(path).ok());
    CHECK_THAT(Model::load(path).status().message(), Catch::Contains("'unk_id' = 10"));
  }
  SECTION("normalization expansion") {
    // Found by the corruption sweep: one flipped byte made this 8388621, and
    // the session plan (max_text_bytes times it) went past the address space.
    VocabularyData damaged = v;
    damaged.normalized_expansion = 8388621;
    CHECK_THAT(damaged.validate().message(), Catch::Contains("normalized_expansion 8388621 is implausible"));
    damaged.normalized_expansion = VocabularyData::kMaxNormalizedExpansion;
    CHECK(damaged.validate().ok());
  }
}

TEST_CASE("text translation equals tokenize -> translate ids -> detokenize", "[text]") {
  auto model = text_model(4);
  Session session = text_session(model);
  const std::vector<std::string> lines = {"A man is walking along the river.",
                                          "",
                                          "Zwei Kinder sitzt neben einem roten Haus.",
                                          "Grüße aus Köln!",
                                          "  spaces   everywhere  ",
                                          "emoji 😀 and 中文",
                                          "\xff\xfe invalid \xc3"};
  std::vector<std::string_view> views(lines.begin(), lines.end());
  for (int beam : {1, 3}) {
    TranslateOptions options;
    options.beam_size = beam;
    options.num_hypotheses = beam;
    TextTranslations texts;
    const Status s = session.translate_text(views, options, &texts);
    INFO(s.message());
    REQUIRE(s.ok());
    REQUIRE(texts.size() == lines.size());

    const detail::Tokenizer& tok = *detail::tokenizer_of(*model);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::vector<std::byte> ws(tok.encode_workspace_bytes(lines[i].size()));
      std::vector<int32_t> ids(tok.max_encoded_ids(lines[i].size()));
      size_t n = 0;
      REQUIRE(tok.encode(lines[i], ws, ids, &n).ok());
      ids.resize(n);
      std::vector<std::span<const int32_t>> one = {ids};
      Translations id_results;
      Session alone = text_session(model);
      REQUIRE(alone.translate(one, options, &id_results).ok());
      REQUIRE(id_results[0].size() == texts[i].size());
      CHECK_FALSE(texts.truncated(i));
      for (size_t k = 0; k < texts[i].size(); ++k) {
        std::vector<char> buf(tok.max_decoded_bytes(id_results[0][k].tokens.size()));
        size_t len = 0;
        REQUIRE(tok.decode(id_results[0][k].tokens, buf, &len).ok());
        len = detail::replace_line_breaks(buf.data(), len);  // a translation is one line
        CHECK(texts[i][k].text == std::string_view(buf.data(), len));
        CHECK(texts[i][k].score == id_results[0][k].score);
        CHECK(valid_utf8(texts[i][k].text));
      }
    }
  }
}

TEST_CASE("over-long text is refused or truncated as asked", "[text]") {
  auto model = text_model(5);
  Session session = text_session(model, 40);
  const std::string long_line = "Ein Mann geht entlang dem Fluss und ein junges Mädchen malt einen hohen Baum.";
  std::string_view views[] = {"A dog.", long_line};
  TextTranslations out;
  const Status refused = session.translate_text(views, {}, &out);
  CHECK(refused.code() == Errc::capacity_exceeded);
  CHECK_THAT(refused.message(), Catch::Contains("sentence 1 has 78 bytes"));
  TranslateOptions truncate;
  truncate.truncate_long_sources = true;
  REQUIRE(session.translate_text(views, truncate, &out).ok());
  REQUIRE(out.size() == 2);
  CHECK_FALSE(out.truncated(0));
  CHECK(out.truncated(1));

  // Too many tokens, within the byte limit: same choice.
  SessionOptions few;
  few.max_source_length = 4;
  few.max_text_bytes = 400;
  auto small = Session::create(model, few);
  REQUIRE(small.ok());
  std::string_view one[] = {long_line};
  CHECK_THAT(small->translate_text(one, {}, &out).message(), Catch::Contains("sentence 0 has"));
  REQUIRE(small->translate_text(one, truncate, &out).ok());
  CHECK(out.truncated(0));
}

TEST_CASE("the C API translates text", "[text]") {
  auto model = text_model(6);
  mt_model* m = nullptr;
  REQUIRE(mt_model_load(test::scratch_path("text-6.mtm").c_str(), &m) == MT_OK);
  mt_session* s = nullptr;
  REQUIRE(mt_session_create(m, nullptr, &s) == MT_OK);
  const char* texts[] = {"A woman looks at the old bridge.", "Der Hund"};
  const size_t lengths[] = {std::strlen(texts[0]), std::strlen(texts[1])};
  REQUIRE(mt_translate_text(s, texts, lengths, 2, nullptr) == MT_OK);
  size_t count = 0;
  REQUIRE(mt_result_count(s, 1, &count) == MT_OK);
  CHECK(count == 1);
  const char* text = nullptr;
  size_t length = 0;
  float score = 0;
  REQUIRE(mt_result_text(s, 0, 0, &text, &length, &score) == MT_OK);
  CHECK(valid_utf8({text, length}));
  CHECK(mt_result_hypothesis(s, 0, 0, nullptr, nullptr, nullptr) == MT_ERROR_INVALID_ARGUMENT);
  // A length no text can have is refused by max_text_bytes, before any byte is read.
  for (const size_t huge : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 2}) {
    const size_t too_long[] = {huge};
    CHECK(mt_translate_text(s, texts, too_long, 1, nullptr) == MT_ERROR_CAPACITY_EXCEEDED);
  }
  REQUIRE(mt_translate_text(s, texts, lengths, 2, nullptr) == MT_OK);
  int truncated = 1;
  REQUIRE(mt_result_truncated(s, 0, &truncated) == MT_OK);
  CHECK(truncated == 0);
  mt_session_free(s);
  mt_model_free(m);
}

TEST_CASE("a normalization bound that is too small fails cleanly", "[text]") {
  // The writer stores the charsmap's expansion so loading skips walking it; a
  // file that understates it must give an error, never an overflow.
  VocabularyData v = corpus_vocabulary();
  v.normalized_expansion = 3;  // NFKC turns U+FDFA (3 bytes) into 33
  auto tok = detail::Tokenizer::create(v);
  REQUIRE(tok.ok());
  const std::string text = "\xEF\xB7\xBA\xEF\xB7\xBA\xEF\xB7\xBA";
  std::vector<std::byte> ws((*tok)->encode_workspace_bytes(text.size()));
  std::vector<int32_t> ids((*tok)->max_encoded_ids(text.size()));
  size_t n = 0;
  const Status s = (*tok)->encode(text, ws, ids, &n);
  CHECK(s.code() == Errc::capacity_exceeded);
  // With the true bound (computed when 0) it encodes.
  v.normalized_expansion = 0;
  auto exact = detail::Tokenizer::create(v);
  REQUIRE(exact.ok());
  std::vector<std::byte> ws2((*exact)->encode_workspace_bytes(text.size()));
  std::vector<int32_t> ids2((*exact)->max_encoded_ids(text.size()));
  CHECK((*exact)->encode(text, ws2, ids2, &n).ok());
  CHECK(n > 3);
}

// --- A translation is one line (the contract of TextHypothesis::text).

namespace {

bool has_line_break(std::string_view s) {
  for (const std::string_view b : {"\n", "\r", "\v", "\f", "\xC2\x85", "\xE2\x80\xA8", "\xE2\x80\xA9"}) {
    if (s.find(b) != std::string_view::npos) return true;
  }
  return false;
}

std::string one_line(std::string s) {
  s.resize(detail::replace_line_breaks(s.data(), s.size()));
  return s;
}

}  // namespace

TEST_CASE("line breaks become one space each, in place", "[text]") {
  CHECK(one_line("") == "");
  CHECK(one_line("plain text") == "plain text");
  CHECK(one_line("a\nb\rc\r\nd\ve\ff") == "a b c d e f");
  CHECK(one_line("\n\n") == "  ");
  CHECK(one_line("\r\r\n") == "  ");
  CHECK(one_line("x\xC2\x85y\xE2\x80\xA8z\xE2\x80\xA9") == "x y z ");
  // Other characters that share a lead byte stay, and so do truncated ones.
  CHECK(one_line("\xC2\xA0\xE2\x80\xA7\xE2\x80\xAA\xE2\x96\x81") == "\xC2\xA0\xE2\x80\xA7\xE2\x80\xAA\xE2\x96\x81");
  CHECK(one_line("\xC2") == "\xC2");
  CHECK(one_line("\xE2\x80") == "\xE2\x80");
  CHECK(one_line("tab\tstays") == "tab\tstays");
}

TEST_CASE("a translation is one line whatever the vocabulary decodes to", "[text][hostile]") {
  const std::string path = test::scratch_path("line-breaks.mtm");
  const Status written = test::write_line_break_model(path, 7);
  INFO(written.message());
  REQUIRE(written.ok());
  auto model = Model::load(path);
  INFO(model.status().message());
  REQUIRE(model.ok());
  SessionOptions o;
  o.max_batch_size = 6;
  o.max_target_length = 24;
  o.max_source_length = 24;
  auto session = Session::create(*model, o);
  INFO(session.status().message());
  REQUIRE(session.ok());
  const std::vector<std::string> lines = {"a", "\n", "a\nb\r\nc", "\xE2\x80\xA8 y \xC2\x85", "yyyy", "\x0B\x0C"};
  const std::vector<std::string_view> views(lines.begin(), lines.end());
  const detail::Tokenizer& tok = *detail::tokenizer_of(**model);
  size_t raw_with_breaks = 0, hypotheses = 0;
  for (int beam : {1, 4}) {
    TranslateOptions t;
    t.beam_size = beam;
    t.num_hypotheses = beam;
    t.min_decoding_length = 4;
    TextTranslations texts;
    REQUIRE(session->translate_text(views, t, &texts).ok());
    REQUIRE(texts.size() == lines.size());
    // The same sources as ids give the tokens behind each text.
    Translations ids;
    std::vector<std::vector<int32_t>> encoded;
    for (const std::string& line : lines) {
      std::vector<std::byte> ws(tok.encode_workspace_bytes(line.size()));
      std::vector<int32_t> e(tok.max_encoded_ids(line.size()));
      size_t n = 0;
      REQUIRE(tok.encode(line, ws, e, &n).ok());
      e.resize(n);
      encoded.push_back(e);
    }
    auto alone = Session::create(*model, o);
    REQUIRE(alone.ok());
    const auto spans = test::spans(encoded);
    REQUIRE(alone->translate(spans, t, &ids).ok());
    for (size_t i = 0; i < lines.size(); ++i) {
      REQUIRE(texts[i].size() == ids[i].size());
      for (size_t k = 0; k < texts[i].size(); ++k) {
        std::string raw(tok.max_decoded_bytes(ids[i][k].tokens.size()), '\0');
        size_t length = 0;
        REQUIRE(tok.decode(ids[i][k].tokens, {raw.data(), raw.size()}, &length).ok());
        raw.resize(length);
        raw_with_breaks += has_line_break(raw);
        ++hypotheses;
        INFO("sentence " << i << " hypothesis " << k);
        CHECK_FALSE(has_line_break(texts[i][k].text));
        CHECK(texts[i][k].text == one_line(raw));
      }
    }
  }
  // The model really does emit line breaks: otherwise this tested nothing.
  INFO(raw_with_breaks << " of " << hypotheses << " raw decodings hold a line break");
  CHECK(raw_with_breaks * 2 > hypotheses);

  // Through the C API too.
  mt_model* m = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &m) == MT_OK);
  mt_session* s = nullptr;
  REQUIRE(mt_session_create(m, nullptr, &s) == MT_OK);
  const char* texts[] = {"a", "y\ny"};
  const size_t lengths[] = {1, 3};
  mt_translate_options t;
  mt_translate_options_init(&t);
  t.min_decoding_length = 4;
  REQUIRE(mt_translate_text(s, texts, lengths, 2, &t) == MT_OK);
  for (size_t i = 0; i < 2; ++i) {
    const char* text = nullptr;
    size_t length = 0;
    REQUIRE(mt_result_text(s, i, 0, &text, &length, nullptr) == MT_OK);
    CHECK(length > 0);
    CHECK_FALSE(has_line_break({text, length}));
  }
  mt_session_free(s);
  mt_model_free(m);
}

TEST_CASE("byte pieces that decode to line breaks give one line too", "[text][hostile]") {
  auto tokenizer = detail::Tokenizer::create(test::line_break_vocabulary(/*byte_fallback=*/true));
  REQUIRE(tokenizer.ok());
  const detail::Tokenizer& tok = **tokenizer;
  const auto byte = [](int b) { return int32_t(3 + b); };  // after <unk>, <s>, </s>
  const std::vector<int32_t> ids = {byte(0x0A), byte('x'),  byte(0x0D), byte(0x0A), byte(0xE2), byte(0x80),
                                    byte(0xA8), byte(0xC2), byte(0x85), byte(0x0B), byte(0x0C), 0};
  std::string raw(tok.max_decoded_bytes(ids.size()), '\0');
  size_t length = 0;
  REQUIRE(tok.decode(ids, {raw.data(), raw.size()}, &length).ok());
  raw.resize(length);
  CHECK(raw == "\nx\r\n\xE2\x80\xA8\xC2\x85\v\f\n");
  CHECK(one_line(raw) == " x      ");  // CR LF is one break

  // And through a session of a model with those pieces: no text holds a break.
  const std::string path = test::scratch_path("line-breaks-bytes.mtm");
  ModelConfig config = test::line_break_config();
  REQUIRE(config.use_vocabulary(test::line_break_vocabulary(true)).ok());
  auto writer = random_model_writer(config, 8);
  REQUIRE(writer.ok());
  writer->set_vocabulary(test::line_break_vocabulary(true));
  REQUIRE(writer->write(path).ok());
  auto model = Model::load(path);
  REQUIRE(model.ok());
  SessionOptions o;
  o.max_target_length = 24;
  auto session = Session::create(*model, o);
  REQUIRE(session.ok());
  const std::string_view lines[] = {"a\n", "\xE2\x80\xA8", "y y y"};
  TranslateOptions t;
  t.beam_size = 4;
  t.num_hypotheses = 4;
  t.min_decoding_length = 8;
  TextTranslations texts;
  REQUIRE(session->translate_text(lines, t, &texts).ok());
  for (size_t i = 0; i < texts.size(); ++i) {
    for (const TextHypothesis& h : texts[i]) CHECK_FALSE(has_line_break(h.text));
  }
}
