// Sessions: creation in owned or caller memory, binding, loading the sources,
// and translate(). Option checks: session_options.cpp; the memory plan:
// session_plan.cpp; lanes: session_lanes.cpp; text: session_text.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>

#include "support/alignment.hpp"
#include "support/arena.hpp"
#include "session/session_impl.hpp"
#include "access.hpp"

namespace mt {

using detail::SessionPlan;

namespace {

// Metadata decoding.length_offset: "0" or "1" (absent: 0). Converters write it
// for frameworks whose length normalization counts the start token.
Expected<int> metadata_length_offset(const Model& model) {
  for (const KeyValue& kv : model.metadata().extra) {
    if (kv.key != "decoding.length_offset") continue;
    if (kv.value == "0" || kv.value == "1") return int(kv.value[0] - '0');
    return Status::error(Errc::invalid_model, "model metadata decoding.length_offset = '%s': must be 0 or 1",
                         kv.value.c_str());
  }
  return 0;
}

// The decoder layer whose attention aligns: the option, else metadata
// "alignment_layer" (a converter or mt_align measured it), else the last.
Expected<int> alignment_layer_of(const Model& model, const SessionOptions& options) {
  const int layers = model.config().decoder_layers;
  if (options.alignment_layer >= 0) return options.alignment_layer;
  for (const KeyValue& kv : model.metadata().extra) {
    if (kv.key != "alignment_layer") continue;
    char* end = nullptr;
    const long layer = std::strtol(kv.value.c_str(), &end, 10);
    if (end == kv.value.c_str() || *end != '\0' || layer < 0 || layer >= layers) {
      return Status::error(Errc::invalid_model, "model metadata alignment_layer = '%s': must be a layer in [0, %d)",
                           kv.value.c_str(), layers);
    }
    return int(layer);
  }
  return layers - 1;
}

Expected<Session::Impl*> make_impl(std::shared_ptr<const Model>& model, const SessionOptions& options) {
  if (model == nullptr) return Status::error(Errc::invalid_argument, "session needs a model");
  MT_RETURN_IF_ERROR(options.validate(model->config()));
  auto offset = metadata_length_offset(*model);
  if (!offset) return offset.status();
  auto layer = alignment_layer_of(*model, options);
  if (!layer) return layer.status();
  auto* impl = new Session::Impl;
  impl->length_offset = offset.value();
  impl->alignment_layer = layer.value();
  if (const Status& s = detail::Access::sentence_prefixes_status(*model); !s.ok()) {
    delete impl;
    return s;
  }
  impl->sentence_prefixes = &detail::Access::sentence_prefixes(*model);
  impl->model = std::move(model);
  impl->options = options;
  impl->plan = SessionPlan::make(*impl->model, options);
  if (const Status planned = detail::check_plan(impl->plan); !planned.ok()) {
    delete impl;
    return planned;
  }
  impl->kernels = &best_kernels();
  if (options.device == Device::cuda) {
    auto cuda = detail::CudaSession::create(*impl->model, options, impl->plan);
    if (!cuda) {
      delete impl;
      return cuda.status();
    }
    impl->cuda = std::move(cuda.value());
  }
  return impl;
}

}  // namespace

Expected<Session> Session::create(std::shared_ptr<const Model> model, const SessionOptions& options) {
  auto made = make_impl(model, options);
  if (!made) return made.status();
  std::unique_ptr<Impl> impl(made.value());
  auto* block =
      static_cast<std::byte*>(::operator new(impl->plan.total, std::align_val_t(detail::kAlignment), std::nothrow));
  if (block == nullptr) {
    return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes of session memory", impl->plan.total);
  }
  impl->owned = {block, [](std::byte* p) { ::operator delete(p, std::align_val_t(detail::kAlignment)); }};
  impl->arena = block;
  return bind_session(std::move(impl));
}

Expected<Session> Session::create(std::shared_ptr<const Model> model, const SessionOptions& options,
                                  std::span<std::byte> buffer) {
  auto made = make_impl(model, options);
  if (!made) return made.status();
  std::unique_ptr<Impl> impl(made.value());
  if (buffer.size() < impl->plan.total) {
    return Status::error(Errc::invalid_argument, "session buffer of %zu bytes is smaller than the %zu needed",
                         buffer.size(), impl->plan.total);
  }
  if (reinterpret_cast<uintptr_t>(buffer.data()) % detail::kAlignment != 0) {
    return Status::error(Errc::invalid_argument, "session buffer must be %zu-byte aligned", detail::kAlignment);
  }
  impl->arena = buffer.data();
  return bind_session(std::move(impl));
}

// Binding starts the session's threads: a system that refuses one (a process
// limit, no memory for its stack) is an error, not an exception.
Expected<Session> Session::bind_session(std::unique_ptr<Impl> impl) {
  const int threads = impl->options.num_threads;
  try {
    return Session(std::move(impl));
  } catch (const std::system_error& e) {
    return Status::error(Errc::out_of_memory, "cannot start the session's %d threads: %s", threads, e.what());
  } catch (const std::bad_alloc&) {
    return Status::error(Errc::out_of_memory, "out of memory starting the session's %d threads", threads);
  }
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) { impl_->bind(); }

void Session::Impl::bind() {
  const ModelConfig& cfg = model->config();
  // Hypothesis holds spans: start their lifetimes in the arena.
  for (int i = 0; i < plan.B * plan.K; ++i) new (at<Hypothesis>(plan.hypotheses) + i) Hypothesis{};
  for (int i = 0; i < plan.B; ++i) new (at<std::span<const int32_t>>(plan.source_spans) + i) std::span<const int32_t>{};
  if (plan.source_texts != 0) {
    for (int i = 0; i < plan.B; ++i) new (at<std::string_view>(plan.source_texts) + i) std::string_view{};
  }
  if (plan.text_hypotheses != 0) {
    for (int i = 0; i < plan.B * plan.K; ++i) new (at<TextHypothesis>(plan.text_hypotheses) + i) TextHypothesis{};
  }
  if (plan.shortlist_width > 0) {
    std::memset(at<uint8_t>(plan.shortlist_marks), 0, size_t(cfg.target_vocab_size));
    new (at<detail::Linear>(plan.gathered_linear)) detail::Linear{};
  }
  if (cuda != nullptr) return;  // the forward pass is the GPU's
  if (pool == nullptr) {
    owned_pool = std::make_unique<detail::ThreadPool>(options.num_threads);
    pool = owned_pool.get();
  }
  if (plan.lanes > 0) {
    bind_lanes();
    return;
  }
  detail::QuantizedRows quantized;
  if (plan.quantized_rows > 0) {
    quantized = {at<uint8_t>(plan.quantized), at<float>(plan.quantized_scales), at<int32_t>(plan.quantized_zeros),
                 plan.quantized_stride, plan.quantized_rows};
  }
  transformer.emplace(cfg, detail::weights_of(*model), *kernels, *pool, at<float>(plan.positions),
                      std::max(plan.S, plan.T), at<float>(plan.attention_scratch), plan.scratch_stride, quantized);
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const Model& Session::model() const { return *impl_->model; }
const SessionOptions& Session::options() const { return impl_->options; }
size_t Session::memory_size() const { return impl_->plan.total; }
size_t Session::device_memory_size() const { return impl_->cuda ? impl_->cuda->device_bytes() : 0; }
const char* Session::kernel_isa() const { return impl_->kernels->isa; }

detail::EncoderBuffers Session::Impl::encoder_buffers() { return plan.encoder_buffers(arena); }

detail::DecoderBuffers Session::Impl::decoder_buffers() { return plan.decoder_buffers(arena); }

detail::DecoderState Session::Impl::decoder_state(int rows_per_source) {
  detail::DecoderState state{at<float>(plan.self_cache), plan.self_cache_stride,       plan.T,         at<float>(plan.cross_kv),
                             plan.cross_kv_stride,       at<int>(plan.source_offsets), rows_per_source};
  if (plan.step_alignments != 0) {  // beam search's default: each row's step alignment (search.cpp)
    state.alignment = at<float>(plan.step_alignments);
    state.alignment_stride = size_t(plan.S);
    state.alignment_layer = alignment_layer;
    state.alignment_heads = at<float>(plan.alignment_heads);
    state.alignment_columns = plan.S;
  }
  return state;
}

void Session::Impl::encode(int B) {
  const int* offsets = at<int>(plan.source_offsets);
  detail::EncoderBuffers buffers = encoder_buffers();
  transformer->encode(at<int32_t>(plan.source_tokens), offsets, B, buffers);
  transformer->project_memory(buffers.x, offsets[B], at<float>(plan.cross_kv), plan.cross_kv_stride);
}

Status Session::Impl::load_sources(std::span<const std::span<const int32_t>> sources, const TranslateOptions& options) {
  const ModelConfig& cfg = model->config();
  MT_RETURN_IF_ERROR(options.validate(this->options));
  if (sources.size() > size_t(plan.B)) {
    return Status::error(Errc::capacity_exceeded, "batch of %zu sentences exceeds the session's max_batch_size %d",
                         sources.size(), plan.B);
  }
  // Each source followed by EOS (unless the model has none), back to back.
  int32_t* tokens = at<int32_t>(plan.source_tokens);
  int* offsets = at<int>(plan.source_offsets);
  int* limits = at<int>(plan.length_limits);
  int* truncated = at<int>(plan.truncated);
  const std::span<const int32_t> prefix = options.source_prefix, forced = options.target_prefix;
  for (const int32_t id : prefix) {
    if (id < 0 || id >= cfg.source_vocab_size)
      return Status::error(Errc::invalid_argument, "source_prefix has id %d, outside the vocabulary [0, %d)", id,
                           cfg.source_vocab_size);
  }
  for (const int32_t id : forced) {
    if (id < 0 || id >= cfg.target_vocab_size || id == cfg.eos_id)
      return Status::error(Errc::invalid_argument, "target_prefix has id %d: must be a target id other than eos_id %d",
                           id, cfg.eos_id);
  }
  if (options.prefixes.size() > sources.size()) {
    return Status::error(Errc::invalid_argument, "%zu prefixes for %zu sentences: at most one each",
                         options.prefixes.size(), sources.size());
  }
  for (size_t b = 0; b < options.prefixes.size(); ++b) {
    const std::span<const int32_t> given = options.prefixes[b];
    // The length first, so that no id past the caller's array is read
    // (forced.size() < T: validate checked it; no sum that could wrap).
    if (given.size() >= size_t(plan.T) - forced.size())
      return Status::error(Errc::capacity_exceeded,
                           "sentence %zu prefix of %zu tokens leaves no room for EOS (max_target_length %d%s)", b,
                           given.size(), plan.T, forced.empty() ? "" : ", target_prefix included");
    for (size_t i = 0; i < given.size(); ++i) {
      if (given[i] < 0 || given[i] >= cfg.target_vocab_size || given[i] == cfg.eos_id)
        return Status::error(Errc::invalid_argument,
                             "sentence %zu prefix token %zu has id %d: must be a target id other than eos_id %d", b, i,
                             int(given[i]), cfg.eos_id);
    }
  }
  const size_t room = size_t(plan.S) - 1 - prefix.size();  // source tokens that fit beside the prefix and EOS
  offsets[0] = 0;
  for (size_t b = 0; b < sources.size(); ++b) {
    std::span<const int32_t> src = sources[b];
    if (src.size() > room) {
      if (!options.truncate_long_sources) {
        return Status::error(
            Errc::capacity_exceeded,
            "sentence %zu has %zu tokens; the session allows %zu (max_source_length %d, EOS%s included)", b, src.size(),
            room, plan.S, prefix.empty() ? "" : " and the source prefix");
      }
      src = src.first(room);
      truncated[b] = 1;
    }
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] < 0 || src[i] >= cfg.source_vocab_size) {
        return Status::error(Errc::invalid_argument, "sentence %zu token %zu has id %d, outside the vocabulary [0, %d)",
                             b, i, int(src[i]), cfg.source_vocab_size);
      }
    }
    int32_t* dst = tokens + offsets[b];
    const size_t before = src.empty() ? 0 : prefix.size();  // an empty source is not translated
    std::copy(prefix.begin(), prefix.begin() + ptrdiff_t(before), dst);
    std::copy(src.begin(), src.end(), dst + before);
    // An empty source keeps its EOS either way: the encoder then never
    // attends over nothing (it is not decoded: its limit is 0).
    const bool eos = cfg.source_eos || src.empty();
    if (eos) dst[before + src.size()] = cfg.eos_id;
    offsets[b + 1] = offsets[b] + int(before + src.size()) + (eos ? 1 : 0);

    int limit = options.max_decoding_length > 0 ? options.max_decoding_length : plan.T;
    if (options.max_length_ratio > 0.0f) {
      const double by_ratio =
          std::ceil(double(options.max_length_ratio) * double(src.size())) + options.max_length_offset;
      limit = int(std::min(double(limit), by_ratio));
    }
    // A prefix is always taken, with room for one more token.
    if (b < options.prefixes.size()) limit = std::max(limit, int(forced.size() + options.prefixes[b].size()) + 1);
    // An empty source has nothing to translate: the search gives it one empty hypothesis.
    limits[b] = src.empty() ? 0 : std::max(1, std::min(limit, plan.T));
  }
  return {};
}

Status Session::Impl::run(int B, const TranslateOptions& options, std::span<const std::span<const int32_t>> targets) {
  std::fill_n(at<int>(plan.stopped), B, 0);
  if (cuda != nullptr) return cuda->run(*this, B, options);
  if (!lanes.empty()) return run_lanes(B, options, targets);
  encode(B);
  if (!targets.empty()) {
    force_targets(B, options, targets);
    return {};
  }
  if (plan.shortlist_width > 0) prepare_shortlist(B, options);
  detail::SearchLimits search = detail::search_limits(options, length_offset);
  search.on_token = options.on_token;
  search.cancel = options.cancel;
  search.prefixes = options.prefixes;
  search.no_repeat_ngram_size = options.no_repeat_ngram_size;
  search.repetition_penalty = options.repetition_penalty;
  if (options.alternatives > 0) {
    search.alternatives = search.beam = search.hypotheses = options.alternatives;
    beam_search(B, search);
  } else if (options.beam_size == 1) {
    greedy_search(B, search);
  } else {
    beam_search(B, search);
  }
  return {};
}

Status Session::translate(std::span<const std::span<const int32_t>> sources, const TranslateOptions& options,
                          Translations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = Translations{};
  std::fill_n(s.at<int>(s.plan.truncated), s.plan.B, 0);
  MT_RETURN_IF_ERROR(s.translate_spans(sources, options));
  if (!sources.empty()) s.id_results(int(sources.size()), results);
  return {};
}

void Session::Impl::id_results(int B, Translations* results) {
  results->hypotheses_ = at<Hypothesis>(plan.hypotheses);
  results->counts_ = at<int>(plan.hypothesis_counts);
  results->truncated_ = at<int>(plan.truncated);
  results->stopped_ = at<int>(plan.stopped);
  results->stride_ = size_t(plan.K);
  results->sentences_ = size_t(B);
}

namespace detail {

Status set_linear_observer(Session& session, LinearObserver* observer) {
  Session::Impl& s = *Access::impl(session);
  if (!s.transformer) {
    return Status::error(Errc::unsupported,
                         "a linear-layer observer needs a CPU session split by layers (one transformer to observe)");
  }
  s.transformer->set_observer(observer);
  return {};
}

}  // namespace detail

}  // namespace mt
