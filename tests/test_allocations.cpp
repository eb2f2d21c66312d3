// translate() makes zero heap allocations: every malloc of the process is
// counted (tests/malloc_hooks.cpp), on every thread, while translating.
// fp32 and int8 models alike.
#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "int8_models.hpp"
#include "malloc_hooks.hpp"
#include "mt/mt.h"
#include "test_util.hpp"
#include "vocab/vocab_train.hpp"

using namespace mt;
using test::allocations_during;
using test::int8_model;

namespace {

// A model with a vocabulary trained on the test corpus and random weights.
std::shared_ptr<const Model> text_model(uint64_t seed) {
  vocab::TrainOptions o;
  o.inputs = {std::string(MT_TEXT_DATA_DIR) + "/corpus.txt"};
  o.vocab_size = 400;
  o.soft_limit = true;
  o.byte_fallback = true;
  auto v = vocab::train(o);
  REQUIRE(v.ok());
  ModelConfig config = test::tiny_config();
  config.source_vocab_size = config.target_vocab_size = int(v->pieces.size());
  auto writer = random_model_writer(config, seed);
  REQUIRE(writer.ok());
  writer->set_vocabulary(v.value());
  const std::string path = test::scratch_path("alloc-text-" + std::to_string(seed) + ".mtm");
  REQUIRE(writer->write(path).ok());
  auto model = Model::load(path);
  REQUIRE(model.ok());
  return model.value();
}

std::vector<std::string> id_lines(const std::vector<std::vector<int32_t>>& sources) {
  std::vector<std::string> lines;
  for (const auto& s : sources) {
    std::string line;
    for (int32_t id : s) {
      if (!line.empty()) line += ' ';
      line += std::to_string(id);
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::vector<int>* g_sink = nullptr;  // keeps the compiler from eliding the allocations

TEST_CASE("the counter sees allocations", "[allocations]") {
  const long n = allocations_during([] { g_sink = new std::vector<int>(100); });
  delete g_sink;
  CHECK(n == 2);
}

TEST_CASE("translate makes no heap allocation after warm-up", "[allocations]") {
  const int threads = GENERATE(1, 2);
  const ThreadSplit split = GENERATE(ThreadSplit::layers, ThreadSplit::sentences);
  const ModelConfig config = test::tiny_config();
  auto model = test::random_model(config, 101);
  SessionOptions so;
  so.max_batch_size = 6;
  so.max_beam_size = 4;
  so.max_source_length = 32;
  so.max_target_length = 20;
  so.num_threads = threads;
  so.thread_split = split;
  auto session = Session::create(model, so);
  REQUIRE(session.ok());
  const auto sources = test::make_sources({7, 1, 30, 12, 0, 5}, config.source_vocab_size, 2);
  const auto batch = test::spans(sources);
  Translations results;
  for (int beam : {1, 4}) {
    TranslateOptions options;
    options.beam_size = beam;
    options.num_hypotheses = beam == 4 ? 2 : 1;
    REQUIRE(session->translate(batch, options, &results).ok());  // warm-up
    Status status;
    const long n = allocations_during([&] {
      for (int i = 0; i < 3; ++i) status = session->translate(batch, options, &results);
    });
    INFO("threads " << threads << " split " << int(split) << " beam " << beam);
    REQUIRE(status.ok());
    CHECK(results.size() == sources.size());
    CHECK(n == 0);
  }
  // Refusing bad input does not allocate either.
  TranslateOptions bad;
  bad.beam_size = 99;
  CHECK(allocations_during([&] { (void)session->translate(batch, bad, &results); }) == 0);
}

TEST_CASE("the C API translates without heap allocation", "[allocations]") {
  const std::string path = test::scratch_path("alloc.mtm");
  REQUIRE(write_random_model(test::tiny_config(), 102, path).ok());
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, nullptr, &session) == MT_OK);
  const int32_t a[] = {5, 6, 7, 8}, b[] = {9, 10};
  const int32_t* sources[] = {a, b};
  const size_t lengths[] = {4, 2};
  mt_translate_options to;
  mt_translate_options_init(&to);
  to.beam_size = 3;
  REQUIRE(mt_translate_ids(session, sources, lengths, 2, &to) == MT_OK);
  mt_status status = MT_OK;
  CHECK(allocations_during([&] { status = mt_translate_ids(session, sources, lengths, 2, &to); }) == 0);
  CHECK(status == MT_OK);
  mt_session_free(session);
  mt_model_free(model);
}

// Text in, text out, greedy and beam 4, on awkward lines (empty, emoji, an
// invalid byte): no allocation once warmed up.
static void check_text_translation_allocates_nothing(std::shared_ptr<const Model> model, int threads) {
  SessionOptions so;
  so.max_batch_size = 4;
  so.max_text_bytes = 200;
  so.num_threads = threads;
  auto session = Session::create(std::move(model), so);
  REQUIRE(session.ok());
  const std::string_view lines[] = {"A man is walking along the river.", "", "Grüße aus Köln – 😀 \xff!",
                                    "Zwei Kinder sitzt neben einem roten Haus."};
  TextTranslations results;
  for (int beam : {1, 4}) {
    TranslateOptions options;
    options.beam_size = beam;
    REQUIRE(session->translate_text(lines, options, &results).ok());
    Status status;
    const long n = allocations_during([&] { status = session->translate_text(lines, options, &results); });
    INFO("beam " << beam << " threads " << threads);
    REQUIRE(status.ok());
    CHECK(n == 0);
  }
}

TEST_CASE("text translation makes no heap allocation after warm-up", "[allocations]") {
  check_text_translation_allocates_nothing(text_model(103), 2);
}

TEST_CASE("int8 translate makes no heap allocation after warm-up", "[allocations]") {
  const auto activations = GENERATE(ActivationScales::calibrated, ActivationScales::dynamic_per_row);
  const int threads = GENERATE(1, 2);
  const ModelConfig config = test::tiny_config();
  const auto sources = test::make_sources({7, 1, 30, 12, 0, 5}, config.source_vocab_size, 2);
  const auto calibration = test::make_sources({9, 4, 15, 2, 11, 6, 13, 3}, config.source_vocab_size, 3);
  auto model = int8_model(test::random_model(config, 104), id_lines(calibration), activations);
  SessionOptions so;
  so.max_batch_size = 6;
  so.max_beam_size = 4;
  so.max_source_length = 32;
  so.max_target_length = 20;
  so.num_threads = threads;
  auto session = Session::create(model, so);
  REQUIRE(session.ok());
  const auto batch = test::spans(sources);
  Translations results;
  for (int beam : {1, 4}) {
    TranslateOptions options;
    options.beam_size = beam;
    options.num_hypotheses = beam == 4 ? 2 : 1;
    REQUIRE(session->translate(batch, options, &results).ok());  // warm-up
    Status status;
    const long n = allocations_during([&] {
      for (int i = 0; i < 3; ++i) status = session->translate(batch, options, &results);
    });
    INFO("activations " << (activations == ActivationScales::calibrated ? "calibrated" : "dynamic") << " threads "
                        << threads << " beam " << beam);
    REQUIRE(status.ok());
    CHECK(results.size() == sources.size());
    CHECK(n == 0);
  }
}

TEST_CASE("int8 text translation makes no heap allocation after warm-up", "[allocations]") {
  const auto activations = GENERATE(ActivationScales::calibrated, ActivationScales::dynamic_per_row);
  std::ifstream corpus(std::string(MT_TEXT_DATA_DIR) + "/corpus.txt");
  std::vector<std::string> calibration;
  for (std::string line; calibration.size() < 8 && std::getline(corpus, line);) calibration.push_back(line);
  REQUIRE(calibration.size() == 8);
  auto model = int8_model(text_model(105), calibration, activations);
  REQUIRE(model->vocabulary() != nullptr);
  check_text_translation_allocates_nothing(model, 1);  // two threads: the int8 ids test above
}
