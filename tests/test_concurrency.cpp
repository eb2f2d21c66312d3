// Concurrency and determinism: one Model shared by sessions on several
// threads. Every translation must equal, bit for bit (tokens, text, score,
// log-probability), what one single-threaded session gives for that sentence
// translated alone, whatever the session's thread count, its batch size and
// the sentences batched with it. scripts/tsan.sh runs this under
// ThreadSanitizer.
//
// Why exact equality is the right bar, not a tolerance: each float a
// sentence's output depends on is computed by one fixed sequence of
// operations. GEMM elements accumulate over increasing k whatever the tile,
// the batch rows or the thread (platforms/simd/gemm.hpp); attention runs per
// sentence and head; int8 inputs are quantized per row or with the layer's
// fixed calibrated scale; rows of a batch never mix. Threads only decide who
// computes an element, never how. A kernel that split K across threads or
// shared a quantization range across a batch would break this, and this test
// is there to say so.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mt/mt.h"
#include "test_util.hpp"

using namespace mt;
using mt::test::make_sources;
using mt::test::random_model;
using mt::test::tiny_config;

namespace {

// Translations per model in the stress cases; MT_STRESS_TRANSLATIONS sets
// another number (a longer soak). The sanitizers make the kernels 3-20x
// slower: fewer under TSan (scripts/tsan.sh, the run that looks for races),
// fewer still under ASan (CI's whole-suite run), to stay within CI's budget.
// TSan's verdict rests on the order of accesses (happens-before), not on
// threads meeting in time: 60 translations a thread (some 7-20 random
// batches) still run both searches on every thread plan while the others
// translate. (The shipped-model case under TSan, 2-core AMD EPYC Zen 3:
// 241 s with 480 translations, 150 s with 240; 78 s of either are the
// single-threaded references.)
#if defined(__SANITIZE_THREAD__)
constexpr int kDefaultTranslations = 240;
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kDefaultTranslations = 160;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr int kDefaultTranslations = 240;
#elif __has_feature(address_sanitizer)
constexpr int kDefaultTranslations = 160;
#else
constexpr int kDefaultTranslations = 3000;
#endif
#else
constexpr int kDefaultTranslations = 3000;
#endif

int translations_per_model() {
  const char* env = std::getenv("MT_STRESS_TRANSLATIONS");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : kDefaultTranslations;
}

struct Hyp {
  std::vector<int32_t> tokens;  // id API
  std::string text;             // text API
  float score = 0.0f;
  float log_prob = 0.0f;
  bool operator==(const Hyp&) const = default;
};
using NBest = std::vector<Hyp>;

// Greedy and beam search, at most max_length tokens (random weights rarely
// stop by themselves).
std::vector<TranslateOptions> search_modes(int max_length) {
  TranslateOptions greedy;
  greedy.max_decoding_length = max_length;
  greedy.max_length_ratio = 2.0f;
  greedy.max_length_offset = 10;
  TranslateOptions beam = greedy;
  beam.beam_size = 4;
  beam.num_hypotheses = 2;
  return {greedy, beam};
}

// The sentences to translate (UTF-8 for models with a vocabulary, ids
// otherwise) and the search modes to translate them with.
struct Inputs {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  std::vector<TranslateOptions> modes;
  size_t size() const { return texts.empty() ? ids.size() : texts.size(); }
};

SessionOptions session_options(int num_threads, int max_batch_size) {
  SessionOptions o;
  o.num_threads = num_threads;
  o.max_batch_size = max_batch_size;
  return o;
}

// Translates inputs[batch[i]] for every i; the n-best lists go to `out`.
Status translate(Session& session, const Inputs& in, const std::vector<int>& batch, const TranslateOptions& options,
                 std::vector<NBest>* out) {
  out->assign(batch.size(), {});
  if (!in.texts.empty()) {
    std::vector<std::string_view> sources;
    for (int i : batch) sources.emplace_back(in.texts[size_t(i)]);
    TextTranslations results;
    MT_RETURN_IF_ERROR(session.translate_text(sources, options, &results));
    for (size_t b = 0; b < batch.size(); ++b)
      for (const TextHypothesis& h : results[b]) (*out)[b].push_back({{}, std::string(h.text), h.score, h.log_prob});
    return {};
  }
  std::vector<std::span<const int32_t>> sources;
  for (int i : batch) sources.emplace_back(in.ids[size_t(i)]);
  Translations results;
  MT_RETURN_IF_ERROR(session.translate(sources, options, &results));
  for (size_t b = 0; b < batch.size(); ++b)
    for (const Hypothesis& h : results[b])
      (*out)[b].push_back({{h.tokens.begin(), h.tokens.end()}, {}, h.score, h.log_prob});
  return {};
}

// reference[mode][sentence]: one session, one thread, each sentence alone.
using Reference = std::vector<std::vector<NBest>>;

Reference single_threaded_reference(std::shared_ptr<const Model> model, const Inputs& in) {
  auto session = Session::create(std::move(model), session_options(1, 1));
  REQUIRE(session.ok());
  Reference reference;
  for (const TranslateOptions& mode : in.modes) {
    reference.emplace_back();
    for (int i = 0; i < int(in.size()); ++i) {
      std::vector<NBest> out;
      const Status s = translate(*session, in, {i}, mode, &out);
      INFO(s.message());
      REQUIRE(s.ok());
      REQUIRE(!out[0].empty());
      reference.back().push_back(out[0]);
    }
  }
  return reference;
}

// What one thread saw. Catch2 assertions are not thread-safe: threads only
// record, the main thread checks.
struct ThreadReport {
  int translations = 0;
  int mismatches = 0;
  std::string failure;  // the first error or mismatch, for the test's message
};

// Translates random batches (random size up to the session's max_batch_size,
// random sentences, repeats allowed, random search mode) until the report
// counts `translations` sentences, checking each against the reference.
void translate_random_batches(Session& session, const Inputs& in, const Reference& reference, int translations,
                              uint32_t seed, ThreadReport* report) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> batch_size(1, session.options().max_batch_size);
  std::uniform_int_distribution<int> sentence(0, int(in.size()) - 1);
  std::uniform_int_distribution<int> mode(0, int(in.modes.size()) - 1);
  std::vector<int> batch;
  std::vector<NBest> out;
  while (report->translations < translations) {
    batch.resize(size_t(std::min(batch_size(rng), translations - report->translations)));
    for (int& i : batch) i = sentence(rng);
    const int m = mode(rng);
    const Status s = translate(session, in, batch, in.modes[size_t(m)], &out);
    if (!s.ok()) {
      report->failure = s.message();
      return;
    }
    for (size_t b = 0; b < batch.size(); ++b) {
      ++report->translations;
      if (out[b] == reference[size_t(m)][size_t(batch[b])]) continue;
      if (report->mismatches++ == 0) {
        report->failure = "sentence " + std::to_string(batch[b]) + " mode " + std::to_string(m) + " in a batch of " +
                          std::to_string(batch.size()) + " differs from the single-threaded result";
      }
    }
  }
}

void check_reports(const std::vector<ThreadReport>& reports, int expected_each) {
  for (size_t t = 0; t < reports.size(); ++t) {
    INFO("thread " << t << ": " << reports[t].failure);
    CHECK(reports[t].failure.empty());
    CHECK(reports[t].mismatches == 0);
    CHECK(reports[t].translations == expected_each);
  }
}

// Session shapes of the translating threads: thread counts 1 to 3 (3 splits
// the GEMM panels unevenly), batch capacities from 1 to 16.
struct ThreadPlan {
  int num_threads;
  int max_batch_size;
};
constexpr ThreadPlan kPlans[] = {{1, 16}, {2, 5}, {2, 16}, {3, 8}};
constexpr int kThreads = int(std::size(kPlans));

// kThreads threads, each with its own session on `model`, together translate
// translations_per_model() sentences in random batches.
void stress(std::shared_ptr<const Model> model, const Inputs& in, const Reference& reference, const char* what) {
  const int each = translations_per_model() / kThreads;
  std::vector<ThreadReport> reports(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto session = Session::create(model, session_options(kPlans[t].num_threads, kPlans[t].max_batch_size));
      if (!session.ok()) {
        reports[size_t(t)].failure = session.status().message();
        return;
      }
      translate_random_batches(*session, in, reference, each, 1000u + uint32_t(t), &reports[size_t(t)]);
    });
  }
  for (std::thread& t : threads) t.join();
  check_reports(reports, each);
  std::printf(
      "test_concurrency: %s: %d threads x %d translations (greedy and beam 4, random batches), "
      "all identical to the single-threaded results\n",
      what, kThreads, each);
}

std::string model_path(const char* file) { return std::string(MT_MODELS_DIR) + "/" + file; }

std::shared_ptr<const Model> load(const std::string& path) {
  auto model = Model::load(path);
  INFO(path << ": " << model.status().message());
  REQUIRE(model.ok());
  return model.value();
}

// The committed English sentences, and pairs of them joined into longer ones.
Inputs english_sentences() {
  std::ifstream file(MT_TEST_DATA_DIR "/shipped_sentences.en");
  Inputs in;
  for (std::string line; std::getline(file, line);) in.texts.push_back(line);
  REQUIRE(in.texts.size() == 40);
  for (size_t i = 0; i < 40; ++i) in.texts.push_back(in.texts[i] + " " + in.texts[(i + 7) % 40]);
  in.modes = search_modes(48);
  return in;
}

// The reference of a shipped model on english_sentences(), computed once per
// test program: the cases on one model share it (it is slow under TSan).
const Reference& shipped_reference(const char* file) {
  static std::map<std::string, Reference> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    it = cache.emplace(file, single_threaded_reference(load(model_path(file)), english_sentences())).first;
  }
  return it->second;
}

// Random ids of lengths 0 to 40 for a random model.
Inputs random_ids(int vocab) {
  std::vector<int> lengths;
  for (int i = 0; i < 48; ++i) lengths.push_back((i * 37) % 41);
  return {{}, make_sources(lengths, vocab, 17), search_modes(24)};
}

}  // namespace

TEST_CASE("shared shipped models translate identically on any thread and in any batch", "[concurrency]") {
  const char* file = GENERATE("en-de-tiny.int8.mtm", "en-de-tiny.mtm");
  INFO(file);
  stress(load(model_path(file)), english_sentences(), shipped_reference(file), file);
}

TEST_CASE("a shared random model translates ids identically on any thread and in any batch", "[concurrency]") {
  const ModelConfig config = tiny_config();
  auto model = random_model(config, 71);
  const Inputs in = random_ids(config.source_vocab_size);
  stress(model, in, single_threaded_reference(model, in), "random tiny model (ids)");
}

TEST_CASE("sessions come and go on threads while others translate with the same model", "[concurrency]") {
  const Inputs in = english_sentences();
  const Reference& reference = shipped_reference("en-de-tiny.int8.mtm");
  std::weak_ptr<const Model> watch;
  std::vector<Session> long_lived;
  constexpr int kChurners = 2, kSessionsEach = 12, kTranslators = 2;
  std::vector<ThreadReport> churn_reports(kChurners), translator_reports(kTranslators);
  std::vector<std::thread> threads;
  std::latch churn_done(kChurners);
  {
    auto model = load(model_path("en-de-tiny.int8.mtm"));
    watch = model;
    for (int t = 0; t < kTranslators; ++t) {
      auto session = Session::create(model, session_options(1 + t, 6));
      REQUIRE(session.ok());
      long_lived.push_back(std::move(session.value()));
    }
    // Each churner creates a session, translates one random batch, destroys it, again and again.
    for (int t = 0; t < kChurners; ++t) {
      threads.emplace_back([&, t, model]() mutable {
        for (int i = 0; i < kSessionsEach && churn_reports[size_t(t)].failure.empty(); ++i) {
          auto session = Session::create(model, session_options(1 + (i + t) % 2, 1 + i % 4));
          if (!session.ok()) {
            churn_reports[size_t(t)].failure = session.status().message();
            break;
          }
          ThreadReport& report = churn_reports[size_t(t)];
          translate_random_batches(*session, in, reference, report.translations + 1 + i % 4,
                                   500u + uint32_t(i * kChurners + t), &report);
        }
        model.reset();  // this thread's reference goes with its last session
        churn_done.count_down();
      });
    }
  }  // the caller's reference is dropped here, while the churners work

  // The long-lived sessions translate during the churn, then once more when
  // they alone hold the model.
  std::vector<long> owners_after_churn(kTranslators, -1);
  std::latch owners_counted(kTranslators);
  for (int t = 0; t < kTranslators; ++t) {
    threads.emplace_back([&, t, session = std::move(long_lived[size_t(t)])]() mutable {
      ThreadReport& report = translator_reports[size_t(t)];
      translate_random_batches(session, in, reference, 100, 900u + uint32_t(t), &report);
      churn_done.wait();
      owners_after_churn[size_t(t)] = watch.use_count();
      owners_counted.arrive_and_wait();  // no session goes before all have counted
      translate_random_batches(session, in, reference, 110, 950u + uint32_t(t), &report);
    });
  }
  for (std::thread& t : threads) t.join();

  for (const ThreadReport& r : churn_reports) {
    INFO(r.failure);
    CHECK(r.failure.empty());
    CHECK(r.mismatches == 0);
  }
  check_reports(translator_reports, 110);
  for (long owners : owners_after_churn) CHECK(owners == kTranslators);  // only the sessions kept the model
  CHECK(watch.expired());                                                // and the last one freed it
}

TEST_CASE("the C API shares a model across threads with per-thread errors", "[concurrency]") {
  const Inputs in = english_sentences();
  const std::string path = model_path("en-de-tiny.int8.mtm");
  const Reference& reference = shipped_reference("en-de-tiny.int8.mtm");
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  constexpr int kThreads = 3, kBatches = 20;
  std::vector<mt_session*> sessions(kThreads, nullptr);
  for (int t = 0; t < kThreads; ++t) {
    mt_session_options so;
    mt_session_options_init(&so);
    so.num_threads = 1 + t % 2;
    so.max_batch_size = 4 + t;
    REQUIRE(mt_session_create(model, &so, &sessions[size_t(t)]) == MT_OK);
  }
  mt_model_free(model);  // the sessions keep it alive

  std::vector<ThreadReport> reports(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      mt_session* session = sessions[size_t(t)];
      ThreadReport& report = reports[size_t(t)];
      auto fail = [&](std::string why) {
        if (report.failure.empty()) report.failure = std::move(why);
      };
      std::mt19937 rng(300u + uint32_t(t));
      const std::vector<TranslateOptions>& modes = in.modes;
      for (int i = 0; i < kBatches; ++i) {
        // A bad call first: its message must be this thread's, whatever the others do.
        mt_translate_options bad;
        mt_translate_options_init(&bad);
        bad.beam_size = 100 + t;
        const char* one[] = {"x"};
        const size_t one_length[] = {1};
        if (mt_translate_text(session, one, one_length, 1, &bad) != MT_ERROR_INVALID_ARGUMENT ||
            std::string(mt_last_error()).find("beam_size = " + std::to_string(100 + t)) == std::string::npos) {
          fail(std::string("wrong error: ") + mt_last_error());
        }

        const int m = i % 2;
        mt_translate_options to;
        mt_translate_options_init(&to);
        to.beam_size = modes[size_t(m)].beam_size;
        to.num_hypotheses = modes[size_t(m)].num_hypotheses;
        to.max_decoding_length = modes[size_t(m)].max_decoding_length;
        to.max_length_ratio = modes[size_t(m)].max_length_ratio;
        to.max_length_offset = modes[size_t(m)].max_length_offset;
        std::vector<int> batch(size_t(1 + int(rng() % uint32_t(4 + t))));
        std::vector<const char*> texts;
        std::vector<size_t> lengths;
        for (int& s : batch) {
          s = int(rng() % in.size());
          texts.push_back(in.texts[size_t(s)].data());
          lengths.push_back(in.texts[size_t(s)].size());
        }
        if (mt_translate_text(session, texts.data(), lengths.data(), batch.size(), &to) != MT_OK) {
          fail(mt_last_error());
          return;
        }
        for (size_t b = 0; b < batch.size(); ++b) {
          ++report.translations;
          const NBest& expected = reference[size_t(m)][size_t(batch[b])];
          size_t count = 0;
          bool same = mt_result_count(session, b, &count) == MT_OK && count == expected.size();
          for (size_t k = 0; same && k < count; ++k) {
            const char* text = nullptr;
            size_t length = 0;
            float score = 0;
            same = mt_result_text(session, b, k, &text, &length, &score) == MT_OK &&
                   std::string_view(text, length) == expected[k].text && score == expected[k].score;
          }
          if (!same && report.mismatches++ == 0) fail("sentence " + std::to_string(batch[b]) + " differs");
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (mt_session* s : sessions) mt_session_free(s);
  for (const ThreadReport& r : reports) {
    INFO(r.failure);
    CHECK(r.failure.empty());
    CHECK(r.mismatches == 0);
    CHECK(r.translations > 0);
  }
}
