// The translation cache: a second pass over the same sentences decodes
// nothing and gives the same output; options that change the output miss;
// memory and entries stay within their bounds; colliding hashes never give a
// wrong answer; paragraphs re-translate only what changed; sessions share it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "access.hpp"
#include "cache/translation_cache_impl.hpp"
#include "mt/mt.hpp"
#include "test_util.hpp"

using mt::test::read_lines;

namespace {

mt::Session make_session(int batch = 16, int beam = 4, int threads = 1) {
  mt::SessionOptions o;
  o.max_batch_size = batch;
  o.max_beam_size = beam;
  o.num_threads = threads;
  return mt::test::shipped_session(o);
}

std::shared_ptr<mt::TranslationCache> make_cache(size_t entries, size_t bytes = 0) {
  auto cache = mt::TranslationCache::create({entries, bytes});
  REQUIRE(cache.ok());
  return cache.value();
}

// Translates lines in batches; returns each best text (and n-best texts joined by " | ").
std::vector<std::string> translate(mt::Session& session, const std::vector<std::string>& lines,
                                   const mt::TranslateOptions& options) {
  std::vector<std::string> out;
  mt::TextTranslations results;
  const size_t batch = size_t(session.options().max_batch_size);
  for (size_t b = 0; b < lines.size(); b += batch) {
    std::vector<std::string_view> views(lines.begin() + ptrdiff_t(b),
                                        lines.begin() + ptrdiff_t(std::min(lines.size(), b + batch)));
    REQUIRE(session.translate_text(views, options, &results).ok());
    for (size_t i = 0; i < results.size(); ++i) {
      std::string all;
      for (const mt::TextHypothesis& h : results[i]) all += std::string(h.text) + " " + std::to_string(h.score) + "|";
      out.push_back(all);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a second pass is found whole: same output, no decoder step", "[cache][one_thread]") {
  const std::vector<std::string> lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  const size_t n = lines.size();
  const int beam = GENERATE(1, 4);
  INFO("beam " << beam);
  mt::Session session = make_session();
  auto cache = make_cache(1000);
  mt::TranslateOptions o;
  o.beam_size = beam;
  o.num_hypotheses = beam > 1 ? 2 : 1;
  const std::vector<std::string> plain = translate(session, lines, o);
  o.cache = cache.get();
  const std::vector<std::string> first = translate(session, lines, o);
  CHECK(first == plain);
  CHECK(cache->stats().misses == n);
  CHECK(cache->stats().insertions == n);
  const uint64_t steps = mt::detail::decoder_steps(session);
  const std::vector<std::string> second = translate(session, lines, o);
  CHECK(second == plain);
  CHECK(cache->stats().hits == n);
  CHECK(mt::detail::decoder_steps(session) == steps);  // nothing decoded
  // The ids path shares it: the same sources as ids are found too.
  mt::Translations ids_results;
  std::vector<int32_t> ids;
  REQUIRE(mt::test::shipped_int8_model()->encode(lines[0], &ids).ok());
  const std::span<const int32_t> one[] = {ids};
  REQUIRE(session.translate(one, o, &ids_results).ok());
  CHECK(cache->stats().hits == n + 1);
}

TEST_CASE("Multi30k's test set twice: 1,000 hits, no decoder step, the same output", "[cache][shared_data][one_thread]") {
  const std::string path = MT_SHARED_DATA_DIR "/multi30k/test_2016_flickr.en";
  if (!std::filesystem::exists(path)) MT_SKIP(path << " is absent (../shared/data)");
  const std::vector<std::string> lines = read_lines(path);
  REQUIRE(lines.size() == 1000);
  mt::Session session = make_session(16, 1);
  auto cache = make_cache(1000);
  mt::TranslateOptions o;
  o.cache = cache.get();
  const std::vector<std::string> first = translate(session, lines, o);
  const uint64_t steps = mt::detail::decoder_steps(session);
  const std::vector<std::string> second = translate(session, lines, o);
  CHECK(second == first);
  // Multi30k repeats a few sentences: those are found on the first pass already.
  CHECK(cache->stats().hits >= 1000);
  CHECK(cache->stats().misses + cache->stats().hits == 2000);
  CHECK(mt::detail::decoder_steps(session) == steps);
}

TEST_CASE("options that change the output miss, those that do not, hit", "[cache]") {
  const std::vector<std::string> lines = {"A dog runs in the park.", "Two men walk down the street."};
  mt::Session session = make_session();
  auto cache = make_cache(100);
  mt::TranslateOptions o;
  o.cache = cache.get();
  translate(session, lines, o);
  CHECK(cache->stats().misses == 2);
  o.beam_size = 4;
  translate(session, lines, o);
  CHECK(cache->stats().misses == 4);
  o.length_penalty = 0.5f;
  translate(session, lines, o);
  CHECK(cache->stats().misses == 6);
  o.max_decoding_length = 5;
  translate(session, lines, o);
  CHECK(cache->stats().misses == 8);
  const int32_t forced[] = {11};
  o.target_prefix = forced;
  translate(session, lines, o);
  CHECK(cache->stats().misses == 10);
  translate(session, lines, o);
  CHECK(cache->stats().hits == 2);
  // Another model with the same sources misses.
  mt::SessionOptions so;
  auto fp32 = mt::Session::create(*mt::Model::load(MT_MODELS_DIR "/en-de-tiny.mtm"), so);
  REQUIRE(fp32.ok());
  mt::TranslateOptions p;
  p.cache = cache.get();
  translate(*fp32, lines, p);
  translate(session, lines, p);
  CHECK(cache->stats().misses == 12);
  CHECK(cache->stats().hits == 4);
}

TEST_CASE("a hit says whether this call's source was cut, whatever the stored entry's was", "[cache]") {
  // A text cut to max_text_bytes and the same text whole have the same
  // tokens, so the same key: truncated is each call's own, both orders.
  mt::SessionOptions so;
  so.max_batch_size = 1;
  so.max_text_bytes = 16;
  mt::Session session = mt::test::shipped_session(so);
  const std::string whole = "A dog runs.";  // 11 bytes
  const std::string longer = whole + "      over and over";
  for (const bool cut_first : {false, true}) {
    INFO((cut_first ? "the cut text first" : "the whole text first"));
    auto cache = make_cache(100);
    mt::TranslateOptions o;
    o.cache = cache.get();
    o.truncate_long_sources = true;
    mt::TextTranslations results;
    for (int call = 0; call < 2; ++call) {
      const bool cut = (call == 0) == cut_first;
      const std::string_view text[] = {cut ? std::string_view(longer) : std::string_view(whole)};
      REQUIRE(session.translate_text(text, o, &results).ok());
      CHECK(results.truncated(0) == cut);
    }
    CHECK(cache->stats().hits == 1);  // the second call was found
    // The same through token ids: a source longer than the session's is cut
    // to one already stored.
    mt::SessionOptions short_source;
    short_source.max_batch_size = 1;
    short_source.max_source_length = 4;
    mt::Session ids_session = mt::test::shipped_session(short_source);
    const int32_t fits[] = {10, 11, 12}, longer_ids[] = {10, 11, 12, 13, 14};
    mt::Translations ids_results;
    for (int call = 0; call < 2; ++call) {
      const bool cut = (call == 0) == cut_first;
      const std::span<const int32_t> one[] = {cut ? std::span<const int32_t>(longer_ids)
                                                  : std::span<const int32_t>(fits)};
      REQUIRE(ids_session.translate(one, o, &ids_results).ok());
      CHECK(ids_results.truncated(0) == cut);
    }
    CHECK(cache->stats().hits == 2);
  }
  // A text within max_text_bytes cut by its tokens (max_source_length): cut
  // both times, the second a hit.
  mt::SessionOptions few_tokens;
  few_tokens.max_batch_size = 1;
  few_tokens.max_source_length = 4;
  mt::Session session_few = mt::test::shipped_session(few_tokens);
  auto cache = make_cache(100);
  mt::TranslateOptions o;
  o.cache = cache.get();
  o.truncate_long_sources = true;
  mt::TextTranslations results;
  const std::string_view long_text[] = {"Two men walk down the busy street."};
  for (int call = 0; call < 2; ++call) {
    REQUIRE(session_few.translate_text(long_text, o, &results).ok());
    CHECK(results.truncated(0));
  }
  CHECK(cache->stats().hits == 1);
}

TEST_CASE("a model file that differs in one weight's byte misses", "[cache]") {
  // The same size and the same bytes but one, far from the file's start: a
  // fingerprint of samples of the file would take it for the same model.
  const std::string original = MT_MODELS_DIR "/en-de-tiny.mtm";
  std::ifstream in(original, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > (size_t(4) << 20));
  const size_t at = bytes.size() / 64 * 40 + 1000;  // inside the weights, between 256-byte samples
  bytes[at] = char(bytes[at] ^ 0x01);
  const std::string changed = mt::test::scratch_path("cache-one-byte.mtm");
  std::ofstream(changed, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  auto a = mt::Model::load(original);
  auto b = mt::Model::load(changed);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto cache = make_cache(100);
  mt::TranslateOptions o;
  o.cache = cache.get();
  for (const auto& model : {*a, *b}) {
    auto session = mt::Session::create(model, {});
    REQUIRE(session.ok());
    translate(*session, {"A dog runs in the park."}, o);
  }
  CHECK(cache->stats().misses == 2);
  CHECK(cache->stats().hits == 0);
}

TEST_CASE("capacity 100 with 1,000 sentences stays within its entries and memory", "[cache][one_thread]") {
  std::vector<std::string> lines;
  const char* words[] = {"dog", "man", "woman", "child", "cat", "bird", "horse", "boy", "girl", "car"};
  for (int i = 0; i < 1000; ++i) {
    lines.push_back(std::string("A ") + words[i % 10] + " and a " + words[(i / 10) % 10] + " see a " +
                    words[(i / 100) % 10] + ".");
  }
  mt::Session session = make_session(16, 1);
  auto cache = make_cache(100, 100 * 256);
  const size_t memory = cache->memory_size();
  mt::TranslateOptions o;
  const std::vector<std::string> plain = translate(session, lines, o);
  o.cache = cache.get();
  CHECK(translate(session, lines, o) == plain);
  CHECK(cache->stats().entries <= 100);
  CHECK(cache->stats().evictions >= 900);
  CHECK(cache->memory_size() == memory);
  // The last ones are still there and right.
  const std::vector<std::string> tail(lines.end() - 50, lines.end());
  const auto hits = cache->stats().hits;
  CHECK(translate(session, tail, o) == std::vector<std::string>(plain.end() - 50, plain.end()));
  CHECK(cache->stats().hits > hits);
  cache->clear();
  CHECK(cache->stats().entries == 0);
}

TEST_CASE("a 4-bit hash still gives every sentence its own translation", "[cache][one_thread]") {
  const std::vector<std::string> lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  mt::Session session = make_session();
  auto cache = make_cache(1000);
  mt::detail::set_cache_hash_bits(*cache, 4);
  mt::TranslateOptions o;
  const std::vector<std::string> plain = translate(session, lines, o);
  o.cache = cache.get();
  CHECK(translate(session, lines, o) == plain);
  CHECK(translate(session, lines, o) == plain);
  CHECK(cache->stats().hits > 0);  // those whose probe window had room
}

TEST_CASE("editing one sentence of a paragraph re-translates only that one", "[cache]") {
  std::vector<std::string> lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  std::string text;
  for (const std::string& l : lines) text += l + " ";
  mt::Session session = make_session();
  auto cache = make_cache(1000);
  mt::TranslateOptions o;
  o.cache = cache.get();
  const auto first = session.translate_paragraphs(text, {}, o);
  REQUIRE(first.ok());
  const auto misses = cache->stats().misses;
  const std::string edited = text.replace(text.find("bicycle"), 7, "tricycle");
  const auto second = session.translate_paragraphs(edited, {}, o);
  REQUIRE(second.ok());
  CHECK(cache->stats().misses == misses + 1);
  CHECK(second->sentences.size() == first->sentences.size());
}

TEST_CASE("two sessions share one cache", "[cache]") {
  const std::vector<std::string> lines = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  auto cache = make_cache(1000);
  mt::TranslateOptions o;
  mt::Session reference = make_session();
  const std::vector<std::string> plain = translate(reference, lines, o);
  o.cache = cache.get();
  std::vector<std::string> a, b;
#ifdef __EMSCRIPTEN__
  mt::Session one = make_session(), two = make_session();
  a = translate(one, lines, o);
  b = translate(two, lines, o);
#else
  // Catch's assertions are for the main thread: the threads only translate.
  mt::Session one = make_session(), two = make_session(8, 4, 2);
  const auto run = [&](mt::Session& session, std::vector<std::string>* out, bool* ok) {
    mt::TextTranslations results;
    const size_t batch = size_t(session.options().max_batch_size);
    for (int round = 0; round < 3; ++round) {
      out->clear();
      for (size_t begin = 0; begin < lines.size(); begin += batch) {
        std::vector<std::string_view> views(lines.begin() + ptrdiff_t(begin),
                                            lines.begin() + ptrdiff_t(std::min(lines.size(), begin + batch)));
        *ok = *ok && session.translate_text(views, o, &results).ok();
        for (size_t i = 0; *ok && i < results.size(); ++i) {
          out->push_back(std::string(results[i][0].text) + " " + std::to_string(results[i][0].score) + "|");
        }
      }
    }
  };
  bool ok_a = true, ok_b = true;
  std::thread first([&] { run(one, &a, &ok_a); });
  std::thread second([&] { run(two, &b, &ok_b); });
  first.join();
  second.join();
  CHECK(ok_a);
  CHECK(ok_b);
#endif
  CHECK(a == plain);
  CHECK(b == plain);
  CHECK(cache->stats().hits >= lines.size());
}

TEST_CASE("cache options are checked", "[cache]") {
  CHECK(mt::TranslationCache::create({0, 0}).status().code() == mt::Errc::invalid_argument);
  CHECK(mt::TranslationCache::create({10, 100}).status().code() == mt::Errc::invalid_argument);
  auto cache = make_cache(10, 4096);
  CHECK(cache->max_entries() == 10);
  CHECK(cache->memory_size() >= 4096);
}
