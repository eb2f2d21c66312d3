// translate() makes zero heap allocations: every malloc of the process is
// counted (operator new, the C library and the thread pool all go through
// these), on every thread, while translating.
#include <atomic>
#include <cstdlib>

#include "mt/mt.h"
#include "test_util.hpp"
#include "vocab/vocab_train.hpp"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
inline void count() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t n) { count(); return __libc_malloc(n); }
void* calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void* realloc(void* p, size_t n) { count(); return __libc_realloc(p, n); }
void free(void* p) { __libc_free(p); }
void* memalign(size_t alignment, size_t n) { count(); return __libc_memalign(alignment, n); }
void* aligned_alloc(size_t alignment, size_t n) { count(); return __libc_memalign(alignment, n); }
int posix_memalign(void** out, size_t alignment, size_t n) {
  count();
  *out = __libc_memalign(alignment, n);
  return *out ? 0 : 12;
}
}

using namespace mt;

namespace {

long allocations_during(const std::function<void()>& body) {
  g_allocations = 0;
  g_counting = true;
  body();
  g_counting = false;
  return g_allocations.load();
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
  const ModelConfig config = test::tiny_config();
  auto model = test::random_model(config, 101);
  SessionOptions so;
  so.max_batch_size = 6;
  so.max_beam_size = 4;
  so.max_source_length = 32;
  so.max_target_length = 20;
  so.num_threads = threads;
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
    INFO("threads " << threads << " beam " << beam);
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

TEST_CASE("text translation makes no heap allocation after warm-up", "[allocations]") {
  vocab::TrainOptions o;
  o.inputs = {std::string(MT_TEXT_DATA_DIR) + "/corpus.txt"};
  o.vocab_size = 400;
  o.soft_limit = true;
  o.byte_fallback = true;
  auto v = vocab::train(o);
  REQUIRE(v.ok());
  ModelConfig config = test::tiny_config();
  config.source_vocab_size = config.target_vocab_size = int(v->pieces.size());
  auto writer = random_model_writer(config, 103);
  REQUIRE(writer.ok());
  writer->set_vocabulary(v.value());
  const std::string path = test::scratch_path("alloc-text.mtm");
  REQUIRE(writer->write(path).ok());
  auto model = Model::load(path);
  REQUIRE(model.ok());
  SessionOptions so;
  so.max_batch_size = 4;
  so.max_text_bytes = 200;
  so.num_threads = 2;
  auto session = Session::create(model.value(), so);
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
    INFO("beam " << beam);
    REQUIRE(status.ok());
    CHECK(n == 0);
  }
}
