// translate_text and the C API on input nobody should send, with a real
// model (the shipped int8 en-de): every sentence gets its result, blank
// ones an empty translation, and what comes out is valid UTF-8.
#include <cstring>
#include <string>
#include <vector>

#include "mt/mt.h"
#include "test_util.hpp"

using namespace mt;

namespace {

const std::string kModel = std::string(MT_MODELS_DIR) + "/en-de-tiny.int8.mtm";

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = uint8_t(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + size_t(n) > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
      const auto d = uint8_t(s[i + size_t(k)]);
      if ((d & 0xC0) != 0x80) return false;
      cp = cp << 6 | (d & 0x3F);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += size_t(n);
  }
  return true;
}

// Odd inputs, each with whether it must translate to nothing.
struct Odd {
  std::string text;
  bool blank;
};

std::vector<Odd> odd_inputs() {
  using namespace std::string_literals;
  return {
      {"", true},
      {" \t  \n ", true},
      {"\xff\xfe\xc3 broken \xe2\x82 utf-8", false},
      {"nul\0inside\0"s, false},
      {"\0"s, false},
      {"\xc0\xaf overlong \xed\xa0\x80 surrogate \xf4\x90\x80\x80 beyond", false},
      {"Ein Hund, собака, 狗, كلب, कुत्ता, 🐕", false},
      {"\xe2\x80\xae reversed \xe2\x80\xac \xe2\x81\xa6 isolate \xe2\x81\xa9 \xe2\x80\x8f", false},
      {"zero\xe2\x80\x8bwidth\xef\xbb\xbf and \xcc\x81\xcc\x81\xcc\x81", false},
      {"\x01\x02\x1b[31m \x7f", false},
      {std::string(100, 'a'), false},
      {std::string(60, '!'), false},
  };
}

}  // namespace

TEST_CASE("odd text gets one result each and blank text an empty one", "[hostile]") {
  auto model = Model::load(kModel);
  REQUIRE(model.ok());
  SessionOptions so;
  so.max_batch_size = 16;
  so.max_target_length = 12;
  auto session = Session::create(*model, so);
  REQUIRE(session.ok());
  const std::vector<Odd> odd = odd_inputs();
  std::vector<std::string_view> texts;
  for (const Odd& o : odd) texts.push_back(o.text);
  for (int beam : {1, 3}) {
    TranslateOptions to;
    to.beam_size = beam;
    to.num_hypotheses = beam == 3 ? 2 : 1;
    TextTranslations out;
    const Status s = session->translate_text(texts, to, &out);
    INFO(s.message());
    REQUIRE(s.ok());
    REQUIRE(out.size() == odd.size());
    std::vector<std::string> batched;
    for (size_t i = 0; i < odd.size(); ++i) {
      INFO("input " << i << " beam " << beam);
      REQUIRE(out[i].size() >= 1);
      CHECK_FALSE(out.truncated(i));
      for (const TextHypothesis& h : out[i]) CHECK(valid_utf8(h.text));
      if (odd[i].blank) {
        CHECK(out[i].size() == 1);
        CHECK(out[i][0].text.empty());
        CHECK(out[i][0].score == 0.0f);
      } else {
        CHECK(out[i].size() == size_t(to.num_hypotheses));
        CHECK_FALSE(out[i][0].text.empty());
      }
      batched.emplace_back(out[i][0].text);
    }
    // Alone, each gives what it gave in the batch.
    for (size_t i = 0; i < odd.size(); ++i) {
      const std::string_view one[] = {texts[i]};
      REQUIRE(session->translate_text(one, to, &out).ok());
      CHECK(std::string(out[0][0].text) == batched[i]);
    }
  }
}

TEST_CASE("a 100,000-byte sentence is refused by name or cut to fit", "[hostile]") {
  auto model = Model::load(kModel);
  REQUIRE(model.ok());
  SessionOptions so;
  so.max_batch_size = 3;
  so.max_target_length = 8;
  auto session = Session::create(*model, so);
  REQUIRE(session.ok());
  std::string huge;
  while (huge.size() < 100000) huge += "word und \xc3\xa4 ";  // multi-byte characters at the cut
  const std::string_view texts[] = {"A dog runs.", huge, "A cat sleeps."};
  TextTranslations out;
  const Status refused = session->translate_text(texts, {}, &out);
  CHECK(refused.code() == Errc::capacity_exceeded);
  CHECK_THAT(refused.message(), Catch::Contains("sentence 1 has " + std::to_string(huge.size()) + " bytes"));
  TranslateOptions cut;
  cut.truncate_long_sources = true;
  REQUIRE(session->translate_text(texts, cut, &out).ok());
  REQUIRE(out.size() == 3);
  CHECK_FALSE(out.truncated(0));
  CHECK(out.truncated(1));
  CHECK_FALSE(out.truncated(2));
  CHECK(valid_utf8(out[1][0].text));
}

TEST_CASE("a run of invalid bytes longer than the session takes is cut where it stands, in pieces in running text",
          "[hostile]") {
  SessionOptions so;
  so.max_batch_size = 2;
  so.max_text_bytes = 64;
  Session session = test::shipped_session(so);
  // "A dog" then 200 continuation bytes: no character boundary after the
  // first 5 bytes, so "back to the last boundary" would be the text before them.
  const std::string odd = "A dog" + std::string(200, '\x80');
  const std::string_view texts[] = {odd};
  TranslateOptions cut;
  cut.truncate_long_sources = true;
  TextTranslations out;
  REQUIRE(session.translate_text(texts, cut, &out).ok());
  CHECK(out.truncated(0));
  const std::string cut_text(out[0][0].text);  // results last until the next call
  const float cut_score = out[0][0].score;
  // Translated as its first 64 bytes are (the invalid ones read as U+FFFD),
  // not as the "A dog" before them: the same score bit for bit.
  const std::string_view first_bytes[] = {std::string_view(odd).substr(0, 64)};
  TextTranslations plain;
  REQUIRE(session.translate_text(first_bytes, {}, &plain).ok());
  CHECK(cut_text == plain[0][0].text);
  CHECK(cut_score == plain[0][0].score);
  // Running text is cut into pieces of at most max_text_bytes, never refused.
  const std::string running = "A cat sleeps. " + odd + " A man walks.";
  auto translated = session.translate_paragraphs(running);
  REQUIRE(translated.ok());
  CHECK(valid_utf8(translated->text));
  // A session must take at least one whole UTF-8 character.
  for (const int bytes : {1, 3}) {
    SessionOptions tiny = so;
    tiny.max_text_bytes = bytes;
    auto refused = Session::create(test::shipped_int8_model(), tiny);
    CHECK(refused.status().code() == Errc::invalid_argument);
    CHECK_THAT(refused.status().message(), Catch::Contains("max_text_bytes"));
  }
}

TEST_CASE("the C API takes odd text and bad arguments without crashing", "[hostile]") {
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(kModel.c_str(), &model) == MT_OK);
  mt_session_options so;
  mt_session_options_init(&so);
  so.max_target_length = 8;
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, &so, &session) == MT_OK);
  mt_translate_options to;
  mt_translate_options_init(&to);

  const std::vector<Odd> odd = odd_inputs();
  std::vector<const char*> texts;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < 8; ++i) texts.push_back(odd[i].text.data()), lengths.push_back(odd[i].text.size());
  REQUIRE(mt_translate_text(session, texts.data(), lengths.data(), texts.size(), &to) == MT_OK);
  for (size_t i = 0; i < texts.size(); ++i) {
    size_t count = 0;
    REQUIRE(mt_result_count(session, i, &count) == MT_OK);
    CHECK(count == 1);
    const char* text = nullptr;
    size_t length = 0;
    float score = 0;
    REQUIRE(mt_result_text(session, i, 0, &text, &length, &score) == MT_OK);
    CHECK(valid_utf8({text, length}));
    CHECK((length == 0) == odd[i].blank);
  }
  // Bad arguments: errors with messages, never a crash.
  CHECK(mt_translate_text(session, nullptr, lengths.data(), 1, &to) != MT_OK);
  CHECK(mt_translate_text(session, texts.data(), nullptr, 1, &to) != MT_OK);
  CHECK(mt_translate_text(nullptr, texts.data(), lengths.data(), 1, &to) != MT_OK);
  const char* null_text[] = {nullptr};
  const size_t one_length[] = {5};
  CHECK(mt_translate_text(session, null_text, one_length, 1, &to) != MT_OK);
  CHECK(std::strlen(mt_last_error()) > 10);
  const char* text = nullptr;
  size_t length = 0;
  float score = 0;
  CHECK(mt_result_text(session, 99, 0, &text, &length, &score) != MT_OK);
  CHECK(mt_result_text(session, 0, 99, &text, &length, &score) != MT_OK);
  to.beam_size = 0;
  CHECK(mt_translate_text(session, texts.data(), lengths.data(), 1, &to) != MT_OK);
  CHECK_THAT(mt_last_error(), Catch::Contains("beam_size = 0"));
  mt_session_free(session);
  mt_model_free(model);
}
