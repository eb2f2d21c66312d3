// The C API: status codes, messages, ownership, and the same results as C++.
#include "mt/mt.h"

#include <cstring>

#include "test_util.hpp"

using mt::test::random_model;
using mt::test::scratch_path;
using mt::test::tiny_config;

namespace {

// Translates the ids {5, 6}: enough to show a session works.
mt_status translate_one(mt_session* session) {
  const int32_t a[] = {5, 6};
  const int32_t* sources[] = {a};
  const size_t lengths[] = {2};
  return mt_translate_ids(session, sources, lengths, 1, nullptr);
}

}  // namespace

TEST_CASE("C API translates and reports errors without throwing", "[c_api]") {
  const std::string path = scratch_path("c_api.mtm");
  REQUIRE(mt::write_random_model(tiny_config(), 91, path).ok());

  mt_model* model = nullptr;
  CHECK(mt_model_load(scratch_path("missing.mtm").c_str(), &model) == MT_ERROR_IO);
  CHECK(model == nullptr);
  CHECK_THAT(mt_last_error(), Catch::Contains("cannot open"));
  CHECK(mt_model_load(nullptr, &model) == MT_ERROR_INVALID_ARGUMENT);
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);

  mt_session_options so;
  mt_session_options_init(&so);
  so.max_batch_size = 2;
  so.max_source_length = 16;
  so.max_target_length = 12;
  size_t bytes = 0;
  REQUIRE(mt_session_memory_size(model, &so, &bytes) == MT_OK);
  CHECK(bytes > 0);
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, &so, &session) == MT_OK);
  mt_model_free(model);  // the session keeps the model alive

  const int32_t a[] = {5, 6, 7}, b[] = {9};
  const int32_t* sources[] = {a, b};
  const size_t lengths[] = {3, 1};
  mt_translate_options to;
  mt_translate_options_init(&to);
  to.beam_size = 2;
  to.num_hypotheses = 2;
  REQUIRE(mt_translate_ids(session, sources, lengths, 2, &to) == MT_OK);
  size_t count = 0;
  REQUIRE(mt_result_count(session, 1, &count) == MT_OK);
  CHECK(count == 2);
  const int32_t* tokens = nullptr;
  size_t length = 0;
  float score = 0;
  REQUIRE(mt_result_hypothesis(session, 0, 0, &tokens, &length, &score) == MT_OK);
  CHECK(length <= 12);
  CHECK(score < 0.0f);
  CHECK(mt_result_hypothesis(session, 0, 2, &tokens, &length, &score) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(mt_result_count(session, 2, &count) == MT_ERROR_INVALID_ARGUMENT);

  to.beam_size = 9;
  CHECK(mt_translate_ids(session, sources, lengths, 2, &to) == MT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(mt_last_error(), Catch::Contains("beam_size = 9"));
  CHECK(mt_result_count(session, 0, &count) == MT_ERROR_INVALID_ARGUMENT);  // no stale results
  mt_translate_options_init(&to);
  const int32_t* three[] = {a, b, a};
  const size_t three_lengths[] = {3, 1, 3};
  CHECK(mt_translate_ids(session, three, three_lengths, 3, &to) == MT_ERROR_CAPACITY_EXCEEDED);
  const int32_t bad[] = {5, 100000};
  const int32_t* bad_sources[] = {bad};
  const size_t bad_length[] = {2};
  CHECK(mt_translate_ids(session, bad_sources, bad_length, 1, &to) == MT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(mt_last_error(), Catch::Contains("100000"));
  mt_session_free(session);
  mt_session_free(nullptr);
  mt_model_free(nullptr);
}

TEST_CASE("C API sessions can use a caller buffer", "[c_api]") {
  const std::string path = scratch_path("c_api_buffer.mtm");
  REQUIRE(mt::write_random_model(tiny_config(), 92, path).ok());
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  mt_session_options so;
  mt_session_options_init(&so);
  so.max_batch_size = 1;
  so.max_source_length = 8;
  so.max_target_length = 8;
  size_t bytes = 0;
  REQUIRE(mt_session_memory_size(model, &so, &bytes) == MT_OK);
  void* buffer = ::operator new(bytes, std::align_val_t(64));
  mt_session* session = nullptr;
  CHECK(mt_session_create_in(model, &so, buffer, bytes - 1, &session) == MT_ERROR_INVALID_ARGUMENT);
  REQUIRE(mt_session_create_in(model, &so, buffer, bytes, &session) == MT_OK);
  CHECK(translate_one(session) == MT_OK);
  mt_session_free(session);
  mt_model_free(model);
  ::operator delete(buffer, std::align_val_t(64));
}

TEST_CASE("C API loads a model image the caller owns", "[c_api]") {
  auto writer = mt::random_model_writer(tiny_config(), 93);
  REQUIRE(writer.ok());
  const auto serialized = writer->serialize();
  REQUIRE(serialized.ok());
  const std::vector<uint8_t>& file = serialized.value();
  // One byte of room to misalign it.
  mt::test::AlignedBytes aligned(file.size() + 1);
  uint8_t* image = aligned.data;
  std::memcpy(image, file.data(), file.size());
  mt_model* model = nullptr;
  CHECK(mt_model_load_buffer(nullptr, file.size(), &model) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(mt_model_load_buffer(image, file.size() - 100, &model) != MT_OK);  // truncated
  CHECK(model == nullptr);
  std::memcpy(image + 1, file.data(), file.size());
  CHECK(mt_model_load_buffer(image + 1, file.size(), &model) == MT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(mt_last_error(), Catch::Contains("aligned"));
  std::memcpy(image, file.data(), file.size());
  REQUIRE(mt_model_load_buffer(image, file.size(), &model) == MT_OK);
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, nullptr, &session) == MT_OK);
  CHECK(translate_one(session) == MT_OK);
  mt_session_free(session);
  mt_model_free(model);
}

TEST_CASE("C API device options: CPU by default, bad values refused, CUDA created or refused", "[c_api]") {
  const std::string path = scratch_path("c_api_device.mtm");
  REQUIRE(mt::write_random_model(tiny_config(), 93, path).ok());
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  mt_session_options so;
  mt_session_options_init(&so);
  CHECK(so.device == MT_DEVICE_CPU);
  CHECK(so.cuda_device == 0);
  CHECK(so.allow_tf32 == 0);
  CHECK(so.thread_split == MT_THREAD_SPLIT_AUTOMATIC);
  mt_session* session = nullptr;
  so.thread_split = 3;
  CHECK(mt_session_create(model, &so, &session) == MT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(mt_last_error(), Catch::Contains("thread_split"));
  so.thread_split = MT_THREAD_SPLIT_SENTENCES;
  so.num_threads = 2;
  if (mt::kHasThreads) {
    REQUIRE(mt_session_create(model, &so, &session) == MT_OK);
  } else {
    CHECK(mt_session_create(model, &so, &session) == MT_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(mt_last_error(), Catch::Contains("num_threads"));
  }
  mt_session_free(session);
  session = nullptr;
  mt_session_options_init(&so);
  so.device = 256;  // would wrap to 0 (CPU) if narrowed blindly
  CHECK(mt_session_create(model, &so, &session) == MT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(mt_last_error(), Catch::Contains("device"));
  so.device = MT_DEVICE_CUDA;
  so.cuda_device = -1;
  CHECK(mt_session_create(model, &so, &session) == MT_ERROR_INVALID_ARGUMENT);
  so.cuda_device = 0;
  const mt_status created = mt_session_create(model, &so, &session);
  INFO(mt_last_error());
  // A GPU build on a GPU machine creates it; anything else says what is missing.
  CHECK((created == MT_OK || created == MT_ERROR_UNSUPPORTED));
  CHECK((created == MT_OK) == (session != nullptr));
  mt_session_free(session);
  mt_model_free(model);
}

TEST_CASE("C API lengths near SIZE_MAX are refused, never wrapped", "[c_api][hostile]") {
  const std::string path = scratch_path("c_api_lengths.mtm");
  REQUIRE(mt::write_random_model(tiny_config(), 94, path).ok());
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, nullptr, &session) == MT_OK);
  // The pointers hold 2 ids / 2 bytes: only a length check that does not wrap keeps reads inside them.
  const int32_t ids[] = {5, 6};
  const int32_t* sources[] = {ids};
  const char text[] = "ab";
  const char* texts[] = {text};
  for (const size_t huge : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 4 + 1, SIZE_MAX / 2}) {
    INFO("length " << huge);
    const size_t lengths[] = {huge};
    CHECK(mt_translate_ids(session, sources, lengths, 1, nullptr) == MT_ERROR_CAPACITY_EXCEEDED);
    CHECK_THAT(mt_last_error(), Catch::Contains("sentence 0 has"));
    // (No vocabulary: refused before the length, as invalid; with one, by max_text_bytes.)
    CHECK(mt_translate_text(session, texts, lengths, 1, nullptr) != MT_OK);
    // Counts and indices: the batch limit and the result bounds.
    CHECK(mt_translate_ids(session, sources, lengths, huge, nullptr) == MT_ERROR_CAPACITY_EXCEEDED);
  }
  const size_t two[] = {2};
  REQUIRE(mt_translate_ids(session, sources, two, 1, nullptr) == MT_OK);
  size_t count = 0;
  CHECK(mt_result_count(session, SIZE_MAX, &count) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(mt_result_hypothesis(session, 0, SIZE_MAX, nullptr, nullptr, nullptr) == MT_ERROR_INVALID_ARGUMENT);
  int truncated = 0;
  CHECK(mt_result_truncated(session, SIZE_MAX, &truncated) == MT_ERROR_INVALID_ARGUMENT);
  mt_session_free(session);
  mt_model_free(model);
}

TEST_CASE("C API prefix and target lengths near SIZE_MAX are refused before any id is read", "[c_api][hostile]") {
  const std::string path = scratch_path("c_api_prefix_lengths.mtm");
  REQUIRE(mt::write_random_model(tiny_config(), 95, path).ok());
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, nullptr, &session) == MT_OK);
  mt_cache* cache = nullptr;
  REQUIRE(mt_cache_create(64, 1 << 20, &cache) == MT_OK);
  // Every array holds 2 ids: a check that wraps reads past it (ASan's
  // report; here an id read from beyond it, or a key copied over the arena).
  const int32_t ids[] = {5, 6};
  const int32_t* sources[] = {ids};
  const size_t two[] = {2};
  for (const bool cached : {false, true}) {
    for (const size_t huge :
         {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 4 + 1, size_t(100000)}) {  // (32-bit size_t in WebAssembly)
      INFO((cached ? "with a cache, " : "") << "length " << huge);
      mt_translate_options to;
      mt_translate_options_init(&to);
      to.cache = cached ? cache : nullptr;
      to.source_prefix = ids;
      to.source_prefix_length = huge;
      CHECK(mt_translate_ids(session, sources, two, 1, &to) == MT_ERROR_INVALID_ARGUMENT);
      CHECK_THAT(mt_last_error(), Catch::Contains("source_prefix") && Catch::Contains("must leave room"));
      to.source_prefix_length = 0;
      to.target_prefix = ids;
      to.target_prefix_length = huge;
      CHECK(mt_translate_ids(session, sources, two, 1, &to) == MT_ERROR_INVALID_ARGUMENT);
      CHECK_THAT(mt_last_error(), Catch::Contains("target_prefix"));
      to.target_prefix_length = 0;
      const int32_t* prefixes[] = {ids};
      const size_t prefix_lengths[] = {huge};
      to.prefixes = prefixes;
      to.prefix_lengths = prefix_lengths;
      to.prefix_count = 1;
      CHECK(mt_translate_ids(session, sources, two, 1, &to) == MT_ERROR_CAPACITY_EXCEEDED);
      CHECK_THAT(mt_last_error(), Catch::Contains("sentence 0 prefix of"));
      to.prefix_count = 0;
      const size_t target_lengths[] = {huge};
      CHECK(mt_score_ids(session, sources, two, sources, target_lengths, 1, &to) == MT_ERROR_CAPACITY_EXCEEDED);
      CHECK_THAT(mt_last_error(), Catch::Contains("target 0 has"));
    }
  }
  // A prefix's length with no ids is refused, not read as no prefix.
  mt_translate_options to;
  mt_translate_options_init(&to);
  to.source_prefix_length = 3;
  CHECK(mt_translate_ids(session, sources, two, 1, &to) == MT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(mt_last_error(), Catch::Contains("source_prefix must not be null"));
  to.source_prefix_length = 0;
  to.target_prefix_length = 1;
  CHECK(mt_translate_ids(session, sources, two, 1, &to) == MT_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(mt_last_error(), Catch::Contains("target_prefix must not be null"));
  // The session is intact: the same sentence translates, through the cache too.
  to.target_prefix_length = 0;
  to.cache = cache;
  CHECK(mt_translate_ids(session, sources, two, 1, &to) == MT_OK);
  mt_cache_free(cache);
  mt_session_free(session);
  mt_model_free(model);
}

TEST_CASE("C API language prefixes pick the model's tokens and reach the search", "[c_api]") {
  auto writer = mt::random_model_writer(tiny_config(), 93);
  REQUIRE(writer.ok());
  mt::ModelMetadata metadata;
  metadata.extra = {{"language_tokens", "__en__=40 __fr__=41"}, {"language_placement", "prefix"}};
  writer->set_metadata(metadata);
  const std::string path = mt::test::scratch_path("c-api-languages.mtm");
  REQUIRE(writer->write(path).ok());
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  int32_t source = 0, target = 0;
  REQUIRE(mt_language_prefixes(model, "en", "__fr__", &source, &target) == MT_OK);
  CHECK(source == 40);
  CHECK(target == 41);
  REQUIRE(mt_language_prefixes(model, nullptr, "fr", &source, &target) == MT_OK);
  CHECK(source == -1);
  CHECK(target == 41);
  CHECK(mt_language_prefixes(model, "en", "xx", &source, &target) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(std::strstr(mt_last_error(), "target language 'xx': not one of this model's languages") != nullptr);
  CHECK(mt_language_prefixes(model, "en", "fr", nullptr, &target) == MT_ERROR_INVALID_ARGUMENT);

  mt_session* session = nullptr;
  REQUIRE(mt_session_create(model, nullptr, &session) == MT_OK);
  mt_translate_options options;
  mt_translate_options_init(&options);
  const int32_t source_prefix[] = {40}, target_prefix[] = {41};
  options.source_prefix = source_prefix;
  options.source_prefix_length = 1;
  options.target_prefix = target_prefix;
  options.target_prefix_length = 1;
  const int32_t sentence[] = {5, 6, 7};
  const int32_t* sources[] = {sentence};
  const size_t lengths[] = {3};
  REQUIRE(mt_translate_ids(session, sources, lengths, 1, &options) == MT_OK);
  const int32_t* tokens = nullptr;
  size_t length = 0;
  REQUIRE(mt_result_hypothesis(session, 0, 0, &tokens, &length, nullptr) == MT_OK);
  REQUIRE(length >= 1);
  CHECK(tokens[0] == 41);  // forced
  const int32_t eos[] = {tiny_config().eos_id};
  options.target_prefix = eos;
  CHECK(mt_translate_ids(session, sources, lengths, 1, &options) == MT_ERROR_INVALID_ARGUMENT);
  CHECK(std::strstr(mt_last_error(), "target_prefix has id") != nullptr);
  mt_session_free(session);
  mt_model_free(model);
}

TEST_CASE("C API shortlist option: on by default, off translates over the whole vocabulary", "[c_api][shortlist]") {
  // A model whose shortlist lets every source id translate to target id 7 only.
  auto plain = random_model(tiny_config(), 92, "c_api_plain.mtm");
  auto writer = mt::ModelWriter::from_model(*plain);
  REQUIRE(writer.ok());
  mt::ShortlistData shortlist;
  for (int s = 0; s < plain->config().source_vocab_size; ++s) {
    shortlist.targets.push_back(7);
    shortlist.row_ends.push_back(uint32_t(shortlist.targets.size()));
  }
  writer->set_shortlist(shortlist);
  const std::string path = scratch_path("c_api_shortlist.mtm");
  REQUIRE(writer->write(path).ok());
  mt_model* model = nullptr;
  REQUIRE(mt_model_load(path.c_str(), &model) == MT_OK);
  mt_session_options so;
  mt_session_options_init(&so);
  CHECK(so.shortlist == 1);
  so.max_batch_size = 1;
  const auto tokens_of = [&](int use) {
    so.shortlist = use;
    mt_session* session = nullptr;
    REQUIRE(mt_session_create(model, &so, &session) == MT_OK);
    mt_translate_options to;
    mt_translate_options_init(&to);
    to.max_decoding_length = 6;
    to.min_decoding_length = 6;
    const int32_t a[] = {5, 6, 7};
    const int32_t* sources[] = {a};
    const size_t lengths[] = {3};
    REQUIRE(mt_translate_ids(session, sources, lengths, 1, &to) == MT_OK);
    const int32_t* tokens = nullptr;
    size_t length = 0;
    float score = 0;
    REQUIRE(mt_result_hypothesis(session, 0, 0, &tokens, &length, &score) == MT_OK);
    std::vector<int32_t> out(tokens, tokens + length);
    mt_session_free(session);
    return out;
  };
  CHECK(tokens_of(1) == std::vector<int32_t>(6, 7));  // 7 and EOS are its only candidates
  CHECK(tokens_of(0) != std::vector<int32_t>(6, 7));
  mt_model_free(model);
}
