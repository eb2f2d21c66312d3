// The C API over the C++ one: status codes, a thread-local error message, and
// no exception ever leaving these functions.
#include "mt/mt.h"

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include "mt/languages.hpp"
#include "mt/session.hpp"

struct mt_model {
  std::shared_ptr<const mt::Model> model;
};

struct mt_cache {
  std::shared_ptr<mt::TranslationCache> cache;
};

struct mt_session {
  mt::Session session;
  std::vector<std::span<const int32_t>> sources;  // max_batch_size entries, sized at creation
  std::vector<std::string_view> texts;            // the same, for text input
  std::vector<std::span<const int32_t>> targets;  // score's targets, and the options' prefixes
  std::vector<std::string_view> target_texts;     // the same as text
  mt::Translations results;
  mt::TextTranslations text_results;
  bool have_results = false, have_text = false;
};

namespace {

thread_local char g_last_error[mt::Status::kMaxMessage + 32] = "";

mt_status fail(mt_status code, const char* message) {
  std::snprintf(g_last_error, sizeof(g_last_error), "%s", message);
  return code;
}

mt_status report(const mt::Status& s) {
  if (s.ok()) return MT_OK;
  return fail(static_cast<mt_status>(s.code()), s.message());
}

// Runs `body` and turns anything it throws (only allocation can, at load or
// creation) into a status.
template <class F>
mt_status guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(MT_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(MT_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(MT_ERROR_INTERNAL, "unknown exception");
  }
}

mt::SessionOptions to_cpp(const mt_session_options* o) {
  mt::SessionOptions s;
  if (o != nullptr) {
    s.max_batch_size = o->max_batch_size;
    s.max_source_length = o->max_source_length;
    s.max_target_length = o->max_target_length;
    s.max_beam_size = o->max_beam_size;
    s.num_threads = o->num_threads;
    s.max_text_bytes = o->max_text_bytes;
    // Unknown values become one SessionOptions::validate refuses.
    s.device = o->device == MT_DEVICE_CPU    ? mt::Device::cpu
               : o->device == MT_DEVICE_CUDA ? mt::Device::cuda
                                             : static_cast<mt::Device>(255);
    s.cuda_device = o->cuda_device;
    s.allow_tf32 = o->allow_tf32 != 0;
    s.thread_split = o->thread_split >= 0 && o->thread_split <= 2 ? static_cast<mt::ThreadSplit>(o->thread_split)
                                                                  : static_cast<mt::ThreadSplit>(255);
    s.quality_scores = o->quality_scores != 0;
    s.alignments = o->alignments != 0;
    s.alignment_layer = o->alignment_layer;
    s.shortlist = o->shortlist != 0;
  }
  return s;
}

// mt_translate_options.cancel points to a C11 atomic_int: the same object as std::atomic<int>.
static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);

// mt_translate_options.on_token behind a TokenCallback.
bool c_token_callback(void* data, const mt::TokenEvent& e) {
  const auto* o = static_cast<const mt_translate_options*>(data);
  const mt_token_event event{e.sentence, e.step, e.token, e.text.data(), e.text.size(), e.log_prob};
  return o->on_token(o->on_token_user_data, &event) != 0;
}

// The C words and ranges are the C++ ones, read in place.
static_assert(sizeof(mt_byte_range) == sizeof(mt::ByteRange) && offsetof(mt_byte_range, end) == offsetof(mt::ByteRange, end));
static_assert(sizeof(mt_word_score) == sizeof(mt::WordScore) && offsetof(mt_word_score, score) == offsetof(mt::WordScore, score));

// Copies a call's `count` inputs (data[i] of lengths[i] elements) into the
// session's views, sized at creation; an error for a null pointer with a length.
template <class T, class View>
mt_status take_inputs(const T* const* data, const size_t* lengths, size_t count, std::vector<View>* views,
                      const char* what) {
  for (size_t i = 0; i < count; ++i) {
    if (data[i] == nullptr && lengths[i] != 0) {
      char message[64];
      std::snprintf(message, sizeof(message), "a %s pointer is null", what);
      return fail(MT_ERROR_INVALID_ARGUMENT, message);
    }
    (*views)[i] = {data[i], lengths[i]};
  }
  return MT_OK;
}

// Options' per-sentence prefixes into the session's span arrays (sized at
// creation: nothing allocated); an error for more than the batch holds or a
// null pointer with a length.
mt_status to_cpp_prefixes(const mt_translate_options* o, mt_session* session, mt::TranslateOptions* t) {
  if (o == nullptr) return MT_OK;
  if (o->prefix_count > 0) {
    if (o->prefixes == nullptr || o->prefix_lengths == nullptr)
      return fail(MT_ERROR_INVALID_ARGUMENT, "prefixes and prefix_lengths must not be null with prefix_count > 0");
    if (o->prefix_count > session->targets.size())
      return fail(MT_ERROR_INVALID_ARGUMENT, "prefix_count exceeds the session's max_batch_size");
    if (const mt_status s = take_inputs(o->prefixes, o->prefix_lengths, o->prefix_count, &session->targets, "prefix");
        s != MT_OK)
      return s;
    t->prefixes = {session->targets.data(), o->prefix_count};
  }
  if (o->text_prefix_count > 0) {
    if (o->text_prefixes == nullptr || o->text_prefix_lengths == nullptr)
      return fail(MT_ERROR_INVALID_ARGUMENT,
                  "text_prefixes and text_prefix_lengths must not be null with text_prefix_count > 0");
    if (o->text_prefix_count > session->target_texts.size())
      return fail(MT_ERROR_INVALID_ARGUMENT, "text_prefix_count exceeds the session's max_batch_size");
    if (const mt_status s = take_inputs(o->text_prefixes, o->text_prefix_lengths, o->text_prefix_count,
                                        &session->target_texts, "text prefix");
        s != MT_OK)
      return s;
    t->text_prefixes = {session->target_texts.data(), o->text_prefix_count};
  }
  return MT_OK;
}

mt::TranslateOptions to_cpp(const mt_translate_options* o) {
  mt::TranslateOptions t;
  if (o != nullptr) {
    t.beam_size = o->beam_size;
    t.num_hypotheses = o->num_hypotheses;
    t.length_penalty = o->length_penalty;
    t.max_decoding_length = o->max_decoding_length;
    t.max_length_ratio = o->max_length_ratio;
    t.max_length_offset = o->max_length_offset;
    t.min_decoding_length = o->min_decoding_length;
    t.truncate_long_sources = o->truncate_long_sources != 0;
    // Checked by the translate calls (ids, lengths within the session's limits).
    if (o->source_prefix != nullptr) t.source_prefix = {o->source_prefix, o->source_prefix_length};
    if (o->target_prefix != nullptr) t.target_prefix = {o->target_prefix, o->target_prefix_length};
    // The options stay alive during the call that converted them.
    if (o->on_token != nullptr) t.on_token = {c_token_callback, const_cast<mt_translate_options*>(o)};
    t.cancel = static_cast<const std::atomic<int>*>(o->cancel);
    t.cache = o->cache != nullptr ? o->cache->cache.get() : nullptr;
    t.alternatives = o->alternatives;
    t.no_repeat_ngram_size = o->no_repeat_ngram_size;
    t.repetition_penalty = o->repetition_penalty;
  }
  return t;
}

// A prefix given as a length with no ids is a caller's mistake, refused as
// null arrays are elsewhere (not read as no prefix).
mt_status check_prefix_pointers(const mt_translate_options* o) {
  if (o == nullptr) return MT_OK;
  if (o->source_prefix == nullptr && o->source_prefix_length != 0)
    return fail(MT_ERROR_INVALID_ARGUMENT, "source_prefix must not be null when source_prefix_length is not 0");
  if (o->target_prefix == nullptr && o->target_prefix_length != 0)
    return fail(MT_ERROR_INVALID_ARGUMENT, "target_prefix must not be null when target_prefix_length is not 0");
  return MT_OK;
}

// Batch size check shared by both translate calls.
mt_status check_count(const mt_session* session, size_t count) {
  if (count <= session->sources.size()) return MT_OK;
  char message[128];
  std::snprintf(message, sizeof(message), "batch of %zu sentences exceeds the session's max_batch_size %zu", count,
                session->sources.size());
  return fail(MT_ERROR_CAPACITY_EXCEEDED, message);
}

// The hypotheses of sentence `sentence` of the last translation, or an error.
mt_status last_hypotheses(const mt_session* session, size_t sentence, std::span<const mt::Hypothesis>* out) {
  if (!session->have_results) return fail(MT_ERROR_INVALID_ARGUMENT, "no translation results");
  if (sentence >= session->results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
  *out = session->results[sentence];
  return MT_OK;
}

mt_status create_session(const mt_model* model, const mt_session_options* options, void* buffer, size_t buffer_size,
                         mt_session** out) {
  if (model == nullptr || out == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "model and session must not be null");
  *out = nullptr;
  const mt::SessionOptions opts = to_cpp(options);
  auto session = buffer == nullptr
                     ? mt::Session::create(model->model, opts)
                     : mt::Session::create(model->model, opts, {static_cast<std::byte*>(buffer), buffer_size});
  if (!session) return report(session.status());
  // Owned until handed out: a resize that throws (out of memory) frees it.
  auto s = std::make_unique<mt_session>(mt_session{std::move(session.value()), {}, {}, {}, {}, {}, {}});
  s->sources.resize(size_t(opts.max_batch_size));
  s->texts.resize(size_t(opts.max_batch_size));
  s->targets.resize(size_t(opts.max_batch_size));
  s->target_texts.resize(size_t(opts.max_batch_size));
  *out = s.release();
  return MT_OK;
}

}  // namespace

extern "C" {

const char* mt_last_error(void) { return g_last_error; }

mt_status mt_model_load(const char* path, mt_model** model) {
  if (path == nullptr || model == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "path and model must not be null");
  *model = nullptr;
  return guarded([&] {
    auto loaded = mt::Model::load(path);
    if (!loaded) return report(loaded.status());
    *model = new mt_model{std::move(loaded.value())};
    return MT_OK;
  });
}

mt_status mt_model_load_buffer(const void* data, size_t size, mt_model** model) {
  if (data == nullptr || model == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "data and model must not be null");
  *model = nullptr;
  return guarded([&] {
    auto loaded = mt::Model::from_buffer({static_cast<const uint8_t*>(data), size});
    if (!loaded) return report(loaded.status());
    *model = new mt_model{std::move(loaded.value())};
    return MT_OK;
  });
}

void mt_model_free(mt_model* model) { delete model; }

void mt_session_options_init(mt_session_options* o) {
  if (o == nullptr) return;
  const mt::SessionOptions d;
  *o = {d.max_batch_size,
        d.max_source_length,
        d.max_target_length,
        d.max_beam_size,
        d.num_threads,
        d.max_text_bytes,
        static_cast<int>(d.device),
        d.cuda_device,
        d.allow_tf32 ? 1 : 0,
        static_cast<int>(d.thread_split),
        d.quality_scores ? 1 : 0,
        d.alignments ? 1 : 0,
        d.alignment_layer,
        d.shortlist ? 1 : 0};
}

void mt_translate_options_init(mt_translate_options* o) {
  if (o == nullptr) return;
  const mt::TranslateOptions d;
  *o = {d.beam_size,
        d.num_hypotheses,
        d.length_penalty,
        d.max_decoding_length,
        d.max_length_ratio,
        d.max_length_offset,
        d.min_decoding_length,
        d.truncate_long_sources ? 1 : 0,
        nullptr,
        0,
        nullptr,
        0,
        nullptr,
        nullptr,
        nullptr,
        nullptr,
        nullptr,
        nullptr,
        0,
        nullptr,
        nullptr,
        0,
        d.alternatives,
        d.no_repeat_ngram_size,
        d.repetition_penalty};
}

mt_status mt_cache_create(size_t max_entries, size_t memory_bytes, mt_cache** cache) {
  if (cache == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "cache must not be null");
  *cache = nullptr;
  return guarded([&] {
    auto created = mt::TranslationCache::create({max_entries, memory_bytes});
    if (!created) return report(created.status());
    *cache = new mt_cache{std::move(created.value())};
    return MT_OK;
  });
}

void mt_cache_free(mt_cache* cache) { delete cache; }

mt_status mt_cache_stats_get(const mt_cache* cache, mt_cache_stats* stats) {
  if (cache == nullptr || stats == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "cache and stats must not be null");
  const mt::TranslationCache::Stats s = cache->cache->stats();
  *stats = {s.hits, s.misses, s.insertions, s.evictions, s.entries};
  return MT_OK;
}

mt_status mt_language_prefixes(const mt_model* model, const char* source_language, const char* target_language,
                               int32_t* source_id, int32_t* target_id) {
  if (model == nullptr || source_id == nullptr || target_id == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "model, source_id and target_id must not be null");
  *source_id = *target_id = -1;
  return guarded([&] {
    auto prefixes = mt::language_prefixes(*model->model, source_language ? source_language : "",
                                          target_language ? target_language : "");
    if (!prefixes) return report(prefixes.status());
    if (!prefixes->source_prefix.empty()) *source_id = prefixes->source_prefix.front();
    if (!prefixes->target_prefix.empty()) *target_id = prefixes->target_prefix.front();
    return MT_OK;
  });
}

mt_status mt_session_memory_size(const mt_model* model, const mt_session_options* options, size_t* bytes) {
  if (model == nullptr || bytes == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "model and bytes must not be null");
  return guarded([&] {
    auto size = mt::Session::required_memory(*model->model, to_cpp(options));
    if (!size) return report(size.status());
    *bytes = size.value();
    return MT_OK;
  });
}

mt_status mt_session_create(const mt_model* model, const mt_session_options* options, mt_session** session) {
  return guarded([&] { return create_session(model, options, nullptr, 0, session); });
}

mt_status mt_session_create_in(const mt_model* model, const mt_session_options* options, void* buffer,
                               size_t buffer_size, mt_session** session) {
  if (buffer == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "buffer must not be null");
  return guarded([&] { return create_session(model, options, buffer, buffer_size, session); });
}

void mt_session_free(mt_session* session) { delete session; }

mt_status mt_translate_ids(mt_session* session, const int32_t* const* sources, const size_t* lengths, size_t count,
                           const mt_translate_options* options) {
  if (session == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "session must not be null");
  session->have_results = session->have_text = false;
  if (const mt_status s = check_prefix_pointers(options); s != MT_OK) return s;
  if (count > 0 && (sources == nullptr || lengths == nullptr)) {
    return fail(MT_ERROR_INVALID_ARGUMENT, "sources and lengths must not be null");
  }
  if (const mt_status s = check_count(session, count); s != MT_OK) return s;
  if (const mt_status s = take_inputs(sources, lengths, count, &session->sources, "source"); s != MT_OK) return s;
  mt::TranslateOptions cpp = to_cpp(options);
  if (const mt_status s = to_cpp_prefixes(options, session, &cpp); s != MT_OK) return s;
  return guarded([&] {
    const mt_status s =
        report(session->session.translate({session->sources.data(), count}, cpp, &session->results));
    session->have_results = s == MT_OK;
    return s;
  });
}

mt_status mt_translate_text(mt_session* session, const char* const* texts, const size_t* lengths, size_t count,
                            const mt_translate_options* options) {
  if (session == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "session must not be null");
  session->have_results = session->have_text = false;
  if (const mt_status s = check_prefix_pointers(options); s != MT_OK) return s;
  if (count > 0 && (texts == nullptr || lengths == nullptr)) {
    return fail(MT_ERROR_INVALID_ARGUMENT, "texts and lengths must not be null");
  }
  if (const mt_status s = check_count(session, count); s != MT_OK) return s;
  if (const mt_status s = take_inputs(texts, lengths, count, &session->texts, "text"); s != MT_OK) return s;
  mt::TranslateOptions cpp = to_cpp(options);
  if (const mt_status s = to_cpp_prefixes(options, session, &cpp); s != MT_OK) return s;
  return guarded([&] {
    const mt_status s =
        report(session->session.translate_text({session->texts.data(), count}, cpp, &session->text_results));
    session->have_text = s == MT_OK;
    return s;
  });
}

mt_status mt_score_ids(mt_session* session, const int32_t* const* sources, const size_t* source_lengths,
                       const int32_t* const* targets, const size_t* target_lengths, size_t count,
                       const mt_translate_options* options) {
  if (session == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "session must not be null");
  session->have_results = session->have_text = false;
  if (const mt_status s = check_prefix_pointers(options); s != MT_OK) return s;
  if (count > 0 && (sources == nullptr || source_lengths == nullptr || targets == nullptr || target_lengths == nullptr)) {
    return fail(MT_ERROR_INVALID_ARGUMENT, "sources, targets and their lengths must not be null");
  }
  if (const mt_status s = check_count(session, count); s != MT_OK) return s;
  if (const mt_status s = take_inputs(sources, source_lengths, count, &session->sources, "source"); s != MT_OK)
    return s;
  if (const mt_status s = take_inputs(targets, target_lengths, count, &session->targets, "target"); s != MT_OK)
    return s;
  return guarded([&] {
    const mt_status s = report(session->session.score({session->sources.data(), count},
                                                      {session->targets.data(), count}, to_cpp(options),
                                                      &session->results));
    session->have_results = s == MT_OK;
    return s;
  });
}

mt_status mt_score_text(mt_session* session, const char* const* sources, const size_t* source_lengths,
                        const char* const* targets, const size_t* target_lengths, size_t count,
                        const mt_translate_options* options) {
  if (session == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "session must not be null");
  session->have_results = session->have_text = false;
  if (const mt_status s = check_prefix_pointers(options); s != MT_OK) return s;
  if (count > 0 && (sources == nullptr || source_lengths == nullptr || targets == nullptr || target_lengths == nullptr)) {
    return fail(MT_ERROR_INVALID_ARGUMENT, "sources, targets and their lengths must not be null");
  }
  if (const mt_status s = check_count(session, count); s != MT_OK) return s;
  if (const mt_status s = take_inputs(sources, source_lengths, count, &session->texts, "source"); s != MT_OK)
    return s;
  if (const mt_status s = take_inputs(targets, target_lengths, count, &session->target_texts, "target"); s != MT_OK)
    return s;
  return guarded([&] {
    const mt_status s = report(session->session.score_text({session->texts.data(), count},
                                                           {session->target_texts.data(), count}, to_cpp(options),
                                                           &session->text_results));
    session->have_text = s == MT_OK;
    return s;
  });
}

// Hypothesis k of sentence `sentence` of the last text results, or an error.
mt_status last_text_hypothesis(const mt_session* session, size_t sentence, size_t k, const mt::TextHypothesis** out) {
  if (!session->have_text) return fail(MT_ERROR_INVALID_ARGUMENT, "no text translation results");
  if (sentence >= session->text_results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
  const auto hyps = session->text_results[sentence];
  if (k >= hyps.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "hypothesis index out of range");
  *out = &hyps[k];
  return MT_OK;
}

mt_status mt_result_log_probs(const mt_session* session, size_t sentence, size_t k, const float** log_probs,
                              size_t* count, float* log_prob) {
  if (session == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "session must not be null");
  std::span<const float> values;
  float total = 0.0f;
  if (session->have_text) {
    const mt::TextHypothesis* h = nullptr;
    if (const mt_status s = last_text_hypothesis(session, sentence, k, &h); s != MT_OK) return s;
    values = h->token_log_probs, total = h->log_prob;
  } else {
    std::span<const mt::Hypothesis> hyps;
    if (const mt_status s = last_hypotheses(session, sentence, &hyps); s != MT_OK) return s;
    if (k >= hyps.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "hypothesis index out of range");
    values = hyps[k].token_log_probs, total = hyps[k].log_prob;
  }
  if (log_probs != nullptr) *log_probs = values.data();
  if (count != nullptr) *count = values.size();
  if (log_prob != nullptr) *log_prob = total;
  return MT_OK;
}

mt_status mt_result_alignment(const mt_session* session, size_t sentence, size_t k, const float** weights,
                              size_t* rows, size_t* columns, size_t* stride) {
  if (session == nullptr || weights == nullptr || rows == nullptr || columns == nullptr || stride == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session, weights, rows, columns and stride must not be null");
  if (!session->session.options().alignments)
    return fail(MT_ERROR_INVALID_ARGUMENT, "alignments need a session created with alignments");
  mt::Alignment a;
  if (session->have_text) {
    const mt::TextHypothesis* h = nullptr;
    if (const mt_status s = last_text_hypothesis(session, sentence, k, &h); s != MT_OK) return s;
    a = h->alignment;
  } else {
    std::span<const mt::Hypothesis> hyps;
    if (const mt_status s = last_hypotheses(session, sentence, &hyps); s != MT_OK) return s;
    if (k >= hyps.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "hypothesis index out of range");
    a = hyps[k].alignment;
  }
  *weights = a.data, *rows = a.rows, *columns = a.columns, *stride = a.stride;
  return MT_OK;
}

mt_status mt_result_source_ranges(const mt_session* session, size_t sentence, const mt_byte_range** ranges,
                                  size_t* count) {
  if (session == nullptr || ranges == nullptr || count == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session, ranges and count must not be null");
  if (!session->session.options().alignments)
    return fail(MT_ERROR_INVALID_ARGUMENT, "source ranges need a session created with alignments");
  if (!session->have_text) return fail(MT_ERROR_INVALID_ARGUMENT, "no text translation results");
  if (sentence >= session->text_results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
  const auto r = session->text_results.source_ranges(sentence);
  *ranges = reinterpret_cast<const mt_byte_range*>(r.data());
  *count = r.size();
  return MT_OK;
}

mt_status mt_result_token_ranges(const mt_session* session, size_t sentence, size_t k, const mt_byte_range** ranges,
                                 size_t* count) {
  if (session == nullptr || ranges == nullptr || count == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session, ranges and count must not be null");
  const mt::TextHypothesis* h = nullptr;
  if (const mt_status s = last_text_hypothesis(session, sentence, k, &h); s != MT_OK) return s;
  if (!session->session.options().quality_scores && !session->session.options().alignments)
    return fail(MT_ERROR_INVALID_ARGUMENT, "token ranges need a session created with quality_scores or alignments");
  *ranges = reinterpret_cast<const mt_byte_range*>(h->token_ranges.data());
  *count = h->token_ranges.size();
  return MT_OK;
}

mt_status mt_result_words(const mt_session* session, size_t sentence, size_t k, const mt_word_score** words,
                          size_t* count, float* quality) {
  if (session == nullptr || words == nullptr || count == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session, words and count must not be null");
  const mt::TextHypothesis* h = nullptr;
  if (const mt_status s = last_text_hypothesis(session, sentence, k, &h); s != MT_OK) return s;
  if (!session->session.options().quality_scores)
    return fail(MT_ERROR_INVALID_ARGUMENT, "word scores need a session created with quality_scores");
  *words = reinterpret_cast<const mt_word_score*>(h->words.data());
  *count = h->words.size();
  if (quality != nullptr) *quality = h->quality;
  return MT_OK;
}

mt_status mt_result_stopped(const mt_session* session, size_t sentence, int* stopped) {
  if (session == nullptr || stopped == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session and stopped must not be null");
  if (session->have_text) {
    if (sentence >= session->text_results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
    *stopped = session->text_results.stopped(sentence) ? 1 : 0;
    return MT_OK;
  }
  if (!session->have_results) return fail(MT_ERROR_INVALID_ARGUMENT, "no results: translate first");
  if (sentence >= session->results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
  *stopped = session->results.stopped(sentence) ? 1 : 0;
  return MT_OK;
}

mt_status mt_result_count(const mt_session* session, size_t sentence, size_t* count) {
  if (session == nullptr || count == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session and count must not be null");
  if (session->have_text) {
    if (sentence >= session->text_results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
    *count = session->text_results[sentence].size();
    return MT_OK;
  }
  std::span<const mt::Hypothesis> hyps;
  if (const mt_status s = last_hypotheses(session, sentence, &hyps); s != MT_OK) return s;
  *count = hyps.size();
  return MT_OK;
}

mt_status mt_result_hypothesis(const mt_session* session, size_t sentence, size_t k, const int32_t** tokens,
                               size_t* length, float* score) {
  if (session == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "session must not be null");
  if (session->have_text) {
    return fail(MT_ERROR_INVALID_ARGUMENT, "the last translation was text: read it with mt_result_text");
  }
  std::span<const mt::Hypothesis> hyps;
  if (const mt_status s = last_hypotheses(session, sentence, &hyps); s != MT_OK) return s;
  if (k >= hyps.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "hypothesis index out of range");
  if (tokens != nullptr) *tokens = hyps[k].tokens.data();
  if (length != nullptr) *length = hyps[k].tokens.size();
  if (score != nullptr) *score = hyps[k].score;
  return MT_OK;
}

mt_status mt_result_text(const mt_session* session, size_t sentence, size_t k, const char** text, size_t* length,
                         float* score) {
  if (session == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "session must not be null");
  if (!session->have_text) return fail(MT_ERROR_INVALID_ARGUMENT, "no text translation results");
  if (sentence >= session->text_results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
  const auto hyps = session->text_results[sentence];
  if (k >= hyps.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "hypothesis index out of range");
  if (text != nullptr) *text = hyps[k].text.data();
  if (length != nullptr) *length = hyps[k].text.size();
  if (score != nullptr) *score = hyps[k].score;
  return MT_OK;
}

mt_status mt_result_truncated(const mt_session* session, size_t sentence, int* truncated) {
  if (session == nullptr || truncated == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session and truncated must not be null");
  if (session->have_text) {
    if (sentence >= session->text_results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
    *truncated = session->text_results.truncated(sentence) ? 1 : 0;
    return MT_OK;
  }
  if (!session->have_results) return fail(MT_ERROR_INVALID_ARGUMENT, "no translation results");
  if (sentence >= session->results.size()) return fail(MT_ERROR_INVALID_ARGUMENT, "sentence index out of range");
  *truncated = session->results.truncated(sentence) ? 1 : 0;
  return MT_OK;
}

}  // extern "C"

struct mt_prefixes {
  mt::NonBreakingPrefixes prefixes;
};

namespace {

// The C writers behind a ParagraphSink.
class CallbackSink final : public mt::ParagraphSink {
 public:
  explicit CallbackSink(const mt_paragraph_options& o) : o_(o) {}
  mt::Status write(std::string_view bytes) override {
    if (o_.write_text(o_.user_data, bytes.data(), bytes.size()) != 0)
      return mt::Status::error(mt::Errc::cancelled, "write_text stopped the translation");
    return {};
  }
  mt::Status sentence(const mt::TranslatedSentence& s) override {
    if (o_.write_sentence == nullptr) return {};
    const mt_translated_sentence c{s.source_begin, s.source_end, s.target_begin,     s.target_end,
                                   s.paragraph,    s.pieces,     s.truncated ? 1 : 0};
    if (o_.write_sentence(o_.user_data, &c) != 0)
      return mt::Status::error(mt::Errc::cancelled, "write_sentence stopped the translation");
    return {};
  }

 private:
  const mt_paragraph_options& o_;
};

mt_status wrap_prefixes(mt::Expected<mt::NonBreakingPrefixes> parsed, mt_prefixes** prefixes) {
  if (!parsed) return report(parsed.status());
  *prefixes = new mt_prefixes{std::move(parsed.value())};
  return MT_OK;
}

}  // namespace

mt_status mt_prefixes_parse(const char* list, size_t length, mt_prefixes** prefixes) {
  if (prefixes == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "prefixes must not be null");
  *prefixes = nullptr;
  if (list == nullptr && length != 0) return fail(MT_ERROR_INVALID_ARGUMENT, "list must not be null");
  return guarded([&] { return wrap_prefixes(mt::NonBreakingPrefixes::parse({list, length}), prefixes); });
}

mt_status mt_prefixes_builtin(const char* language, mt_prefixes** prefixes) {
  if (prefixes == nullptr || language == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "language and prefixes must not be null");
  *prefixes = nullptr;
  return guarded([&] { return wrap_prefixes(mt::NonBreakingPrefixes::builtin(language), prefixes); });
}

void mt_prefixes_free(mt_prefixes* prefixes) { delete prefixes; }

void mt_paragraph_options_init(mt_paragraph_options* options) {
  if (options == nullptr) return;
  *options = mt_paragraph_options{};
  options->split_mode = MT_SPLIT_LINES;
}

mt_status mt_translate_paragraphs(mt_session* session, const char* text, size_t length,
                                  const mt_paragraph_options* paragraphs, const mt_translate_options* options) {
  if (session == nullptr || paragraphs == nullptr)
    return fail(MT_ERROR_INVALID_ARGUMENT, "session and paragraphs must not be null");
  session->have_results = session->have_text = false;
  if (const mt_status s = check_prefix_pointers(options); s != MT_OK) return s;
  if (text == nullptr && length != 0) return fail(MT_ERROR_INVALID_ARGUMENT, "text must not be null");
  if (paragraphs->write_text == nullptr) return fail(MT_ERROR_INVALID_ARGUMENT, "write_text must not be null");
  if (paragraphs->split_mode < MT_SPLIT_SENTENCE || paragraphs->split_mode > MT_SPLIT_WRAPPED)
    return fail(MT_ERROR_INVALID_ARGUMENT, "split_mode must be MT_SPLIT_SENTENCE, MT_SPLIT_LINES or MT_SPLIT_WRAPPED");
  if (paragraphs->format != MT_FORMAT_PLAIN && paragraphs->format != MT_FORMAT_HTML)
    return fail(MT_ERROR_INVALID_ARGUMENT, "format must be MT_FORMAT_PLAIN or MT_FORMAT_HTML");
  mt::ParagraphOptions p;
  p.mode = static_cast<mt::SplitMode>(paragraphs->split_mode);
  p.format = static_cast<mt::TextFormat>(paragraphs->format);
  p.prefixes = paragraphs->prefixes != nullptr ? &paragraphs->prefixes->prefixes : nullptr;
  return guarded([&] {
    CallbackSink sink(*paragraphs);
    return report(session->session.translate_paragraphs({text, length}, p, to_cpp(options), &sink));
  });
}
