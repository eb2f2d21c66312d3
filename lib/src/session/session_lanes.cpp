// A CPU session split by sentences: single-threaded lanes in the session's
// arena, each translating its share of the batch side by side, or (large
// models, small batches) one wide lane on every thread split by layers.
#include <algorithm>
#include <new>

#include "session/session_impl.hpp"

namespace mt {

void Session::Impl::bind_lanes() {
  const auto make_lane = [&](const detail::SessionPlan& lane_plan, size_t offset, detail::ThreadPool* shared_pool) {
    auto lane = std::make_unique<Impl>();
    lane->model =
        std::shared_ptr<const Model>(std::shared_ptr<const Model>(), model.get());  // not an owner: the session is
    lane->options = options;
    lane->options.num_threads = lane_plan.threads;
    lane->options.max_batch_size = lane_plan.B;
    lane->options.thread_split = ThreadSplit::layers;
    lane->plan = lane_plan;
    lane->kernels = kernels;
    lane->arena = arena + offset;
    lane->pool = shared_pool;
    lane->length_offset = length_offset;
    lane->alignment_layer = alignment_layer;
    lane->bind();
    return lane;
  };
  for (int i = 0; i < plan.lanes; ++i) {
    lanes.push_back(make_lane(*plan.lane_plan, plan.lane_offset + size_t(i) * plan.lane_stride, nullptr));
    lanes.back()->stream_first = size_t(i);  // sentence b is lane b % L's sentence b / L
    lanes.back()->stream_stride = size_t(plan.lanes);
    lanes.back()->stream_mutex = stream_mutex;
  }
  if (plan.wide_plan != nullptr) {
    wide = make_lane(*plan.wide_plan, plan.wide_offset, pool);
    wide->stream_mutex = stream_mutex;
  }
  // Each lane's status of a run, in the arena (Status holds no heap memory on success).
  for (int i = 0; i < plan.lanes; ++i) new (at<Status>(plan.lane_statuses) + i) Status{};
}

Status Session::Impl::run_lanes(int B, const TranslateOptions& options, std::span<const std::span<const int32_t>> targets) {
  // The sources, checked and cut to fit by load_sources, go to the lanes as
  // spans (grouped by lane in source_spans, free again once loaded): sentence
  // b is sentence b / L of lane b % L, so a batch sorted by length gives each
  // lane a like share of short and long ones.
  const int lane_count = int(lanes.size());
  const int32_t* tokens = at<int32_t>(plan.source_tokens);
  const int* offsets = at<int>(plan.source_offsets);
  auto* spans = at<std::span<const int32_t>>(plan.source_spans);
  // Lane i has B / L sentences, one more if i < B % L; its spans start after
  // the earlier lanes' ones.
  const int L = lane_count;
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
  // The targets of score(), or else the prefixes, grouped by lane alike
  // (a sentence without a prefix gets an empty one).
  const std::span<const std::span<const int32_t>> per_sentence = targets.empty() ? options.prefixes : targets;
  auto* grouped = at<std::span<const int32_t>>(plan.target_spans);
  for (int b = 0; b < B; ++b) {
    grouped[on_wide ? b : lane_first(b % L) + b / L] =
        size_t(b) < per_sentence.size() ? per_sentence[size_t(b)] : std::span<const int32_t>();
  }
  const auto lane_call = [&](Impl& s, int first, int count) {
    TranslateOptions lane_options = options;
    const std::span<const std::span<const int32_t>> mine{grouped + first, size_t(count)};
    if (!per_sentence.empty() && targets.empty()) lane_options.prefixes = mine;
    MT_RETURN_IF_ERROR(s.load_sources({spans + first, size_t(count)}, lane_options));
    return s.run(count, lane_options, targets.empty() ? std::span<const std::span<const int32_t>>() : mine);
  };
  // Checked here already, the sources cannot be refused by a lane; should
  // one fail anyway, the first failure (in lane order) is the batch's.
  if (on_wide) {
    MT_RETURN_IF_ERROR(lane_call(*wide, 0, B));
  } else {
    Status* failures = at<Status>(plan.lane_statuses);
    pool->parallel_for(L, [&](int lane, int /*thread*/) {
      const int count = lane_batch(lane);
      failures[lane] = {};
      if (count == 0) return;
      failures[lane] = lane_call(*lanes[size_t(lane)], lane_first(lane), count);
    });
    for (int lane = 0; lane < L; ++lane) MT_RETURN_IF_ERROR(failures[lane]);
  }
  Hypothesis* hypotheses = at<Hypothesis>(plan.hypotheses);
  int* counts = at<int>(plan.hypothesis_counts);
  int* stopped = at<int>(plan.stopped);
  for (int b = 0; b < B; ++b) {
    Impl& s = on_wide ? *wide : *lanes[size_t(b % L)];
    const int j = on_wide ? b : b / L;
    counts[b] = s.at<int>(s.plan.hypothesis_counts)[j];
    stopped[b] = s.at<int>(s.plan.stopped)[j];
    std::copy_n(s.at<Hypothesis>(s.plan.hypotheses) + size_t(j) * size_t(s.plan.K), counts[b],
                hypotheses + size_t(b) * size_t(plan.K));
  }
  return {};
}

}  // namespace mt
