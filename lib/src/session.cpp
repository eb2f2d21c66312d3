// Sessions: memory planning, creation, input checks and the translate() entry.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <system_error>

#include "model_weights.hpp"
#include "arena.hpp"
#include "tokenizer/line_breaks.hpp"
#include "tokenizer/tokenizer.hpp"
#include "session_impl.hpp"

namespace mt {

using detail::SessionPlan;

Status SessionOptions::validate(const ModelConfig& config) const {
  auto bad = [](const char* field, int value, const char* why) {
    return Status::error(Errc::invalid_argument, "session option %s = %d: %s", field, value, why);
  };
  if (max_batch_size < 1 || max_batch_size > 65536) return bad("max_batch_size", max_batch_size, "must be in [1, 65536]");
  if (max_source_length < 1 || max_source_length > config.max_positions)
    return Status::error(Errc::invalid_argument, "session option max_source_length = %d: must be in [1, %d] (the model's max_positions)", max_source_length, config.max_positions);
  if (max_target_length < 1 || max_target_length > config.max_positions)
    return Status::error(Errc::invalid_argument, "session option max_target_length = %d: must be in [1, %d] (the model's max_positions)", max_target_length, config.max_positions);
  // The session indexes source tokens with int: B x S must stay far from INT_MAX.
  if (int64_t(max_batch_size) * max_source_length > (int64_t(1) << 28))
    return Status::error(Errc::invalid_argument,
                         "session options max_batch_size x max_source_length = %lld tokens: at most %lld",
                         static_cast<long long>(int64_t(max_batch_size) * max_source_length), 1LL << 28);
  if (max_beam_size < 1 || max_beam_size > 256) return bad("max_beam_size", max_beam_size, "must be in [1, 256]");
  if (max_beam_size >= config.target_vocab_size) return bad("max_beam_size", max_beam_size, "must be smaller than the target vocabulary");
  if (num_threads < 1 || num_threads > 256) return bad("num_threads", num_threads, "must be in [1, 256]");
  if (!kHasThreads && num_threads != 1)
    return bad("num_threads", num_threads, "must be 1: this build of libmt has no threads (WebAssembly)");
  if (max_text_bytes < 1 || max_text_bytes > (1 << 24)) return bad("max_text_bytes", max_text_bytes, "must be in [1, 16777216]");
  if (device != Device::cpu && device != Device::cuda) return bad("device", int(device), "must be cpu (0) or cuda (1)");
  if (thread_split != ThreadSplit::automatic && thread_split != ThreadSplit::layers &&
      thread_split != ThreadSplit::sentences)
    return bad("thread_split", int(thread_split), "must be automatic (0), layers (1) or sentences (2)");
  if (cuda_device < 0 || cuda_device > 1023) return bad("cuda_device", cuda_device, "must be in [0, 1023]");
  return {};
}

Status TranslateOptions::validate(const SessionOptions& session) const {
  auto bad = [](const char* field, int value, const char* why, int limit) {
    char reason[96];
    std::snprintf(reason, sizeof(reason), why, limit);
    return Status::error(Errc::invalid_argument, "translate option %s = %d: %s", field, value, reason);
  };
  if (beam_size < 1 || beam_size > session.max_beam_size)
    return bad("beam_size", beam_size, "must be in [1, %d] (the session's max_beam_size)", session.max_beam_size);
  if (num_hypotheses < 1 || num_hypotheses > beam_size)
    return bad("num_hypotheses", num_hypotheses, "must be in [1, beam_size = %d]", beam_size);
  if (max_decoding_length < 0 || max_decoding_length > session.max_target_length)
    return bad("max_decoding_length", max_decoding_length, "must be in [0, %d] (0: the session's max_target_length)", session.max_target_length);
  if (min_decoding_length < 0 || min_decoding_length > session.max_target_length)
    return bad("min_decoding_length", min_decoding_length, "must be in [0, %d]", session.max_target_length);
  if (!std::isfinite(length_penalty) || length_penalty < 0.0f || length_penalty > 10.0f)
    return Status::error(Errc::invalid_argument, "translate option length_penalty = %g: must be in [0, 10]", double(length_penalty));
  if (!std::isfinite(max_length_ratio) || max_length_ratio < 0.0f || max_length_ratio > 1000.0f)
    return Status::error(Errc::invalid_argument, "translate option max_length_ratio = %g: must be in [0, 1000] (0: off)", double(max_length_ratio));
  if (max_length_offset < 0 || max_length_offset > session.max_target_length)
    return bad("max_length_offset", max_length_offset, "must be in [0, %d]", session.max_target_length);
  if (source_prefix.size() + 1 >= size_t(session.max_source_length))
    return bad("source_prefix", int(std::min<size_t>(source_prefix.size(), 1 << 30)),
               "ids: must leave room for a source token and EOS (max_source_length %d)", session.max_source_length);
  if (target_prefix.size() >= size_t(session.max_target_length))
    return bad("target_prefix", int(std::min<size_t>(target_prefix.size(), 1 << 30)),
               "ids: must be fewer than the session's max_target_length %d", session.max_target_length);
  return {};
}

namespace detail {

using detail::Tokenizer;

// Past this size a batch smaller than the thread count runs on every thread
// split by layers (automatic); a smaller model's steps are too short for that
// to pay, and such a batch runs on as many lanes as it has sentences.
constexpr size_t kWideLaneMinModelBytes = size_t(24) << 20;

SessionPlan SessionPlan::make(const Model& model, const SessionOptions& o) {
  const ModelConfig& cfg = model.config();
  SessionPlan p;
  // automatic with a large model: lanes only when a batch can fill them.
  const bool large = model.file_size() >= kWideLaneMinModelBytes;
  const bool automatic = o.thread_split == ThreadSplit::automatic;
  if (o.device == Device::cpu && o.num_threads > 1 && o.thread_split != ThreadSplit::layers &&
      !(automatic && large && o.max_batch_size < o.num_threads)) {
    // One single-threaded lane per thread, each planned for its share of the
    // batch; this plan keeps the inputs and the results (as a CUDA session's).
    p.lanes = o.num_threads;
    SessionOptions lane = o;
    lane.num_threads = 1;
    lane.max_batch_size = (o.max_batch_size + p.lanes - 1) / p.lanes;
    p.lane_plan = std::make_shared<const SessionPlan>(make(model, lane));
    if (automatic && large) {
      SessionOptions wide = o;
      wide.thread_split = ThreadSplit::layers;
      wide.max_batch_size = std::min(o.max_batch_size, o.num_threads - 1);
      p.wide_plan = std::make_shared<const SessionPlan>(make(model, wide));
    }
  }
  p.B = o.max_batch_size;
  p.S = o.max_source_length;
  p.T = o.max_target_length;
  p.K = o.max_beam_size;
  p.R = p.B * p.K;
  p.N = p.B * p.S;
  p.threads = o.num_threads;
  p.scratch_stride = std::max(p.S, p.T);
  const size_t C = size_t(cfg.d_model);
  const size_t L = size_t(cfg.decoder_layers), N = size_t(p.N), R = size_t(p.R), T = size_t(p.T),
               K = size_t(p.K), B = size_t(p.B);

  // A CUDA session keeps the forward pass's buffers on the device (cuda/cuda_session.cpp),
  // a session split by sentences in its lanes: here they get no bytes.
  const size_t here = o.device == Device::cpu && p.lanes == 0 ? 1 : 0;
  ArenaPlanner a;
  const size_t computed_positions = cfg.stored_positions ? 0 : 1;  // else read from the model
  p.positions = a.reserve<float>(here * computed_positions * size_t(std::max(p.S, p.T)) * C);
  p.source_tokens = a.reserve<int32_t>(N);
  p.source_offsets = a.reserve<int>(B + 1);
  p.reserve(a, cfg, N, R, T, here != 0);
  p.self_cache = a.reserve<float>(ArenaPlanner::product(here * L, p.self_cache_stride));
  p.attention_scratch = a.reserve<float>(here * size_t(p.threads) * size_t(p.scratch_stride));
  p.step_tokens = a.reserve<int32_t>(R);
  p.live_tokens = a.reserve<int32_t>(R);
  p.live_slots = a.reserve<int>(R);
  p.live_sources = a.reserve<int>(R);
  p.live_beams = a.reserve<int>(R);
  p.live_row_of_beam = a.reserve<int>(R);
  p.beam_slots = a.reserve<int>(R);
  p.row_candidates = a.reserve<Candidate>(ArenaPlanner::product(R, 2 * K));
  p.row_candidate_counts = a.reserve<int>(R);
  p.beam_scores = a.reserve<float>(R);
  p.history = a.reserve<int32_t>(R * T);
  p.history_scratch = a.reserve<int32_t>(K * T);
  p.parents = a.reserve<int32_t>(R);
  p.candidates = a.reserve<Candidate>(K * 2 * K);
  p.finished = a.reserve<Finished>(B * K);
  p.finished_tokens = a.reserve<int32_t>(B * K * T);
  p.source_done = a.reserve<int>(B);
  p.length_limits = a.reserve<int>(B);
  p.hypotheses = a.reserve<Hypothesis>(B * K);
  p.hypothesis_counts = a.reserve<int>(B);
  p.truncated = a.reserve<int>(B);
  p.source_spans = a.reserve<std::span<const int32_t>>(B);
  // int8 layers quantize their inputs here: as many rows as the widest call
  // (the encoder's packed tokens or the decoder's rows); longer calls (the
  // full-prefix decoder of the tests) go through in blocks.
  const detail::ModelWeights& w = model.weights();
  if (w.any_int8 && here) {
    p.quantized_rows = std::max(p.N, p.R);
    p.quantized_stride = (size_t(padded_k_i8(w.max_int8_k)) + 63) / 64 * 64;
    p.quantized = a.reserve<uint8_t>(size_t(p.quantized_rows) * p.quantized_stride);
    p.quantized_scales = a.reserve<float>(size_t(p.quantized_rows));
    p.quantized_zeros = a.reserve<int32_t>(size_t(p.quantized_rows));
  }
  if (const Tokenizer* tok = model.tokenizer()) {
    const size_t text_bytes = size_t(o.max_text_bytes);
    p.text_workspace_bytes = tok->encode_workspace_bytes(text_bytes);
    p.text_workspace = a.reserve<std::byte>(p.text_workspace_bytes);
    p.text_ids_stride = tok->max_encoded_ids(text_bytes);
    p.text_ids = a.reserve<int32_t>(ArenaPlanner::product(B, p.text_ids_stride));
    p.text_out_stride = model.target_tokenizer()->max_decoded_bytes(T);
    p.text_out = a.reserve<char>(ArenaPlanner::product(B * K, p.text_out_stride));
    p.text_hypotheses = a.reserve<TextHypothesis>(B * K);
  }
  if (p.lanes > 0) {
    p.lane_stride = p.lane_plan->total == SIZE_MAX ? SIZE_MAX : (p.lane_plan->total + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    p.lane_offset = a.reserve<std::byte>(ArenaPlanner::product(size_t(p.lanes), p.lane_stride));
  }
  if (p.wide_plan != nullptr) p.wide_offset = a.reserve<std::byte>(p.wide_plan->total);
  p.total = a.size();
  return p;
}

}  // namespace detail

namespace {

Status check_plan(const detail::SessionPlan& plan) {
  if (plan.total != SIZE_MAX) return {};
  return Status::error(Errc::capacity_exceeded,
                       "the session's memory for these options does not fit in the address space "
                       "(lower max_batch_size, max_text_bytes or the lengths)");
}

}  // namespace

Expected<size_t> Session::required_memory(const Model& model, const SessionOptions& options) {
  MT_RETURN_IF_ERROR(options.validate(model.config()));
  const detail::SessionPlan plan = detail::SessionPlan::make(model, options);
  MT_RETURN_IF_ERROR(check_plan(plan));
  return plan.total;
}

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

Expected<Session::Impl*> make_impl(std::shared_ptr<const Model>& model, const SessionOptions& options) {
  if (model == nullptr) return Status::error(Errc::invalid_argument, "session needs a model");
  MT_RETURN_IF_ERROR(options.validate(model->config()));
  auto offset = metadata_length_offset(*model);
  if (!offset) return offset.status();
  auto* impl = new Session::Impl;
  impl->length_offset = offset.value();
  impl->model = std::move(model);
  impl->options = options;
  impl->plan = SessionPlan::make(*impl->model, options);
  if (const Status planned = check_plan(impl->plan); !planned.ok()) {
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
  auto* block = static_cast<std::byte*>(
      ::operator new(impl->plan.total, std::align_val_t(detail::kArenaAlignment), std::nothrow));
  if (block == nullptr) {
    return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes of session memory",
                         impl->plan.total);
  }
  impl->owned = {block, [](std::byte* p) { ::operator delete(p, std::align_val_t(detail::kArenaAlignment)); }};
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
  if (reinterpret_cast<uintptr_t>(buffer.data()) % detail::kArenaAlignment != 0) {
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
  if (plan.text_hypotheses != 0) {
    for (int i = 0; i < plan.B * plan.K; ++i) new (at<TextHypothesis>(plan.text_hypotheses) + i) TextHypothesis{};
  }
  if (cuda != nullptr) return;  // the forward pass is the GPU's
  if (pool == nullptr) {
    owned_pool = std::make_unique<detail::ThreadPool>(options.num_threads);
    pool = owned_pool.get();
  }
  if (plan.lanes > 0) {
    const auto make_lane = [&](const detail::SessionPlan& lane_plan, size_t offset, detail::ThreadPool* shared_pool) {
      auto lane = std::make_unique<Impl>();
      lane->model = std::shared_ptr<const Model>(std::shared_ptr<const Model>(), model.get());  // not an owner: the session is
      lane->options = options;
      lane->options.num_threads = lane_plan.threads;
      lane->options.max_batch_size = lane_plan.B;
      lane->options.thread_split = ThreadSplit::layers;
      lane->plan = lane_plan;
      lane->kernels = kernels;
      lane->arena = arena + offset;
      lane->pool = shared_pool;
      lane->length_offset = length_offset;
      lane->bind();
      return lane;
    };
    for (int i = 0; i < plan.lanes; ++i) {
      lanes.push_back(make_lane(*plan.lane_plan, plan.lane_offset + size_t(i) * plan.lane_stride, nullptr));
    }
    if (plan.wide_plan != nullptr) wide = make_lane(*plan.wide_plan, plan.wide_offset, pool);
    return;
  }
  detail::QuantizedRows quantized;
  if (plan.quantized_rows > 0) {
    quantized = {at<uint8_t>(plan.quantized), at<float>(plan.quantized_scales), at<int32_t>(plan.quantized_zeros),
                 plan.quantized_stride, plan.quantized_rows};
  }
  transformer.emplace(cfg, model->weights(), *kernels, *pool, at<float>(plan.positions), std::max(plan.S, plan.T),
                      at<float>(plan.attention_scratch), plan.scratch_stride, quantized);
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
  return {at<float>(plan.self_cache), plan.self_cache_stride, plan.T, at<float>(plan.cross_kv),
          plan.cross_kv_stride, at<int>(plan.source_offsets), rows_per_source};
}

void Session::Impl::encode(int B) {
  const int* offsets = at<int>(plan.source_offsets);
  detail::EncoderBuffers buffers = encoder_buffers();
  transformer->encode(at<int32_t>(plan.source_tokens), offsets, B, buffers);
  transformer->project_memory(buffers.x, offsets[B], at<float>(plan.cross_kv), plan.cross_kv_stride);
}

Status Session::Impl::load_sources(std::span<const std::span<const int32_t>> sources,
                                   const TranslateOptions& options) {
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
      return Status::error(Errc::invalid_argument, "target_prefix has id %d: must be a target id other than eos_id %d", id,
                           cfg.eos_id);
  }
  const size_t room = size_t(plan.S) - 1 - prefix.size();  // source tokens that fit beside the prefix and EOS
  offsets[0] = 0;
  for (size_t b = 0; b < sources.size(); ++b) {
    std::span<const int32_t> src = sources[b];
    if (src.size() > room) {
      if (!options.truncate_long_sources) {
        return Status::error(Errc::capacity_exceeded,
                             "sentence %zu has %zu tokens; the session allows %zu (max_source_length %d, EOS%s included)",
                             b, src.size(), room, plan.S, prefix.empty() ? "" : " and the source prefix");
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
      const double by_ratio = std::ceil(double(options.max_length_ratio) * double(src.size())) + options.max_length_offset;
      limit = int(std::min(double(limit), by_ratio));
    }
    // An empty source has nothing to translate: the search gives it one empty hypothesis.
    limits[b] = src.empty() ? 0 : std::max(1, std::min(limit, plan.T));
  }
  return {};
}

Status Session::Impl::run(int B, const TranslateOptions& options) {
  if (cuda != nullptr) return cuda->run(*this, B, options);
  if (!lanes.empty()) {
    run_lanes(B, options);
    return {};
  }
  encode(B);
  detail::SearchLimits search{options.beam_size, options.num_hypotheses, options.min_decoding_length,
                              options.length_penalty, options.target_prefix};
  search.length_offset = length_offset;
  if (options.beam_size == 1) {
    greedy_search(B, search);
  } else {
    beam_search(B, search);
  }
  return {};
}

void Session::Impl::run_lanes(int B, const TranslateOptions& options) {
  // The sources, checked and cut to fit by load_sources, go to the lanes as
  // spans (grouped by lane in source_spans, free again once loaded): sentence
  // b is sentence b / L of lane b % L, so a batch sorted by length gives each
  // lane a like share of short and long ones.
  const int L = int(lanes.size());
  const int32_t* tokens = at<int32_t>(plan.source_tokens);
  const int* offsets = at<int>(plan.source_offsets);
  auto* spans = at<std::span<const int32_t>>(plan.source_spans);
  // Lane i has B / L sentences, one more if i < B % L; its spans start after
  // the earlier lanes' ones.
  const auto lane_batch = [&](int lane) { return B / L + (lane < B % L ? 1 : 0); };
  const auto lane_first = [&](int lane) { return lane * (B / L) + std::min(lane, B % L); };
  const bool on_wide = wide != nullptr && B < L;
  const int* limits = at<int>(plan.length_limits);
  const ModelConfig& cfg = model->config();
  for (int b = 0; b < B; ++b) {
    // Without the source prefix and EOS, which the lane adds again (an empty
    // source, limit 0, has EOS alone).
    const bool empty = limits[b] == 0;
    const int skip = empty ? 0 : int(options.source_prefix.size());
    const int eos = cfg.source_eos || empty ? 1 : 0;
    spans[on_wide ? b : lane_first(b % L) + b / L] = {tokens + offsets[b] + skip,
                                                      size_t(offsets[b + 1] - offsets[b] - skip - eos)};
  }
  if (on_wide) {
    // Checked here already: neither can fail.
    (void)wide->load_sources({spans, size_t(B)}, options);
    (void)wide->run(B, options);
  } else {
    pool->parallel_for(L, [&](int lane, int /*thread*/) {
      const int count = lane_batch(lane);
      if (count == 0) return;
      Impl& s = *lanes[size_t(lane)];
      (void)s.load_sources({spans + lane_first(lane), size_t(count)}, options);
      (void)s.run(count, options);
    });
  }
  Hypothesis* hypotheses = at<Hypothesis>(plan.hypotheses);
  int* counts = at<int>(plan.hypothesis_counts);
  for (int b = 0; b < B; ++b) {
    Impl& s = on_wide ? *wide : *lanes[size_t(b % L)];
    const int j = on_wide ? b : b / L;
    counts[b] = s.at<int>(s.plan.hypothesis_counts)[j];
    std::copy_n(s.at<Hypothesis>(s.plan.hypotheses) + size_t(j) * size_t(s.plan.K), counts[b],
                hypotheses + size_t(b) * size_t(plan.K));
  }
}

Status Session::translate(std::span<const std::span<const int32_t>> sources,
                          const TranslateOptions& options, Translations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = Translations{};
  std::fill_n(s.at<int>(s.plan.truncated), s.plan.B, 0);
  MT_RETURN_IF_ERROR(s.load_sources(sources, options));
  const int B = int(sources.size());
  if (B == 0) return {};
  MT_RETURN_IF_ERROR(s.run(B, options));
  results->hypotheses_ = s.at<Hypothesis>(s.plan.hypotheses);
  results->counts_ = s.at<int>(s.plan.hypothesis_counts);
  results->truncated_ = s.at<int>(s.plan.truncated);
  results->stride_ = size_t(s.plan.K);
  results->sentences_ = size_t(B);
  return {};
}

namespace {

// The longest prefix of `text` of at most `limit` bytes that ends on a
// UTF-8 character boundary.
std::string_view utf8_prefix(std::string_view text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

}  // namespace

Status Session::translate_text(std::span<const std::string_view> sources, const TranslateOptions& options,
                               TextTranslations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = TextTranslations{};
  const detail::Tokenizer* tokenizer = s.model->tokenizer();
  if (tokenizer == nullptr) {
    return Status::error(Errc::invalid_argument, "this model has no vocabulary (or was loaded without it): translate token ids instead");
  }
  MT_RETURN_IF_ERROR(options.validate(s.options));
  if (sources.size() > size_t(s.plan.B)) {
    return Status::error(Errc::capacity_exceeded, "batch of %zu sentences exceeds the session's max_batch_size %d",
                         sources.size(), s.plan.B);
  }
  const int B = int(sources.size());
  int* truncated = s.at<int>(s.plan.truncated);
  std::fill_n(truncated, s.plan.B, 0);
  auto* spans = s.at<std::span<const int32_t>>(s.plan.source_spans);
  const std::span<std::byte> workspace{s.at<std::byte>(s.plan.text_workspace), s.plan.text_workspace_bytes};
  for (int b = 0; b < B; ++b) {
    std::string_view text = sources[size_t(b)];
    if (text.size() > size_t(s.options.max_text_bytes)) {
      if (!options.truncate_long_sources) {
        return Status::error(Errc::capacity_exceeded, "sentence %d has %zu bytes; the session allows %d (max_text_bytes)",
                             b, text.size(), s.options.max_text_bytes);
      }
      text = utf8_prefix(text, size_t(s.options.max_text_bytes));
      truncated[b] = 1;
    }
    int32_t* ids = s.at<int32_t>(s.plan.text_ids) + size_t(b) * s.plan.text_ids_stride;
    size_t count = 0;
    const Status encoded = tokenizer->encode(text, workspace, {ids, s.plan.text_ids_stride}, &count);
    if (!encoded.ok()) return Status::error(encoded.code(), "sentence %d: %s", b, encoded.message());
    spans[b] = {ids, count};
  }
  MT_RETURN_IF_ERROR(s.load_sources({spans, size_t(B)}, options));
  if (B == 0) return {};
  MT_RETURN_IF_ERROR(s.run(B, options));

  const Hypothesis* hyps = s.at<Hypothesis>(s.plan.hypotheses);
  TextHypothesis* texts = s.at<TextHypothesis>(s.plan.text_hypotheses);
  const int* counts = s.at<int>(s.plan.hypothesis_counts);
  for (int b = 0; b < B; ++b) {
    for (int k = 0; k < counts[b]; ++k) {
      const size_t slot = size_t(b) * s.plan.K + size_t(k);
      char* out = s.at<char>(s.plan.text_out) + slot * s.plan.text_out_stride;
      size_t length = 0;
      MT_RETURN_IF_ERROR(s.model->target_tokenizer()->decode(hyps[slot].tokens, {out, s.plan.text_out_stride}, &length));
      length = detail::replace_line_breaks(out, length);
      texts[slot] = {{out, length}, hyps[slot].score, hyps[slot].log_prob, hyps[slot].tokens};
    }
  }
  results->hypotheses_ = texts;
  results->counts_ = counts;
  results->truncated_ = truncated;
  results->stride_ = size_t(s.plan.K);
  results->sentences_ = size_t(B);
  return {};
}

}  // namespace mt
