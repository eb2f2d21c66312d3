// Session::translate_paragraphs on the shipped English-German model: the 40
// committed sentences joined into paragraphs translate exactly as they do
// alone, with the source's bytes between them kept; long sentences are
// translated in pieces; sinks, options and odd texts.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "mt/mt.h"
#include "mt/mt.hpp"
#include "test_util.hpp"

using mt::test::read_lines;

namespace {

mt::Session make_session(int batch, int threads, int max_text_bytes = 4096) {
  mt::SessionOptions o;
  o.max_batch_size = batch;
  o.num_threads = threads;
  o.max_text_bytes = max_text_bytes;
  return mt::test::shipped_session(o);
}

// The 40 sentences as 8 paragraphs of 5, separated as text in the wild is:
// one or two spaces, a tab, a wrapped line; paragraphs by blank lines.
std::string joined(const std::vector<std::string>& sentences, std::vector<std::string>* gaps) {
  const char* within[] = {" ", "  ", "\n", " \t", "\n  "};
  std::string text = "  ";  // leading spaces are kept too
  gaps->push_back(text);
  for (size_t i = 0; i < sentences.size(); ++i) {
    text += sentences[i];
    const bool paragraph_end = i % 5 == 4;
    const std::string gap = i + 1 == sentences.size() ? "\n" : paragraph_end ? "\n\n" : within[i % 5];
    text += gap;
    gaps->push_back(gap);
  }
  return text;
}

}  // namespace

TEST_CASE("the shipped sentences joined into paragraphs translate as they do alone, gaps kept", "[paragraphs]") {
  const std::vector<std::string> sources = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  const std::vector<std::string> expected = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.de-tiny-int8-greedy");
  REQUIRE(sources.size() == 40);
  REQUIRE(expected.size() == 40);
  std::vector<std::string> gaps;
  const std::string text = joined(sources, &gaps);

  const int batch = GENERATE(1, 3, 16);
#ifdef __EMSCRIPTEN__
  const int threads = 1;  // the WebAssembly build has no threads
#else
  const int threads = GENERATE(1, 2);
#endif
  INFO("batch " << batch << " threads " << threads);
  mt::Session session = make_session(batch, threads);
  mt::ParagraphOptions po;
  po.mode = mt::SplitMode::wrapped;
  const mt::TranslateOptions limits = mt::test::pinned_options();
  const auto result = session.translate_paragraphs(text, po, limits);
  REQUIRE(result.ok());
  const std::vector<mt::TranslatedSentence>& s = result->sentences;
  REQUIRE(s.size() == 40);
  std::string rebuilt;
  for (size_t i = 0; i < s.size(); ++i) {
    INFO("sentence " << i);
    CHECK(text.substr(s[i].source_begin, s[i].source_end - s[i].source_begin) == sources[i]);
    CHECK(result->text.substr(s[i].target_begin, s[i].target_end - s[i].target_begin) == expected[i]);
    CHECK(s[i].paragraph == i / 5);
    CHECK(s[i].pieces == 1);
    CHECK_FALSE(s[i].truncated);
    // Between translations, the source's own bytes.
    const size_t gap_begin = i == 0 ? 0 : s[i - 1].target_end;
    CHECK(result->text.substr(gap_begin, s[i].target_begin - gap_begin) == gaps[i]);
    rebuilt += gaps[i] + expected[i];
  }
  rebuilt += gaps.back();
  CHECK(result->text == rebuilt);

  SECTION("lines mode: each line a paragraph, the same translations") {
    po.mode = mt::SplitMode::lines;
    const auto lines = session.translate_paragraphs(text, po, limits);
    REQUIRE(lines.ok());
    CHECK(lines->text == rebuilt);
    CHECK(lines->sentences.size() == 40);
  }
}

TEST_CASE("a 2,000-token sentence is translated in pieces, not refused", "[paragraphs]") {
  std::string words;
  const char* vocabulary[] = {"a", "dog", "runs", "in", "the", "park", "with", "two", "small", "children"};
  for (int i = 0; i < 2000; ++i) words += std::string(i ? " " : "") + vocabulary[(i * 7) % 10];
  const std::string text = "Before it. The " + words + ". After it.";
  const int max_text_bytes = GENERATE(4096, 300, 20000);
  INFO("max_text_bytes " << max_text_bytes);
  mt::Session session = make_session(4, 1, max_text_bytes);

  // Alone it is over the session's limits.
  mt::TextTranslations plain;
  const std::string_view alone[] = {words};
  CHECK(session.translate_text(alone, {}, &plain).code() == mt::Errc::capacity_exceeded);

  const auto result = session.translate_paragraphs(text);
  REQUIRE(result.ok());
  REQUIRE(result->sentences.size() == 3);
  const mt::TranslatedSentence& long_one = result->sentences[1];
  CHECK(long_one.pieces >= 2000 / 127);
  CHECK_FALSE(long_one.truncated);
  CHECK(long_one.target_end - long_one.target_begin > 1000);
  CHECK(result->sentences[0].pieces == 1);
  CHECK(result->sentences[2].pieces == 1);
  // The sentences around it translate as they do alone.
  for (const size_t i : {size_t(0), size_t(2)}) {
    const mt::TranslatedSentence& s = result->sentences[i];
    const std::string_view source[] = {std::string_view(text).substr(s.source_begin, s.source_end - s.source_begin)};
    REQUIRE(session.translate_text(source, {}, &plain).ok());
    CHECK(result->text.substr(s.target_begin, s.target_end - s.target_begin) == plain[0][0].text);
  }
}

TEST_CASE("translate_paragraphs: empty and blank texts, sinks that stop, bad options", "[paragraphs]") {
  mt::Session session = make_session(4, 1);
  for (const std::string text : {"", " ", "\n\n \t\n", "\r\n"}) {
    const auto r = session.translate_paragraphs(text);
    REQUIRE(r.ok());
    CHECK(r->text == text);
    CHECK(r->sentences.empty());
  }

  struct Stopper final : mt::ParagraphSink {
    int sentences = 0;
    mt::Status write(std::string_view) override { return {}; }
    mt::Status sentence(const mt::TranslatedSentence&) override {
      return ++sentences == 2 ? mt::Status::error(mt::Errc::cancelled, "enough") : mt::Status{};
    }
  } stopper;
  const mt::Status stopped =
      session.translate_paragraphs("One dog runs. Two dogs run. Three dogs run.", {}, {}, &stopper);
  CHECK(stopped.code() == mt::Errc::cancelled);
  CHECK(stopper.sentences == 2);
  CHECK(session.translate_paragraphs("x", {}, {}, nullptr).code() == mt::Errc::invalid_argument);

  mt::TranslateOptions bad;
  bad.beam_size = 0;
  CHECK(session.translate_paragraphs("A dog.", {}, bad).status().code() == mt::Errc::invalid_argument);
  mt::ParagraphOptions odd;
  odd.mode = static_cast<mt::SplitMode>(9);
  CHECK(session.translate_paragraphs("A dog.", odd).status().code() == mt::Errc::invalid_argument);

  // Beam search and n-best options work; each sentence's best is written.
  mt::TranslateOptions beam;
  beam.beam_size = 4;
  beam.num_hypotheses = 3;
  const auto b = session.translate_paragraphs("A dog runs. A man walks.", {}, beam);
  REQUIRE(b.ok());
  CHECK(b->sentences.size() == 2);
}

TEST_CASE("the model's own prefix list, the built-in one, or the caller's", "[paragraphs]") {
  // The shipped model's source language is English: "Dr." does not end a sentence.
  const auto own = mt::model_nonbreaking_prefixes(*mt::test::shipped_int8_model());
  REQUIRE(own.ok());
  CHECK(own->find("Dr") == mt::NonBreakingPrefixes::Kind::always);
  mt::Session session = make_session(4, 1);
  const auto with_list = session.translate_paragraphs("Dr. Smith runs. A dog sits.");
  REQUIRE(with_list.ok());
  CHECK(with_list->sentences.size() == 2);

  const mt::NonBreakingPrefixes none;
  mt::ParagraphOptions po;
  po.prefixes = &none;
  const auto without = session.translate_paragraphs("Dr. Smith runs. A dog sits.", po);
  REQUIRE(without.ok());
  CHECK(without->sentences.size() == 3);

  // A list in the model's metadata wins; a malformed one is refused at session creation.
  const auto with_metadata = [](const std::string& list, const std::string& name) {
    auto writer = mt::ModelWriter::from_model(*mt::test::shipped_int8_model());
    REQUIRE(writer.ok());
    mt::ModelMetadata metadata = writer->metadata();
    metadata.extra.push_back({"nonbreaking_prefixes", list});
    writer->set_metadata(metadata);
    const std::string path = mt::test::scratch_path(name);
    REQUIRE(writer->write(path).ok());
    auto model = mt::Model::load(path);
    REQUIRE(model.ok());
    return std::move(model.value());
  };
  const auto custom = with_metadata("Smith\n", "prefixes.mtm");
  CHECK(mt::model_nonbreaking_prefixes(*custom)->find("Smith") == mt::NonBreakingPrefixes::Kind::always);
  CHECK(mt::model_nonbreaking_prefixes(*custom)->find("Dr") == mt::NonBreakingPrefixes::Kind::none);
  auto custom_session = mt::Session::create(custom, {});
  REQUIRE(custom_session.ok());
  const auto split_by_model = custom_session->translate_paragraphs("Dr. Smith. Runs home.");
  REQUIRE(split_by_model.ok());
  CHECK(split_by_model->sentences.size() == 2);  // "Dr." | "Smith. Runs home."

  const auto broken = with_metadata("Dr\n\xff\n", "broken-prefixes.mtm");
  const auto refused = mt::Session::create(broken, {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == mt::Errc::invalid_model);
  CHECK(std::string(refused.status().message()).find("nonbreaking_prefixes") != std::string::npos);
}

namespace {

struct Collected {
  std::string text;
  std::vector<mt_translated_sentence> sentences;
  int stop_after_writes = -1;  // >= 0: write_text refuses after that many calls
  int writes = 0;
};

int collect_text(void* user, const char* bytes, size_t length) {
  auto* c = static_cast<Collected*>(user);
  if (c->stop_after_writes >= 0 && c->writes >= c->stop_after_writes) return 1;
  ++c->writes;
  c->text.append(bytes, length);
  return 0;
}

int collect_sentence(void* user, const mt_translated_sentence* s) {
  static_cast<Collected*>(user)->sentences.push_back(*s);
  return 0;
}

}  // namespace

TEST_CASE("C API: mt_translate_paragraphs and prefix lists", "[paragraphs][c_api]") {
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(MT_MODELS_DIR "/en-de-tiny.int8.mtm", &model) == MT_OK);
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, nullptr, &session) == MT_OK);

  mt_prefixes* english = nullptr;
  REQUIRE(mt_prefixes_builtin("en", &english) == MT_OK);
  mt_prefixes* none = nullptr;
  REQUIRE(mt_prefixes_parse("", 0, &none) == MT_OK);
  mt_prefixes* bad = nullptr;
  CHECK(mt_prefixes_builtin("xx", &bad) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(bad == nullptr);
  CHECK(std::string(mt_last_error()).find("xx") != std::string::npos);
  CHECK(mt_prefixes_parse("\xff", 1, &bad) == MT_ERROR_INVALID_ARGUMENT);

  const std::string text = "Dr. Smith runs.  A dog sits.\nTwo men walk.";
  Collected c;
  mt_paragraph_options po;
  mt_paragraph_options_init(&po);
  CHECK(po.split_mode == MT_SPLIT_LINES);
  po.write_text = collect_text;
  po.write_sentence = collect_sentence;
  po.user_data = &c;
  po.prefixes = english;
  REQUIRE(mt_translate_paragraphs(session, text.data(), text.size(), &po, nullptr) == MT_OK);
  REQUIRE(c.sentences.size() == 3);
  CHECK(c.sentences[2].paragraph == 1);
  CHECK(c.text.substr(c.sentences[0].target_end, c.sentences[1].target_begin - c.sentences[0].target_end) == "  ");
  // The C++ API gives the same.
  mt::SessionOptions so;
  auto cpp = mt::Session::create(mt::test::shipped_int8_model(), so);
  REQUIRE(cpp.ok());
  CHECK(cpp->translate_paragraphs(text)->text == c.text);

  Collected split_more;
  po.user_data = &split_more;
  po.prefixes = none;
  REQUIRE(mt_translate_paragraphs(session, text.data(), text.size(), &po, nullptr) == MT_OK);
  CHECK(split_more.sentences.size() == 4);

  Collected stopping;
  stopping.stop_after_writes = 1;
  po.user_data = &stopping;
  CHECK(mt_translate_paragraphs(session, text.data(), text.size(), &po, nullptr) == MT_ERROR_CANCELLED);
  po.write_text = nullptr;
  CHECK(mt_translate_paragraphs(session, text.data(), text.size(), &po, nullptr) == MT_ERROR_INVALID_ARGUMENT);
  po.write_text = collect_text;
  po.split_mode = 7;
  CHECK(mt_translate_paragraphs(session, text.data(), text.size(), &po, nullptr) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(mt_translate_paragraphs(session, nullptr, 5, &po, nullptr) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(mt_translate_paragraphs(nullptr, text.data(), text.size(), &po, nullptr) == MT_ERROR_INVALID_ARGUMENT);

  mt_prefixes_free(english);
  mt_prefixes_free(none);
  mt_prefixes_free(nullptr);
  mt_session_free(session);
  mt_model_free(model);
}
