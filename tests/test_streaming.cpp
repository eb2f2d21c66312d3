// TranslateOptions::on_token and cancel on the shipped English-German model:
// the stream is the result (ids, text, log-probabilities), beam search never
// takes back what it gave, a stopped sentence leaves the others as they
// were, and a cancel from another thread ends the call within a step.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mt/mt.hpp"
#include "test_util.hpp"

using mt::test::read_lines;

namespace {

mt::Session make_session(int batch, int threads, int beam, mt::ThreadSplit split = mt::ThreadSplit::automatic) {
  mt::SessionOptions o;
  o.max_batch_size = batch;
  o.num_threads = threads;
  o.max_beam_size = beam;
  o.thread_split = split;
  return mt::test::shipped_session(o);
}

// What one sentence's events said.
struct Streamed {
  std::vector<int32_t> ids;
  std::vector<int> steps;
  std::string text;
  double log_prob = 0.0;
};

struct Recorder {
  std::vector<Streamed> sentences;
  int stop_sentence = -1, stop_step = -1;
  bool operator()(const mt::TokenEvent& e) {
    Streamed& s = sentences.at(e.sentence);
    s.ids.push_back(e.token);
    s.steps.push_back(e.step);
    s.text.append(e.text);
    s.log_prob += double(e.log_prob);
    return int(e.sentence) == stop_sentence && e.step == stop_step;
  }
};

std::vector<std::string_view> views(const std::vector<std::string>& lines) {
  return std::vector<std::string_view>(lines.begin(), lines.end());
}

}  // namespace

TEST_CASE("greedy: the stream is the result, ids, text and log-probabilities", "[streaming]") {
  const std::vector<std::string> sources = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  const std::vector<std::string> expected = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.de-tiny-int8-greedy");
#ifdef __EMSCRIPTEN__
  const int threads = 1;  // the WebAssembly build has no threads
#else
  const int threads = GENERATE(1, 2);
#endif
  const mt::ThreadSplit split = GENERATE(mt::ThreadSplit::sentences, mt::ThreadSplit::layers);
  INFO("threads " << threads << " split " << int(split));
  mt::Session session = make_session(40, threads, 1, split);
  Recorder recorder;
  recorder.sentences.resize(40);
  mt::TranslateOptions o = mt::test::pinned_options();
  o.on_token = mt::TokenCallback::of(recorder);
  mt::TextTranslations out;
  REQUIRE(session.translate_text(views(sources), o, &out).ok());
  const int32_t eos = mt::test::shipped_int8_model()->config().eos_id;
  for (size_t i = 0; i < 40; ++i) {
    INFO("sentence " << i);
    const mt::TextHypothesis& h = out[i][0];
    CHECK(h.text == expected[i]);
    CHECK_FALSE(out.stopped(i));
    const Streamed& s = recorder.sentences[i];
    // EOS is streamed last, unless the translation was cut at the length limit.
    const bool ended = h.token_log_probs.size() == h.tokens.size() + 1;
    REQUIRE(s.ids.size() == h.tokens.size() + (ended ? 1 : 0));
    CHECK(std::equal(h.tokens.begin(), h.tokens.end(), s.ids.begin()));
    if (ended) CHECK(s.ids.back() == eos);
    for (size_t k = 0; k < s.steps.size(); ++k) CHECK(s.steps[k] == int(k));
    CHECK(s.text == h.text);
    CHECK(std::abs(s.log_prob - double(h.log_prob)) < 1e-5);
  }
}

TEST_CASE("beam 4: nothing streamed is taken back, the stream is the best hypothesis", "[streaming]") {
  const std::vector<std::string> sources = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
#ifdef __EMSCRIPTEN__
  const int threads = 1;  // the WebAssembly build has no threads
#else
  const int threads = GENERATE(1, 2);
#endif
  mt::Session session = make_session(40, threads, 4, mt::ThreadSplit::sentences);
  mt::TranslateOptions o;
  o.beam_size = 4;
  o.num_hypotheses = 2;
  mt::TextTranslations plain;
  REQUIRE(session.translate_text(views(sources), o, &plain).ok());
  std::vector<std::string> plain_texts;
  for (size_t i = 0; i < 40; ++i) plain_texts.emplace_back(plain[i][0].text);

  Recorder recorder;
  recorder.sentences.resize(40);
  o.on_token = mt::TokenCallback::of(recorder);
  mt::TextTranslations out;
  REQUIRE(session.translate_text(views(sources), o, &out).ok());
  size_t streamed_early = 0;
  for (size_t i = 0; i < 40; ++i) {
    INFO("sentence " << i);
    const mt::TextHypothesis& h = out[i][0];
    CHECK(h.text == plain_texts[i]);  // streaming changes nothing
    const Streamed& s = recorder.sentences[i];
    // Events came in step order, each step once: nothing was taken back.
    for (size_t k = 0; k < s.steps.size(); ++k) CHECK(s.steps[k] == int(k));
    REQUIRE(s.ids.size() >= h.tokens.size());
    CHECK(std::equal(h.tokens.begin(), h.tokens.end(), s.ids.begin()));
    CHECK(s.text == h.text);
    CHECK(std::abs(s.log_prob - double(h.log_prob)) < 1e-4);
    streamed_early += s.ids.size();
  }
  CHECK(streamed_early > 0);
}

TEST_CASE("beam: the stable prefix comes before the sentence ends", "[streaming]") {
  // Sentence lengths differ: a short sentence ends while a long one still
  // runs; the long one's first tokens must have been given by then.
  mt::Session session = make_session(2, 1, 4);
  struct Order {
    std::vector<size_t> sentence_of_event;
    bool operator()(const mt::TokenEvent& e) {
      sentence_of_event.push_back(e.sentence);
      return false;
    }
  } order;
  mt::TranslateOptions o;
  o.beam_size = 4;
  o.on_token = mt::TokenCallback::of(order);
  const std::string_view batch[] = {
      "A dog.", "Three women are sitting on a bench in front of a large building while children play."};
  mt::TextTranslations out;
  REQUIRE(session.translate_text(batch, o, &out).ok());
  // Some event of the long sentence came before the short one's last.
  size_t last_short = 0, first_long = order.sentence_of_event.size();
  for (size_t i = 0; i < order.sentence_of_event.size(); ++i) {
    if (order.sentence_of_event[i] == 0) last_short = i;
    if (order.sentence_of_event[i] == 1 && first_long == order.sentence_of_event.size()) first_long = i;
  }
  CHECK(first_long < last_short);
}

TEST_CASE("stopping one sentence leaves the others bit-identical", "[streaming][one_thread]") {
  const std::vector<std::string> sources = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  const int beam = GENERATE(1, 4);
  INFO("beam " << beam);
  mt::Session session = make_session(40, 1, 4);
  mt::TranslateOptions o;
  o.beam_size = beam;
  mt::Translations plain;
  std::vector<std::span<const int32_t>> ids;
  std::vector<std::vector<int32_t>> encoded(40);
  for (size_t i = 0; i < 40; ++i) REQUIRE(mt::test::shipped_int8_model()->encode(sources[i], &encoded[i]).ok());
  for (const auto& e : encoded) ids.emplace_back(e);
  REQUIRE(session.translate(ids, o, &plain).ok());
  std::vector<std::vector<int32_t>> plain_tokens;
  std::vector<float> plain_scores;
  for (size_t i = 0; i < 40; ++i) {
    plain_tokens.emplace_back(plain[i][0].tokens.begin(), plain[i][0].tokens.end());
    plain_scores.push_back(plain[i][0].score);
  }

  Recorder recorder;
  recorder.sentences.resize(40);
  recorder.stop_sentence = 5;
  recorder.stop_step = 2;
  o.on_token = mt::TokenCallback::of(recorder);
  mt::Translations out;
  REQUIRE(session.translate(ids, o, &out).ok());
  for (size_t i = 0; i < 40; ++i) {
    INFO("sentence " << i);
    if (i == 5) {
      // Greedy gives step 2 at once; beam search gives it when every
      // hypothesis that can win shares it, possibly only as the sentence
      // ends, when stopping changes nothing.
      if (beam == 1) CHECK(out.stopped(i));
      if (out.stopped(i)) {
        REQUIRE(out[i][0].tokens.size() == 3);  // steps 0, 1, 2: what was given
        CHECK(std::equal(out[i][0].tokens.begin(), out[i][0].tokens.end(), recorder.sentences[i].ids.begin()));
        CHECK(recorder.sentences[i].ids.size() == 3);
      } else {
        CHECK(std::vector<int32_t>(out[i][0].tokens.begin(), out[i][0].tokens.end()) == plain_tokens[i]);
      }
      continue;
    }
    CHECK_FALSE(out.stopped(i));
    CHECK(std::vector<int32_t>(out[i][0].tokens.begin(), out[i][0].tokens.end()) == plain_tokens[i]);
    CHECK(out[i][0].score == plain_scores[i]);
  }
}

TEST_CASE("beam: stopping every sentence at its first token ends most of them early", "[streaming]") {
  const std::vector<std::string> sources = read_lines(MT_TEST_DATA_DIR "/shipped_sentences.en");
  mt::Session session = make_session(40, 1, 4);
  struct StopFirst {
    std::vector<int> given = std::vector<int>(40, 0);
    bool operator()(const mt::TokenEvent& e) {
      ++given[e.sentence];
      return true;
    }
  } stop;
  mt::TranslateOptions o;
  o.beam_size = 4;
  o.on_token = mt::TokenCallback::of(stop);
  mt::TextTranslations out;
  REQUIRE(session.translate_text(views(sources), o, &out).ok());
  int stopped = 0;
  for (size_t i = 0; i < 40; ++i) {
    if (!out.stopped(i)) continue;
    ++stopped;
    CHECK(out[i][0].tokens.size() == 1);
    CHECK(stop.given[i] == 1);
  }
  CHECK(stopped >= 20);  // the first token is settled long before most sentences end
}

TEST_CASE("a cancel from another thread ends the call within a step, flagged", "[streaming]") {
  // A long greedy batch: 64 sentences forced to 200 tokens each.
  mt::SessionOptions so;
  so.max_batch_size = 64;
  so.max_target_length = 256;
  auto session = mt::Session::create(mt::test::shipped_int8_model(), so);
  REQUIRE(session.ok());
  std::vector<std::string> lines(64, "A man in a blue shirt is riding a bicycle down the street.");
  mt::TranslateOptions o;
  o.min_decoding_length = 200;
  o.max_decoding_length = 200;
  std::atomic<int> cancel{0};
  o.cancel = &cancel;
  std::atomic<int> steps_after{0};
  struct Counter {
    std::atomic<int>* cancel;
    int* last_step;
    bool operator()(const mt::TokenEvent& e) {
      if (e.step == 5 && e.sentence == 0) cancel->store(1);  // as another thread would
      if (e.sentence == 0) *last_step = e.step;
      return false;
    }
  };
  int last_step = -1;
  Counter counter{&cancel, &last_step};
  o.on_token = mt::TokenCallback::of(counter);
  mt::TextTranslations out;
  REQUIRE(session->translate_text(views(lines), o, &out).ok());
  CHECK(last_step == 5);  // the step the cancel came in was the last
  for (size_t i = 0; i < 64; ++i) {
    CHECK(out.stopped(i));
    CHECK(out[i][0].tokens.size() == 6);
  }

#ifndef __EMSCRIPTEN__  // no threads there
  // From a real second thread, without streaming: the call ends early.
  cancel.store(0);
  o.on_token = {};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cancel.store(1);
  });
  REQUIRE(session->translate_text(views(lines), o, &out).ok());
  canceller.join();
  CHECK(out.stopped(0));
  CHECK(out[0][0].tokens.size() < 200);
#endif

  // A beam search cancelled: each sentence's best so far.
  mt::SessionOptions bo = so;
  bo.max_batch_size = 4;
  bo.max_beam_size = 4;
  auto beam_session = mt::Session::create(mt::test::shipped_int8_model(), bo);
  REQUIRE(beam_session.ok());
  cancel.store(1);
  o.beam_size = 4;
  const std::vector<std::string> four(lines.begin(), lines.begin() + 4);
  REQUIRE(beam_session->translate_text(views(four), o, &out).ok());
  CHECK(out.stopped(0));
  CHECK(out[0][0].tokens.empty());  // cancelled before the first step
}

// (With every allocation refused: tests/test_heapless.cpp.)
TEST_CASE("translate_paragraphs refuses on_token for now", "[streaming]") {
  mt::Session session = make_session(8, 1, 4);
  int events = 0;
  auto count = [&](const mt::TokenEvent&) {
    ++events;
    return false;
  };
  mt::TranslateOptions o;
  o.beam_size = 4;
  o.on_token = mt::TokenCallback::of(count);
  const std::string_view batch[] = {"A dog runs in the park.", "Two men walk."};
  mt::TextTranslations out;
  REQUIRE(session.translate_text(batch, o, &out).ok());
  CHECK(events > 0);
  CHECK(session.translate_paragraphs("A dog.", {}, o).status().code() == mt::Errc::unsupported);
}
