// The stage profiler's table (stage_profile.hpp); compiled only with
// MT_STAGE_PROFILE=ON.
#include "support/stage_profile.hpp"

#include <chrono>
#include <cstring>
#include <thread>

namespace mt::profile {

namespace detail {
Table g_table{};
thread_local ScopedStage* g_current = nullptr;
}  // namespace detail

namespace {

uint64_t steady_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Where the tick-to-ns rate is measured from: the last reset (or the start).
struct Reference {
  uint64_t ticks, ns;
};
Reference g_reference{detail::ticks(), steady_ns()};

}  // namespace

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::encoder:
      return "encoder";
    case Stage::cross_kv_projection:
      return "cross kv projection";
    case Stage::step:
      return "decode step";
    case Stage::embedding:
      return "embedding";
    case Stage::self_qkv:
      return "self-attn qkv linear";
    case Stage::self_attention:
      return "self-attention (cache + attn)";
    case Stage::self_out:
      return "self-attn out linear";
    case Stage::cross_q:
      return "cross-attn q linear";
    case Stage::cross_attention:
      return "cross-attention";
    case Stage::cross_out:
      return "cross-attn out linear";
    case Stage::ffn:
      return "ffn (2 linears)";
    case Stage::layer_norm:
      return "layer norms";
    case Stage::output_layer:
      return "output layer (logits)";
    case Stage::quantize_inputs:
      return "int8 input quantization";
    case Stage::search:
      return "search";
    case Stage::select:
      return "log-softmax + argmax/top-k";
    case Stage::cache_reorder:
      return "beam KV-cache reorder";
    case Stage::count:
      break;
  }
  return "?";
}

Table snapshot() {
  constexpr uint64_t kMinInterval = 20'000'000;  // ns
  uint64_t ns = steady_ns();
  if (ns - g_reference.ns < kMinInterval) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(kMinInterval - (ns - g_reference.ns)));
    ns = steady_ns();
  }
  const uint64_t ticks = detail::ticks();
  const double ns_per_tick =
      ticks > g_reference.ticks ? double(ns - g_reference.ns) / double(ticks - g_reference.ticks) : 1.0;
  auto convert = [&](uint64_t t) { return uint64_t(double(t) * ns_per_tick + 0.5); };
  Table out = detail::g_table;
  for (StageTotals& s : out.stages) {
    s.inclusive_ns = convert(s.inclusive_ns);
    s.self_ns = convert(s.self_ns);
  }
  for (auto& row : out.within)
    for (Nested& cell : row) cell.ns = convert(cell.ns);
  return out;
}

void reset() {
  std::memset(static_cast<void*>(&detail::g_table), 0, sizeof(detail::g_table));
  g_reference = {detail::ticks(), steady_ns()};
}

}  // namespace mt::profile
