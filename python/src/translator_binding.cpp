// libmt._Translator: a session and the lock that serialises its use (the
// Python class libmt.Translator adds the iterable and file helpers). The GIL
// is released while translating, so translators on other threads run at the
// same time; results are copied out of the session before the lock is let go.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bindings.hpp"
#include "errors.hpp"
#include "paragraphs_binding.hpp"
#include "text.hpp"

namespace py = pybind11;

namespace mt::python {

std::shared_ptr<const Model> model_argument(py::handle source) {
  if (py::isinstance<PyModel>(source)) return source.cast<const PyModel&>().model;
  const std::string path = path_of(source);  // TypeError for anything but a path
  Expected<std::shared_ptr<const Model>> model = [&] {
    py::gil_scoped_release release;
    return Model::load(path);
  }();
  check(model.status());
  return std::move(model.value());
}

namespace {

struct PyTranslator {
  std::shared_ptr<const Model> model;
  std::optional<Session> session;
  std::mutex mutex;  // a session is single-threaded
  // The thread holding `mutex`, and the one running its call's on_token: a
  // call on this translator from either would wait for itself forever.
  std::atomic<std::thread::id> owner{}, callback_thread{};
};

// Runs f() with the GIL released and the translator's session locked. A
// call made while this thread holds the lock (a translate() inside the same
// translator's on_token) is refused: std::mutex is not recursive.
template <class F>
auto locked(PyTranslator& t, const char* method, F f) {
  const std::thread::id self = std::this_thread::get_id();
  if (t.owner.load() == self || t.callback_thread.load() == self) {
    throw std::runtime_error(std::string(method) +
                             "(): called from inside this translator's own on_token, which would wait for itself; "
                             "use another Translator (translators can share one Model)");
  }
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(t.mutex);
  struct Owner {
    std::atomic<std::thread::id>& owner;
    ~Owner() { owner.store({}); }  // before the lock is let go
  } owner{t.owner};
  t.owner.store(self);
  return f();
}

// One sentence's n-best, copied out of the session.
struct SentenceResult {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  std::vector<float> scores;
  std::vector<float> log_probs;
  bool truncated = false;
  bool stopped = false;
  std::vector<std::vector<float>> token_log_probs;
  // SessionOptions::quality_scores: each hypothesis' words (str indices of
  // its text, and the score) and quality.
  std::vector<std::vector<std::tuple<size_t, size_t, float>>> words;
  std::vector<float> qualities;
  // SessionOptions::alignments: each hypothesis' rows, and (text) each
  // source column's str indices.
  std::vector<std::vector<std::vector<float>>> alignments;
  std::vector<std::pair<size_t, size_t>> source_ranges;
  bool has_source_ranges = false;
};

// The options of a call beyond the common ones (Translator.translate's
// prefixes, alternatives and repetition guards), and the storage their spans
// point into, alive for the call.
struct ExtraOptions {
  std::vector<std::vector<int32_t>> prefix_ids;
  std::vector<std::span<const int32_t>> prefix_spans;
  std::vector<std::string> prefix_texts;
  std::vector<std::string_view> prefix_views;

  // extra: {"prefixes": [str | bytes | None, ...] or [[ids], ...],
  // "alternatives": int, "no_repeat_ngram_size": int, "repetition_penalty": float},
  // for a call of `sources` sentences.
  void read(const py::dict& extra, bool text, size_t sources, TranslateOptions* o) {
    if (extra.contains("alternatives"))
      o->alternatives = cast_argument<int>(extra["alternatives"], "alternatives", "int");
    if (extra.contains("no_repeat_ngram_size"))
      o->no_repeat_ngram_size = cast_argument<int>(extra["no_repeat_ngram_size"], "no_repeat_ngram_size", "int");
    if (extra.contains("repetition_penalty"))
      o->repetition_penalty = cast_argument<float>(extra["repetition_penalty"], "repetition_penalty", "float");
    if (!extra.contains("prefixes") || extra["prefixes"].is_none()) return;
    const auto prefixes = cast_argument<py::sequence>(extra["prefixes"], "prefixes", "a list");
    const size_t count = size_t(py::len(prefixes));
    if (count > sources) {
      throw py::value_error("prefixes: " + std::to_string(count) + " given for " + std::to_string(sources) +
                            " sources: at most one per source");
    }
    for (size_t i = 0; i < count; ++i) {
      const py::object p = prefixes[i];
      const std::string what = "prefixes[" + std::to_string(i) + "]";
      if (text) {
        prefix_texts.push_back(p.is_none() ? std::string() : utf8_of(p, what.c_str()));
      } else {
        prefix_ids.push_back(p.is_none() ? std::vector<int32_t>()
                                         : cast_argument<std::vector<int32_t>>(p, what, "a list of token ids or None"));
      }
    }
    prefix_views.assign(prefix_texts.begin(), prefix_texts.end());
    prefix_spans.assign(prefix_ids.begin(), prefix_ids.end());
    if (text) {
      o->text_prefixes = prefix_views;
    } else {
      o->prefixes = prefix_spans;
    }
  }

  // The options of sentences [begin, end) of the call.
  TranslateOptions batch(TranslateOptions o, size_t begin, size_t end) const {
    const auto part = [&](auto all) {
      return begin >= all.size() ? decltype(all)() : all.subspan(begin, std::min(end, all.size()) - begin);
    };
    o.prefixes = part(o.prefixes);
    o.text_prefixes = part(o.text_prefixes);
    return o;
  }
};

// libmt.TranslationCache: shared by translators of one model.
struct PyCache {
  std::shared_ptr<TranslationCache> cache;
};

// libmt.CancelToken. A call never gives the session the token's own flag
// but one of its own (CallCancel), which cancel() sets too: a call can then
// stop itself (an exception in on_token) and leave the caller's token as it was.
struct PyCancelToken {
  std::atomic<int> flag{0};
  std::mutex mutex;                      // guards calls
  std::vector<std::atomic<int>*> calls;  // the flags of the calls under way it was given to

  void cancel() {
    std::lock_guard<std::mutex> lock(mutex);
    flag.store(1);
    for (std::atomic<int>* call : calls) call->store(1);
  }
};

// The cancel flag of one call (TranslateOptions::cancel): set by its token's
// cancel() while the call lasts, or by the call itself.
class CallCancel {
 public:
  explicit CallCancel(PyCancelToken* token) : token_(token) {
    if (token_ == nullptr) return;
    std::lock_guard<std::mutex> lock(token_->mutex);
    flag_.store(token_->flag.load());  // a token cancelled before the call cancels it at once
    token_->calls.push_back(&flag_);
  }
  ~CallCancel() {
    if (token_ == nullptr) return;
    std::lock_guard<std::mutex> lock(token_->mutex);
    std::erase(token_->calls, &flag_);
  }
  CallCancel(const CallCancel&) = delete;
  CallCancel& operator=(const CallCancel&) = delete;

  std::atomic<int>* flag() { return &flag_; }

 private:
  PyCancelToken* token_;
  std::atomic<int> flag_{0};
};

// A Python on_token(sentence, step, token, text, log_prob) behind a
// TokenCallback: called with the GIL taken (from the session's threads too);
// its first exception stops the whole call (through `cancel`, the call's own
// flag) and is raised once the call returns.
struct PyTokenCallback {
  py::object function;
  size_t first = 0;  // the batch's first sentence in the call
  std::atomic<int>* cancel = nullptr;
  std::atomic<std::thread::id>* thread = nullptr;  // PyTranslator::callback_thread
  std::optional<py::error_already_set> error;

  bool operator()(const TokenEvent& e) {
    py::gil_scoped_acquire gil;
    if (error) return true;
    struct Running {  // marks this thread as the callback's while it runs
      std::atomic<std::thread::id>& thread;
      std::thread::id before = thread.exchange(std::this_thread::get_id());
      ~Running() { thread.store(before); }
    } running{*thread};
    try {
      const py::object stop = function(first + e.sentence, e.step, e.token, str_of(e.text), e.log_prob);
      return py::bool_(stop);
    } catch (py::error_already_set& raised) {
      error.emplace(std::move(raised));
      cancel->store(1);
      return true;
    }
  }
};

ThreadSplit thread_split_of(const std::string& name) {
  if (name == "automatic") return ThreadSplit::automatic;
  if (name == "layers") return ThreadSplit::layers;
  if (name == "sentences") return ThreadSplit::sentences;
  throw py::value_error("thread_split = '" + name + "': must be 'automatic', 'layers' or 'sentences'");
}

Device device_of(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw py::value_error("device = '" + name + "': must be 'cpu' or 'cuda'");
}


// A length option given in tokens without EOS (as mt_translate's), or None
// for the default capped to what the model's positions allow.
int length_option(py::object value, const char* name, int fallback, int model_limit) {
  if (value.is_none()) return std::min(fallback, model_limit);
  const long long v = cast_argument<long long>(value, name, "int or None");
  if (v < 1 || v > model_limit) {
    throw py::value_error(std::string(name) + " = " + std::to_string(v) + ": must be in [1, " +
                          std::to_string(model_limit) + "] (the model's max_positions allow no more)");
  }
  return int(v);
}

void create_session(PyTranslator& t, const SessionOptions& options) {
  Expected<Session> session = [&] {
    py::gil_scoped_release release;
    return Session::create(t.model, options);
  }();
  if (!session.ok() && session.status().code() == Errc::unsupported && options.device == Device::cuda) {
    // No GPU, or no CUDA in this build: the latter's message says how to
    // rebuild with CMake; say how for pip too.
    const std::string why = session.status().message();
    const bool unbuilt = why.find("built without CUDA") != std::string::npos;
    throw py::value_error("device = 'cuda': " + why +
                          (unbuilt ? "; the Python package builds it with LIBMT_CUDA=ON pip install ." : ""));
  }
  check(session.status());
  t.session.emplace(std::move(session.value()));
}

// Copies sentence results out of the session; with `detail` off only the
// best hypothesis' text (what translate() returns then). With the session's
// alignments or quality_scores, every hypothesis gets its entry, an empty one
// for a hypothesis of no tokens, so that the lists stay in step with the
// hypotheses. Runs without the GIL: reports failure as a Status, never a
// Python exception.
template <class Hyp>
Status copy_nbest(std::span<const Hyp> nbest, bool truncated, const Model& model, const SessionOptions& session,
                  bool decode, bool detail, SentenceResult* out) {
  out->truncated = truncated;
  for (const Hyp& h : detail ? nbest : nbest.first(std::min<size_t>(1, nbest.size()))) {
    if (detail) {
      out->ids.emplace_back(h.tokens.begin(), h.tokens.end());
      out->scores.push_back(h.score);
      out->log_probs.push_back(h.log_prob);
      out->token_log_probs.emplace_back(h.token_log_probs.begin(), h.token_log_probs.end());
      if (session.alignments) {
        auto& rows = out->alignments.emplace_back();
        for (size_t r = 0; r < h.alignment.rows; ++r) rows.emplace_back(h.alignment.row(r).begin(), h.alignment.row(r).end());
      }
    }
    if constexpr (std::is_same_v<Hyp, TextHypothesis>) {
      out->texts.emplace_back(h.text);
      if (detail && session.quality_scores) {
        std::vector<size_t> bytes;
        for (const WordScore& w : h.words) bytes.insert(bytes.end(), {w.bytes.begin, w.bytes.end});
        const std::vector<size_t> chars = str_offsets(h.text, bytes);
        auto& words = out->words.emplace_back();
        for (size_t i = 0; i < h.words.size(); ++i) words.emplace_back(chars[2 * i], chars[2 * i + 1], h.words[i].score);
        out->qualities.push_back(h.quality);
      }
    } else if (decode) {
      std::string text;
      MT_RETURN_IF_ERROR(model.decode(h.tokens, &text, /*line_breaks_as_spaces=*/true));
      out->texts.push_back(std::move(text));
    }
  }
  return {};
}

// The UTF-8 of a call's texts (utf8_of), and how each was encoded; `name`
// names the argument in errors.
struct Utf8Texts {
  std::vector<std::string> texts;
  std::vector<bool> surrogates_passed;

  Utf8Texts(const py::sequence& items, const char* name) {
    const size_t count = size_t(py::len(items));
    texts.reserve(count);
    surrogates_passed.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      bool passed = false;
      texts.push_back(utf8_of(items[i], (name + ("[" + std::to_string(i) + "]")).c_str(), &passed));
      surrogates_passed.push_back(passed);
    }
  }
};

// SessionOptions::alignments: sentence i's source columns as str indices of
// its text (its UTF-8, encoded as `surrogates_passed` says).
void copy_source_ranges(const TextTranslations& translations, size_t i, std::string_view text, bool surrogates_passed,
                        SentenceResult* out) {
  const std::span<const ByteRange> ranges = translations.source_ranges(i);
  if (ranges.empty()) return;
  std::vector<size_t> bytes;
  for (const ByteRange& r : ranges) bytes.insert(bytes.end(), {r.begin, r.end});
  const std::vector<size_t> chars = str_offsets(text, bytes, surrogates_passed);
  for (size_t c = 0; c < ranges.size(); ++c) out->source_ranges.emplace_back(chars[2 * c], chars[2 * c + 1]);
  out->has_source_ranges = true;
}

// Translates `count` sources in batches of the session's max_batch_size;
// `run(begin, end, results)` translates one batch with the GIL released and
// the session locked, so it must not touch Python objects or raise Python
// exceptions. Ctrl-C is seen between batches. `method` names the call in errors.
template <class Run>
std::vector<SentenceResult> in_batches(PyTranslator& t, const char* method, size_t count, Run run) {
  std::vector<SentenceResult> results(count);
  const size_t batch = size_t(t.session->options().max_batch_size);
  for (size_t begin = 0; begin < count; begin += batch) {
    const size_t end = std::min(count, begin + batch);
    const Status status = locked(t, method, [&] { return run(begin, end, results.data() + begin); });
    if (!status.ok()) {
      throw_status(
          status, count > batch ? "sources[" + std::to_string(begin) + ":" + std::to_string(end) + "]" : std::string());
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  return results;
}

py::object python_results(const std::vector<SentenceResult>& results, bool detail, bool has_text) {
  py::list out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const SentenceResult& r = results[i];
    if (!detail) {
      out[i] = str_of(r.texts.empty() ? std::string_view() : std::string_view(r.texts[0]));
      continue;
    }
    py::object texts = py::none();
    if (has_text) {
      py::list list;
      for (const std::string& s : r.texts) list.append(str_of(s));
      texts = list;
    }
    out[i] = py::make_tuple(texts, py::cast(r.ids), py::cast(r.scores), py::cast(r.log_probs), r.truncated, r.stopped,
                            py::cast(r.token_log_probs), r.words.empty() ? py::object(py::none()) : py::cast(r.words),
                            r.qualities.empty() ? py::object(py::none()) : py::cast(r.qualities),
                            r.alignments.empty() ? py::object(py::none()) : py::cast(r.alignments),
                            r.has_source_ranges ? py::cast(r.source_ranges) : py::object(py::none()));
  }
  return out;
}

// The translate options of a call, checked against the translator's session
// (the prefixes are the caller's, alive for the call).
TranslateOptions checked_options(const PyTranslator& t, int beam_size, int num_hypotheses, float length_penalty,
                                 int max_decoding_length, float max_length_ratio, int max_length_offset,
                                 int min_decoding_length, bool truncate, const std::vector<int32_t>& source_prefix,
                                 const std::vector<int32_t>& target_prefix) {
  const TranslateOptions o{.beam_size = beam_size,
                           .num_hypotheses = num_hypotheses,
                           .length_penalty = length_penalty,
                           .max_decoding_length = max_decoding_length,
                           .max_length_ratio = max_length_ratio,
                           .max_length_offset = max_length_offset,
                           .min_decoding_length = min_decoding_length,
                           .truncate_long_sources = truncate,
                           .source_prefix = source_prefix,
                           .target_prefix = target_prefix};
  check(o.validate(t.session->options()));
  return o;
}

}  // namespace

void bind_translator(py::module_& m) {
  py::class_<PyCache>(m, "TranslationCache",
                      "Earlier translations, found again without decoding: give it to translate(cache=...) or "
                      "translate_paragraphs(cache=...). Its memory is allocated here, once; translators of one "
                      "model on any threads may share it. The key is the model, every option that changes the "
                      "output and the whole source.")
      .def(py::init([](size_t max_entries, size_t memory_bytes) {
             auto created = TranslationCache::create({max_entries, memory_bytes});
             check(created.status());
             return PyCache{std::move(created.value())};
           }),
           py::arg("max_entries") = 1024, py::arg("memory_bytes") = 0)
      .def("stats",
           [](const PyCache& c) {
             const TranslationCache::Stats s = c.cache->stats();
             py::dict d;
             d["hits"] = s.hits, d["misses"] = s.misses, d["insertions"] = s.insertions;
             d["evictions"] = s.evictions, d["entries"] = s.entries;
             return d;
           })
      .def("clear", [](PyCache& c) { c.cache->clear(); })
      .def_property_readonly("max_entries", [](const PyCache& c) { return c.cache->max_entries(); })
      .def_property_readonly("memory_size", [](const PyCache& c) { return c.cache->memory_size(); });
  py::class_<PyCancelToken>(m, "CancelToken",
                            "Stops a translation from another thread: give it to translate(cancel=...), call "
                            "cancel(); each unfinished sentence ends with its best so far (result.stopped).")
      .def(py::init<>())
      .def(
          "cancel", [](PyCancelToken& c) { c.cancel(); }, "Ends the translations it was given to.")
      .def(
          "reset", [](PyCancelToken& c) { c.flag.store(0); }, "Makes the token usable again.")
      .def_property_readonly("cancelled", [](const PyCancelToken& c) { return c.flag.load() != 0; });
  py::class_<PyTranslator>(m, "_Translator")
      .def(py::init([](py::handle model, const std::string& device, int device_index, int num_threads,
                       const std::string& thread_split, int max_batch_size, py::object max_source_length,
                       py::object max_target_length, int max_beam_size, int max_text_bytes, bool quality_scores,
                       bool alignments, int alignment_layer, bool shortlist) {
             auto t = std::make_unique<PyTranslator>();
             SessionOptions o;
             o.device = device_of(device);
             o.cuda_device = device_index;
             o.num_threads = num_threads;
             o.thread_split = thread_split_of(thread_split);
             o.max_batch_size = max_batch_size;
             o.max_beam_size = max_beam_size;
             o.max_text_bytes = max_text_bytes;
             o.quality_scores = quality_scores;
             o.alignments = alignments;
             o.alignment_layer = alignment_layer;
             o.shortlist = shortlist;
             t->model = model_argument(model);
             const int positions = t->model->config().max_positions;
             o.max_source_length = length_option(max_source_length, "max_source_length", 256, positions - 1) + 1;
             o.max_target_length = length_option(max_target_length, "max_target_length", 256, positions);
             create_session(*t, o);
             return t;
           }),
           py::arg("model"), py::kw_only(), py::arg("device") = "cpu", py::arg("device_index") = 0,
           py::arg("num_threads") = 1, py::arg("thread_split") = "automatic", py::arg("max_batch_size") = 16,
           py::arg("max_source_length") = py::none(), py::arg("max_target_length") = py::none(),
           py::arg("max_beam_size") = 4, py::arg("max_text_bytes") = 4096, py::arg("quality_scores") = false,
           py::arg("alignments") = false, py::arg("alignment_layer") = -1, py::arg("shortlist") = true)
      .def("_translate_text",
           [](PyTranslator& t, py::sequence sources, bool detail, int beam_size, int num_hypotheses,
              float length_penalty, int max_decoding_length, float max_length_ratio, int max_length_offset,
              int min_decoding_length, bool truncate, const std::vector<int32_t>& source_prefix,
              const std::vector<int32_t>& target_prefix, py::object on_token, PyCancelToken* cancel, PyCache* cache,
              const py::dict& extra_options) {
             TranslateOptions options =
                 checked_options(t, beam_size, num_hypotheses, length_penalty, max_decoding_length, max_length_ratio,
                                 max_length_offset, min_decoding_length, truncate, source_prefix, target_prefix);
             ExtraOptions extra;
             extra.read(extra_options, true, size_t(py::len(sources)), &options);
             check(options.validate(t.session->options()));
             CallCancel stop(cancel);
             PyTokenCallback callback{on_token, 0, stop.flag(), &t.callback_thread, std::nullopt};
             if (!on_token.is_none()) options.on_token = TokenCallback::of(callback);
             if (cancel != nullptr || !on_token.is_none()) options.cancel = stop.flag();
             if (cache != nullptr) options.cache = cache->cache.get();
             if (!t.model->has_vocabulary()) {
               throw py::value_error(
                   "this model has no vocabulary (or was loaded without it): use translate_batch with token ids");
             }
             const Utf8Texts source_texts(sources, "sources");
             const std::vector<std::string>& texts = source_texts.texts;
             std::vector<std::string_view> views(texts.begin(), texts.end());
             const Model& model = *t.model;
             std::vector<SentenceResult> results =
                 in_batches(t, "translate", texts.size(), [&](size_t begin, size_t end, SentenceResult* out) {
                   TextTranslations translations;
                   callback.first = begin;
                   MT_RETURN_IF_ERROR(t.session->translate_text({views.data() + begin, end - begin},
                                                                extra.batch(options, begin, end), &translations));
                   for (size_t i = 0; i < translations.size(); ++i) {
                     MT_RETURN_IF_ERROR(copy_nbest(translations[i], translations.truncated(i), model,
                                                   t.session->options(), true, detail, &out[i]));
                     out[i].stopped = translations.stopped(i);
                     if (detail) {
                       copy_source_ranges(translations, i, texts[begin + i], source_texts.surrogates_passed[begin + i],
                                          &out[i]);
                     }
                   }
                   return Status{};
                 });
             if (callback.error) throw std::move(*callback.error);
             return python_results(results, detail, true);
           })
      .def(
          "_translate_ids",
          [](PyTranslator& t, const std::vector<std::vector<int32_t>>& sources, int beam_size, int num_hypotheses,
             float length_penalty, int max_decoding_length, float max_length_ratio, int max_length_offset,
             int min_decoding_length, bool truncate, const std::vector<int32_t>& source_prefix,
             const std::vector<int32_t>& target_prefix, const py::dict& extra_options) {
            TranslateOptions options =
                checked_options(t, beam_size, num_hypotheses, length_penalty, max_decoding_length, max_length_ratio,
                                max_length_offset, min_decoding_length, truncate, source_prefix, target_prefix);
            ExtraOptions extra;
            extra.read(extra_options, false, sources.size(), &options);
            check(options.validate(t.session->options()));
            std::vector<std::span<const int32_t>> spans(sources.begin(), sources.end());
            const Model& model = *t.model;
            const bool has_text = model.has_vocabulary();
            std::vector<SentenceResult> results =
                in_batches(t, "translate_batch", spans.size(), [&](size_t begin, size_t end, SentenceResult* out) {
                  Translations translations;
                  MT_RETURN_IF_ERROR(t.session->translate({spans.data() + begin, end - begin},
                                                          extra.batch(options, begin, end), &translations));
                  for (size_t i = 0; i < translations.size(); ++i) {
                    MT_RETURN_IF_ERROR(copy_nbest(translations[i], translations.truncated(i), model,
                                                  t.session->options(), has_text, true, &out[i]));
                  }
                  return Status{};
                });
            return python_results(results, true, has_text);
          })
      .def("_translate_paragraphs",
           [](PyTranslator& t, py::handle text, const std::string& mode, py::handle prefixes,
              py::handle prefix_language, int beam_size, float length_penalty, int max_decoding_length,
              float max_length_ratio, int max_length_offset, int min_decoding_length,
              const std::vector<int32_t>& source_prefix, const std::vector<int32_t>& target_prefix, PyCache* cache,
              const py::dict& extra_options) {
             TranslateOptions options =
                 checked_options(t, beam_size, 1, length_penalty, max_decoding_length, max_length_ratio,
                                 max_length_offset, min_decoding_length, false, source_prefix, target_prefix);
             ExtraOptions extra_storage;
             extra_storage.read(extra_options, true, 0, &options);
             check(options.validate(t.session->options()));
             if (cache != nullptr) options.cache = cache->cache.get();
             if (!t.model->has_vocabulary()) {
               throw py::value_error("this model has no vocabulary (or was loaded without it): it translates ids only");
             }
             bool passed = false;
             const std::string utf8 = utf8_of(text, "text", &passed);
             const std::optional<NonBreakingPrefixes> list = prefixes_of(prefixes, prefix_language);
             ParagraphOptions po;
             po.mode = split_mode_of(mode);
             const std::string format = extra_options.contains("format")
                                            ? cast_argument<std::string>(extra_options["format"], "format", "str")
                                            : std::string("plain");
             if (format != "plain" && format != "html")
               throw py::value_error("format = '" + format + "': must be 'plain' or 'html'");
             po.format = format == "html" ? TextFormat::html : TextFormat::plain;
             po.prefixes = list ? &*list : nullptr;
             Expected<ParagraphTranslation> result =
                 locked(t, "translate_paragraphs", [&] { return t.session->translate_paragraphs(utf8, po, options); });
             check(result.status());
             std::vector<size_t> source_offsets, target_offsets;
             std::vector<std::vector<py::object>> extra;
             for (const TranslatedSentence& s : result->sentences) {
               source_offsets.insert(source_offsets.end(), {s.source_begin, s.source_end});
               target_offsets.insert(target_offsets.end(), {s.target_begin, s.target_end});
               extra.push_back({py::int_(s.paragraph), py::int_(s.pieces), py::bool_(s.truncated)});
             }
             const bool is_str = PyUnicode_Check(text.ptr());
             py::object translated = is_str
                                         ? py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
                                               result->text.data(), Py_ssize_t(result->text.size()), "surrogateescape"))
                                         : py::bytes(result->text);
             if (!translated) throw py::error_already_set();
             const py::list sources =
                 spans_of(text, utf8, source_offsets, 2, std::vector<std::vector<py::object>>(extra.size()), passed);
             const py::list targets = spans_of(translated, result->text, target_offsets, 2, extra);
             py::list sentences;
             for (size_t i = 0; i < extra.size(); ++i) {
               const py::tuple target = targets[i];
               sentences.append(py::make_tuple(py::tuple(sources[i])[0], target[0], target[1], target[2], target[3]));
             }
             return py::make_tuple(translated, sentences);
           })
      .def("_score_text",
           [](PyTranslator& t, py::sequence sources, py::sequence targets, float length_penalty,
              int min_decoding_length, bool truncate, const std::vector<int32_t>& source_prefix,
              const std::vector<int32_t>& target_prefix) {
             const TranslateOptions options =
                 checked_options(t, 1, 1, length_penalty, 0, 0.0f, 0, min_decoding_length, truncate, source_prefix,
                                 target_prefix);
             if (!t.model->has_vocabulary()) {
               throw py::value_error("this model has no vocabulary (or was loaded without it): use score_batch with ids");
             }
             const size_t count = size_t(py::len(sources));
             if (size_t(py::len(targets)) != count) {
               throw py::value_error("score needs one target per source: " + std::to_string(count) + " sources, " +
                                     std::to_string(py::len(targets)) + " targets");
             }
             const Utf8Texts source_texts(sources, "sources"), target_texts(targets, "targets");
             const std::vector<std::string>& texts = source_texts.texts;
             std::vector<std::string_view> views(texts.begin(), texts.end()),
                 target_views(target_texts.texts.begin(), target_texts.texts.end());
             const Model& model = *t.model;
             std::vector<SentenceResult> results =
                 in_batches(t, "score", count, [&](size_t begin, size_t end, SentenceResult* out) {
                   TextTranslations scored;
                   MT_RETURN_IF_ERROR(t.session->score_text({views.data() + begin, end - begin},
                                                            {target_views.data() + begin, end - begin}, options,
                                                            &scored));
                   for (size_t i = 0; i < scored.size(); ++i) {
                     MT_RETURN_IF_ERROR(
                         copy_nbest(scored[i], scored.truncated(i), model, t.session->options(), true, true, &out[i]));
                     copy_source_ranges(scored, i, texts[begin + i], source_texts.surrogates_passed[begin + i],
                                        &out[i]);
                   }
                   return Status{};
                 });
             return python_results(results, true, true);
           })
      .def("_score_ids",
           [](PyTranslator& t, const std::vector<std::vector<int32_t>>& sources,
              const std::vector<std::vector<int32_t>>& targets, float length_penalty, int min_decoding_length,
              bool truncate, const std::vector<int32_t>& source_prefix, const std::vector<int32_t>& target_prefix) {
             const TranslateOptions options =
                 checked_options(t, 1, 1, length_penalty, 0, 0.0f, 0, min_decoding_length, truncate, source_prefix,
                                 target_prefix);
             if (targets.size() != sources.size()) {
               throw py::value_error("score needs one target per source: " + std::to_string(sources.size()) +
                                     " sources, " + std::to_string(targets.size()) + " targets");
             }
             std::vector<std::span<const int32_t>> spans(sources.begin(), sources.end()),
                 target_spans(targets.begin(), targets.end());
             const Model& model = *t.model;
             const bool has_text = model.has_vocabulary();
             std::vector<SentenceResult> results =
                 in_batches(t, "score_batch", spans.size(), [&](size_t begin, size_t end, SentenceResult* out) {
                   Translations scored;
                   MT_RETURN_IF_ERROR(t.session->score({spans.data() + begin, end - begin},
                                                       {target_spans.data() + begin, end - begin}, options, &scored));
                   for (size_t i = 0; i < scored.size(); ++i) {
                     MT_RETURN_IF_ERROR(copy_nbest(scored[i], scored.truncated(i), model, t.session->options(),
                                                   has_text, true, &out[i]));
                   }
                   return Status{};
                 });
             return python_results(results, true, has_text);
           })
      .def("_forced_logits",
           [](PyTranslator& t, const std::vector<int32_t>& source, const std::vector<int32_t>& target) {
             const size_t V = size_t(t.model->config().target_vocab_size);
             std::string bytes(target.size() * V * sizeof(float), '\0');
             check(locked(t, "_forced_logits", [&] {
               return t.session->forced_logits(source, target,
                                               {reinterpret_cast<float*>(bytes.data()), target.size() * V});
             }));
             return py::bytes(bytes);
           })
      .def_property_readonly(
          "model", [](const PyTranslator& t) { return PyModel{t.model}; }, "The libmt.Model this translator runs.")
      .def_property_readonly(
          "device", [](const PyTranslator& t) { return t.session->options().device == Device::cuda ? "cuda" : "cpu"; })
      .def_property_readonly("num_threads", [](const PyTranslator& t) { return t.session->options().num_threads; })
      .def_property_readonly("max_batch_size",
                             [](const PyTranslator& t) { return t.session->options().max_batch_size; })
      .def_property_readonly("max_beam_size", [](const PyTranslator& t) { return t.session->options().max_beam_size; })
      .def_property_readonly(
          "max_source_length", [](const PyTranslator& t) { return t.session->options().max_source_length - 1; },
          "Longest source in tokens, EOS not counted.")
      .def_property_readonly(
          "max_target_length", [](const PyTranslator& t) { return t.session->options().max_target_length; },
          "Most tokens generated, EOS included.")
      .def_property_readonly("alignments", [](const PyTranslator& t) { return t.session->options().alignments; })
      .def_property_readonly(
          "shortlist",
          [](const PyTranslator& t) {
            const SessionOptions& o = t.session->options();
            return o.shortlist && o.device == Device::cpu && t.model->shortlist() != nullptr;
          },
          "Whether translations use the model's vocabulary shortlist.")
      .def_property_readonly("quality_scores",
                             [](const PyTranslator& t) { return t.session->options().quality_scores; })
      .def_property_readonly("max_text_bytes",
                             [](const PyTranslator& t) { return t.session->options().max_text_bytes; })
      .def_property_readonly(
          "memory_size", [](const PyTranslator& t) { return t.session->memory_size(); },
          "Bytes of working memory the session allocated at creation.")
      .def_property_readonly(
          "kernel_isa", [](const PyTranslator& t) { return std::string(t.session->kernel_isa()); },
          "The instruction set of the kernels this translator runs (e.g. 'avx2').");
}

}  // namespace mt::python
