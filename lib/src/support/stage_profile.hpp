// Per-stage timing of the forward pass and the search (CMake option
// MT_STAGE_PROFILE, default OFF; bench/bench_decode_profile reads it).
//
//   {
//     MT_PROFILE_STAGE(ffn);   // times the rest of this scope as Stage::ffn
//     linear(...);
//   }
//
// Off (the default), MT_PROFILE_STAGE expands to nothing: normal builds carry
// no timer, no counter and no branch. On, each scope adds its time (two reads
// of the TSC, ~19 ns per scope in all) and one call to a process-wide table of
// plain counters, with no allocation. Scopes nest: a stage opened inside
// another is counted in the outer one's inclusive time, not in its self time,
// and Table::within records it under its parent, so e.g. the int8 input
// quantization shows both inside its layer's stage and on its own.
//
// The table is one per process, not per session, and is neither atomic nor
// locked: profile one session, translating from one thread at a time (with
// several threads translating at once the counts race and are approximate;
// nothing else breaks, the chain of open scopes is per thread). Timers sit on
// the calling thread around whole parallel_for calls, never inside a kernel or
// a worker's task, so a stage's time is its wall time with every thread of
// the pool working on it.
#pragma once

#include <cstdint>

#if defined(MT_STAGE_PROFILE) && MT_STAGE_PROFILE
#if defined(__x86_64__)
#include <x86intrin.h>
#else
#include <chrono>
#endif
#endif

namespace mt::profile {

enum class Stage : int {
  // Once per translation.
  encoder,              // Transformer::encode, embeddings to the final norm
  cross_kv_projection,  // Transformer::project_memory: every layer's cross keys and values
  // One decoding step: one iteration of the search loop, the rest nest in it.
  step,
  embedding,        // target embedding x sqrt(C) + position
  self_qkv,         // self-attention q, k, v linear
  self_attention,   // KV-cache append + attention over [0, t]
  self_out,         // self-attention output linear (+ residual)
  cross_q,          // cross-attention query linear
  cross_attention,  // attention over the projected memory
  cross_out,        // cross-attention output linear (+ residual)
  ffn,              // both feed-forward linears (activation fused)
  layer_norm,       // every LayerNorm (inside the encoder too, nested there)
  output_layer,     // the logits linear [R, V]
  quantize_inputs,  // int8 layers: quantize_rows of the input (nested in its layer's stage)
  search,           // the search's own work per step (select nests in it)
  select,           // log-softmax + argmax (greedy) or top-k per row (beam)
  cache_reorder,    // beam: gathering each layer's self-attention cache rows (nested in search)
  count
};

#if defined(MT_STAGE_PROFILE) && MT_STAGE_PROFILE

// A readable name ("self-attn qkv linear").
const char* stage_name(Stage stage);

inline constexpr int kStages = int(Stage::count);

struct StageTotals {
  uint64_t calls = 0;
  uint64_t inclusive_ns = 0;  // wall time inside the stage's scopes
  uint64_t self_ns = 0;       // the same less the stages nested in them
};

struct Nested {
  uint64_t calls = 0;
  uint64_t ns = 0;  // inclusive
};

struct Table {
  StageTotals stages[kStages];
  // within[p][s]: stage s opened directly inside stage p (e.g. the layer
  // norms of the decoder step apart from the encoder's); row kStages holds
  // the stages opened outside any other.
  Nested within[kStages + 1][kStages];
};

// The counters since the last reset(), times in nanoseconds. The timers
// count clock ticks (the TSC on x86-64, which needs constant_tsc; steady_clock
// elsewhere), converted here at the rate measured against steady_clock since
// reset(): the first snapshot within 20 ms of a reset waits out the 20 ms.
Table snapshot();
// Zeroes the counters; call it with no timed scope open.
void reset();

namespace detail {

inline uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
#endif
}

extern Table g_table;  // times in ticks
class ScopedStage;
extern thread_local ScopedStage* g_current;  // this thread's innermost open scope

class ScopedStage {
 public:
  explicit ScopedStage(Stage stage) : stage_(int(stage)), parent_(g_current) {
    g_current = this;
    start_ = ticks();
  }
  ~ScopedStage() {
    const uint64_t elapsed = ticks() - start_;
    StageTotals& s = g_table.stages[stage_];
    ++s.calls;
    s.inclusive_ns += elapsed;
    s.self_ns += elapsed - nested_ns_;
    Nested& cell = g_table.within[parent_ != nullptr ? parent_->stage_ : kStages][stage_];
    ++cell.calls;
    cell.ns += elapsed;
    if (parent_ != nullptr) parent_->nested_ns_ += elapsed;
    g_current = parent_;
  }
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  int stage_;
  ScopedStage* parent_;
  uint64_t start_ = 0;
  uint64_t nested_ns_ = 0;
};

}  // namespace detail

#define MT_PROFILE_CONCAT_(a, b) a##b
#define MT_PROFILE_CONCAT(a, b) MT_PROFILE_CONCAT_(a, b)
#define MT_PROFILE_STAGE(stage) \
  ::mt::profile::detail::ScopedStage MT_PROFILE_CONCAT(mt_profile_scope_, __LINE__) { ::mt::profile::Stage::stage }

#else

#define MT_PROFILE_STAGE(stage) static_cast<void>(0)

#endif

}  // namespace mt::profile
