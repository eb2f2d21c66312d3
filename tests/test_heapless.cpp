// For devices without a heap at translate time (docs/memory.md, "Translating without
// a heap"): the model image and the session's memory are the caller's, and
// translating works with every allocation refused from the first call on:
// malloc returns null and operator new throws (tests/malloc_hooks.cpp).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "malloc_hooks.hpp"
#include "mt/mt.h"
#include "test_util.hpp"

using mt::test::AlignedBytes;
using mt::test::AlignedFile;
using mt::test::read_lines;

TEST_CASE("translates the shipped sentences with the heap forbidden", "[heapless]") {
  const int threads = GENERATE(1, 2);
  const int beam = GENERATE(1, 4);
  INFO("threads " << threads << " beam " << beam);

  // The model image, as firmware would hold it.
  const AlignedFile image(MT_MODELS_DIR "/en-de-tiny.int8.mtm");
  REQUIRE(image.size > 1000);
  mt_model* model = nullptr;
  REQUIRE(mt_model_load_buffer(image.data, image.size, &model) == MT_OK);

  mt_session_options so;
  mt_session_options_init(&so);
  so.max_batch_size = 8;
  so.max_beam_size = beam;
  so.max_text_bytes = 512;
  so.num_threads = threads;
  size_t need = 0;
  REQUIRE(mt_session_memory_size(model, &so, &need) == MT_OK);
  AlignedBytes memory(need);
  // Creating the session allocates its small bookkeeping only: the
  // translation memory is the buffer.
  mt_session* session = nullptr;
  mt_status created = MT_ERROR_INTERNAL;
  const auto bookkeeping = mt::test::heap_use_during(
      [&] { created = mt_session_create_in(model, &so, memory.data, memory.size, &session); });
  REQUIRE(created == MT_OK);
  INFO("session creation: " << bookkeeping.calls << " allocations, " << bookkeeping.bytes << " bytes");
  CHECK(bookkeeping.bytes < 8 * 1024);

  mt_translate_options to;
  mt_translate_options_init(&to);
  to.beam_size = beam;
  to.max_length_ratio = mt::test::kPinnedLengthRatio;
  to.max_length_offset = mt::test::kPinnedLengthOffset;
  const auto lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  REQUIRE(lines.size() == 40);
  std::vector<const char*> texts;
  std::vector<size_t> lengths;
  for (const auto& line : lines) {
    texts.push_back(line.data());
    lengths.push_back(line.size());
  }
  std::vector<std::string> got(lines.size());
  // Result views are copied out after each batch, outside the forbidden span.
  std::vector<const char*> views(8);
  std::vector<size_t> view_lengths(8);
  mt_status status = MT_OK;
  long refused = 0;
  for (size_t b = 0; b < lines.size() && status == MT_OK; b += 8) {
    const size_t n = std::min<size_t>(8, lines.size() - b);
    refused += mt::test::refused_allocations_during([&] {
      status = mt_translate_text(session, texts.data() + b, lengths.data() + b, n, &to);
      for (size_t i = 0; i < n && status == MT_OK; ++i)
        status = mt_result_text(session, i, 0, &views[i], &view_lengths[i], nullptr);
    });
    for (size_t i = 0; i < n && status == MT_OK; ++i) got[b + i].assign(views[i], view_lengths[i]);
  }
  INFO(mt_last_error());
  CHECK(refused == 0);
  REQUIRE(status == MT_OK);
  // Greedy: the x86 output every platform must give (tests/test_shipped_models.cpp).
  if (beam == 1) CHECK(got == read_lines(MT_TEST_DATA_DIR "/shipped_sentences.de-tiny-int8-greedy"));
  for (const auto& text : got) CHECK_FALSE(text.empty());

  mt_session_free(session);
  mt_model_free(model);
}

namespace {

// The shipped int8 model from an image and a session in caller memory, as
// firmware holds them; made with the heap allowed, freed at the end.
struct HeaplessSession {
  AlignedFile image{MT_MODELS_DIR "/en-de-tiny.int8.mtm"};
  mt_model* model = nullptr;
  std::unique_ptr<AlignedBytes> memory;
  mt_session* session = nullptr;

  explicit HeaplessSession(const mt_session_options& so) {
    REQUIRE(mt_model_load_buffer(image.data, image.size, &model) == MT_OK);
    size_t need = 0;
    REQUIRE(mt_session_memory_size(model, &so, &need) == MT_OK);
    memory = std::make_unique<AlignedBytes>(need);
    REQUIRE(mt_session_create_in(model, &so, memory->data, memory->size, &session) == MT_OK);
  }
  ~HeaplessSession() {
    mt_session_free(session);
    mt_model_free(model);
  }
};

// The committed sentences as the C API takes them.
struct ShippedSentences {
  std::vector<std::string> lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  std::vector<const char*> texts;
  std::vector<size_t> lengths;
  ShippedSentences() {
    for (const auto& line : lines) texts.push_back(line.data()), lengths.push_back(line.size());
  }
};

}  // namespace

namespace {

// Fixed buffers a device would hand mt_translate_paragraphs' writers.
struct ParagraphBuffers {
  char text[16384];
  size_t size = 0;
  mt_translated_sentence sentences[64];
  size_t count = 0;
};

int write_text(void* user, const char* bytes, size_t length) {
  auto* b = static_cast<ParagraphBuffers*>(user);
  if (length > sizeof(b->text) - b->size) return 1;
  std::memcpy(b->text + b->size, bytes, length);
  b->size += length;
  return 0;
}

int write_sentence(void* user, const mt_translated_sentence* sentence) {
  auto* b = static_cast<ParagraphBuffers*>(user);
  if (b->count == 64) return 1;
  b->sentences[b->count++] = *sentence;
  return 0;
}

}  // namespace

TEST_CASE("translates paragraphs with the heap forbidden", "[heapless]") {
  const int threads = GENERATE(1, 2);
  INFO("threads " << threads);
  mt_session_options so;
  mt_session_options_init(&so);
  so.max_batch_size = 8;
  so.max_text_bytes = 256;  // the long sentence below is translated in pieces
  so.num_threads = threads;
  const HeaplessSession h(so);
  mt_session* session = h.session;

  const auto lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  const auto expected = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.de-tiny-int8-greedy");
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) text += lines[i] + (i % 5 == 4 ? "\n\n" : " ");
  std::string long_sentence = "The";
  for (int i = 0; i < 120; ++i) long_sentence += " dog runs";
  text += long_sentence + ".\n";

  mt_paragraph_options po;
  mt_paragraph_options_init(&po);
  po.split_mode = MT_SPLIT_WRAPPED;
  po.write_text = write_text;
  po.write_sentence = write_sentence;
  mt_translate_options to;
  mt_translate_options_init(&to);
  to.max_length_ratio = mt::test::kPinnedLengthRatio;
  to.max_length_offset = mt::test::kPinnedLengthOffset;
  auto buffers = std::make_unique<ParagraphBuffers>();
  po.user_data = buffers.get();
  mt_status status = MT_ERROR_INTERNAL;
  const long refused = mt::test::refused_allocations_during(
      [&] { status = mt_translate_paragraphs(session, text.data(), text.size(), &po, &to); });
  INFO(mt_last_error());
  CHECK(refused == 0);
  REQUIRE(status == MT_OK);
  REQUIRE(buffers->count == 41);
  const std::string_view out(buffers->text, buffers->size);
  for (size_t i = 0; i < 40; ++i) {
    const mt_translated_sentence& s = buffers->sentences[i];
    CHECK(out.substr(s.target_begin, s.target_end - s.target_begin) == expected[i]);
  }
  CHECK(buffers->sentences[40].pieces > 1);
}

namespace {

// Tokens streamed into fixed buffers: each sentence's text as it came.
struct StreamBuffers {
  char text[40][512];
  size_t length[40] = {};
  int events = 0;
};

int on_token(void* user, const mt_token_event* e) {
  auto* b = static_cast<StreamBuffers*>(user);
  ++b->events;
  if (e->sentence >= 40 || e->text_length > sizeof(b->text[0]) - b->length[e->sentence]) return 1;
  std::memcpy(b->text[e->sentence] + b->length[e->sentence], e->text, e->text_length);
  b->length[e->sentence] += e->text_length;
  return 0;
}

}  // namespace

TEST_CASE("streams tokens with the heap forbidden", "[heapless]") {
  const int threads = GENERATE(1, 2);
  const int beam = GENERATE(1, 4);
  INFO("threads " << threads << " beam " << beam);
  mt_session_options so;
  mt_session_options_init(&so);
  so.max_batch_size = 40;
  so.num_threads = threads;
  so.thread_split = MT_THREAD_SPLIT_SENTENCES;
  const HeaplessSession h(so);
  mt_session* session = h.session;
  const ShippedSentences sentences;
  const auto& texts = sentences.texts;
  const auto& lengths = sentences.lengths;

  auto streamed = std::make_unique<StreamBuffers>();
  std::atomic<int> cancel{0};
  mt_translate_options to;
  mt_translate_options_init(&to);
  to.beam_size = beam;
  to.on_token = on_token;
  to.on_token_user_data = streamed.get();
  to.cancel = &cancel;
  mt_status status = MT_ERROR_INTERNAL;
  const long refused = mt::test::refused_allocations_during(
      [&] { status = mt_translate_text(session, texts.data(), lengths.data(), 40, &to); });
  INFO(mt_last_error());
  CHECK(refused == 0);
  REQUIRE(status == MT_OK);
  CHECK(streamed->events > 40);
  for (size_t i = 0; i < 40; ++i) {
    const char* text = nullptr;
    size_t length = 0;
    REQUIRE(mt_result_text(session, i, 0, &text, &length, nullptr) == MT_OK);
    CHECK(std::string_view(streamed->text[i], streamed->length[i]) == std::string_view(text, length));
    int stopped = 1;
    REQUIRE(mt_result_stopped(session, i, &stopped) == MT_OK);
    CHECK(stopped == 0);
  }
}

TEST_CASE("a translation cache looks up and stores with the heap forbidden", "[heapless]") {
  mt_session_options so;
  mt_session_options_init(&so);
  so.max_batch_size = 8;
  const HeaplessSession h(so);
  mt_session* session = h.session;
  mt_cache* cache = nullptr;
  REQUIRE(mt_cache_create(16, 0, &cache) == MT_OK);  // 16 entries: the second pass evicts the first's
  const auto expected = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.de-tiny-int8-greedy");
  const ShippedSentences sentences;
  const auto& texts = sentences.texts;
  const auto& lengths = sentences.lengths;
  mt_translate_options to;
  mt_translate_options_init(&to);
  to.cache = cache;
  to.max_length_ratio = mt::test::kPinnedLengthRatio;
  to.max_length_offset = mt::test::kPinnedLengthOffset;
  std::vector<std::string> got;
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t b = 0; b < 40; b += 8) {
      mt_status status = MT_ERROR_INTERNAL;
      const char* views[8];
      size_t view_lengths[8];
      const long refused = mt::test::refused_allocations_during([&] {
        status = mt_translate_text(session, texts.data() + b, lengths.data() + b, 8, &to);
        for (size_t i = 0; i < 8 && status == MT_OK; ++i)
          status = mt_result_text(session, i, 0, &views[i], &view_lengths[i], nullptr);
      });
      CHECK(refused == 0);
      REQUIRE(status == MT_OK);
      for (size_t i = 0; i < 8; ++i) CHECK(std::string(views[i], view_lengths[i]) == expected[b + i]);
      // The same batch again: every sentence found.
      REQUIRE(mt_translate_text(session, texts.data() + b, lengths.data() + b, 8, &to) == MT_OK);
    }
  }
  mt_cache_stats stats;
  REQUIRE(mt_cache_stats_get(cache, &stats) == MT_OK);
  CHECK(stats.hits >= 120);
  CHECK(stats.entries <= 16);
  CHECK(stats.evictions > 0);
  mt_cache_free(cache);
}

TEST_CASE("scores, prefixes, alternatives, guards, word scores and alignments with the heap forbidden", "[heapless]") {
  const int threads = GENERATE(1, 2);
  INFO("threads " << threads);
  mt_session_options so;
  mt_session_options_init(&so);
  so.max_batch_size = 8;
  so.num_threads = threads;
  so.thread_split = MT_THREAD_SPLIT_SENTENCES;
  so.quality_scores = 1;
  so.alignments = 1;
  const HeaplessSession h(so);
  mt_session* session = h.session;
  const ShippedSentences sentences;
  const auto expected = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.de-tiny-int8-greedy");
  const char* targets[8];
  size_t target_lengths[8];
  for (size_t i = 0; i < 8; ++i) targets[i] = expected[i].data(), target_lengths[i] = expected[i].size();
  const char* prefixes[8] = {"Eine Frau", "", "Der"};
  const size_t prefix_lengths[8] = {9, 0, 3};
  mt_translate_options to;
  mt_translate_options_init(&to);
  mt_status status = MT_ERROR_INTERNAL;
  const mt_word_score* words = nullptr;
  const float* log_probs = nullptr;
  const float* weights = nullptr;
  const mt_byte_range* ranges = nullptr;
  size_t count = 0, rows = 0, columns = 0, stride = 0, range_count = 0;
  const long refused = mt::test::refused_allocations_during([&] {
    status = mt_score_text(session, sentences.texts.data(), sentences.lengths.data(), targets, target_lengths, 8, &to);
    if (status == MT_OK) status = mt_result_words(session, 0, 0, &words, &count, nullptr);
    if (status == MT_OK) status = mt_result_log_probs(session, 7, 0, &log_probs, &count, nullptr);
    if (status == MT_OK) status = mt_result_alignment(session, 3, 0, &weights, &rows, &columns, &stride);
    if (status == MT_OK) status = mt_result_source_ranges(session, 3, &ranges, &range_count);
    to.text_prefixes = prefixes;
    to.text_prefix_lengths = prefix_lengths;
    to.text_prefix_count = 3;
    to.alternatives = 3;
    to.no_repeat_ngram_size = 2;
    to.repetition_penalty = 1.2f;
    if (status == MT_OK) status = mt_translate_text(session, sentences.texts.data(), sentences.lengths.data(), 8, &to);
  });
  INFO(mt_last_error());
  CHECK(refused == 0);
  REQUIRE(status == MT_OK);
  const char* text = nullptr;
  size_t length = 0;
  REQUIRE(mt_result_count(session, 0, &count) == MT_OK);
  CHECK(count == 3);
  REQUIRE(mt_result_text(session, 0, 2, &text, &length, nullptr) == MT_OK);
  CHECK(std::string_view(text, length).substr(0, 9) == "Eine Frau");
  CHECK(rows > 1);
  CHECK(range_count == columns);
}

TEST_CASE("a refused allocation is seen by the hooks", "[heapless]") {
  void* p = nullptr;
  CHECK(mt::test::refused_allocations_during([&] { p = std::malloc(100); }) == 1);
  CHECK(p == nullptr);
  std::free(p);
}
