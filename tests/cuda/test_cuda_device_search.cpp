// The device's beam bookkeeping (advance_beams_cuda) against the host's
// (SearchBookkeeping) on the same made-up top-k output, step by step: the
// same beams, parents, scores, next tokens, gather index and finished
// hypotheses. Without a CUDA device the case says why and passes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/device_search.hpp"
#include "search/search_bookkeeping.hpp"

using namespace mt;
using namespace mt::detail;
using test::DeviceVector;
using test::require_finished;
using test::require_ok;

namespace {

// A top-k output for every row: 2K values best first, EOS (token 2) now and
// then, and some rows cut short (token -1 past their candidates).
void random_top_k(int rows, int width, std::mt19937& rng, std::vector<float>& values, std::vector<int32_t>& tokens) {
  std::uniform_real_distribution<float> drop(0.05f, 1.5f);
  std::uniform_int_distribution<int> token(3, 500), coin(0, 9);
  values.assign(size_t(rows) * width, -std::numeric_limits<float>::infinity());
  tokens.assign(size_t(rows) * width, -1);
  for (int r = 0; r < rows; ++r) {
    const int n = coin(rng) == 0 ? 1 + coin(rng) % width : width;
    float v = -drop(rng);
    for (int i = 0; i < n; ++i) {
      values[size_t(r) * width + i] = v;
      tokens[size_t(r) * width + i] = coin(rng) < 2 ? 2 : token(rng);
      v -= drop(rng);
    }
  }
}

// The same value, NaN included: both sides add the same floats and divide
// by the same length scales (the host's table), so nothing may differ.
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("cuda: the device's beam bookkeeping steps as the host's", "[cuda][search]") {
  MT_REQUIRE_CUDA_DEVICE();
  const int K = GENERATE(2, 4, 8);
  const float penalty = GENERATE(0.0f, 1.0f);
  INFO("beam " << K << ", length penalty " << penalty);
  // Finished hypotheses spaced by a capacity above the beam, as in a session
  // whose max_beam_size is larger than this call's beam.
  const int B = 6, T = 12, R = B * K, width = 2 * K, capacity = K + 2;
  constexpr int32_t kBos = 1, kEos = 2;
  // Sentence 2 is an empty source (done before the first step); the others
  // stop at their limits or when K hypotheses have finished. Sentence 5's
  // rows have no candidates at step 2 (NaN logits), if it lives that long.
  const std::vector<int> limits = {12, 3, 0, 7, 1, 12};

  // The host: SearchBookkeeping over plain arrays.
  std::vector<int> done(B), counts(B);
  std::vector<float> scores(R);
  std::vector<int32_t> steps(R), parents(R), history(size_t(R) * T), scratch(size_t(K) * T);
  std::vector<Candidate> candidates(size_t(width) * K);
  std::vector<Finished> finished(size_t(B) * capacity);
  std::vector<int32_t> finished_tokens(size_t(B) * capacity * T);
  std::vector<Hypothesis> hypotheses(size_t(B) * capacity);
  SearchBuffers h{capacity,        T,
                  limits.data(),   done.data(),
                  scores.data(),   steps.data(),
                  parents.data(),  history.data(),
                  scratch.data(),  candidates.data(),
                  finished.data(), finished_tokens.data(),
                  counts.data(),   hypotheses.data()};
  SearchLimits search;
  search.beam = search.hypotheses = K;
  search.length_penalty = penalty;
  SearchBookkeeping book(h, search, kBos, kEos);
  int alive = book.start_beam(B);
  REQUIRE(alive == B - 1);

  // The device: the same starting state.
  std::vector<int> start_done(done);
  DeviceVector<float> d_scores(scores);
  DeviceVector<int32_t> d_parents(parents), d_steps(steps), d_history(history.size()), d_scratch(size_t(R) * T),
      d_finished_tokens(finished_tokens.size()), d_index{size_t(R)};
  DeviceVector<Candidate> d_candidates(size_t(B) * width * K);
  DeviceVector<Finished> d_finished(finished.size());
  DeviceVector<int> d_counts(std::vector<int>(B, 0)), d_done(start_done), d_limits(limits),
      d_alive(std::vector<int>{alive});
  DeviceBeams d;
  std::vector<float> scales(size_t(T) + 1);
  for (int length = 0; length <= T; ++length) scales[length] = length_scale(length, penalty);
  DeviceVector<float> d_scales(scales);
  d.K = K, d.T = T, d.capacity = capacity, d.length_scales = d_scales.get();
  d.scores = d_scores.get(), d.parents = d_parents.get(), d.step_tokens = d_steps.get();
  d.history = d_history.get(), d.scratch = d_scratch.get(), d.candidates = d_candidates.get();
  d.finished = d_finished.get(), d.finished_tokens = d_finished_tokens.get(), d.finished_counts = d_counts.get();
  d.done = d_done.get(), d.length_limits = d_limits.get(), d.alive = d_alive.get(), d.gather_index = d_index.get();

  std::mt19937 rng(uint32_t(K * 10 + int(penalty)));
  std::vector<float> values;
  std::vector<int32_t> tokens;
  for (int t = 0; t < T && alive > 0; ++t) {
    INFO("step " << t);
    random_top_k(R, width, rng, values, tokens);
    // Sentence 5: no EOS before step 2, then no candidates at all.
    const auto first = tokens.begin() + size_t(5) * K * width, last = tokens.begin() + size_t(6) * K * width;
    if (t < 2) std::replace(first, last, kEos, kEos + 1);
    if (t == 2) std::fill(first, last, -1);
    const std::vector<int> done_before = done;
    for (int b = 0; b < B; ++b) {
      if (book.done(b)) continue;
      int n = 0;
      for (int k = 0; k < K; ++k) {
        const int row = b * K + k;
        if (scores[row] == -std::numeric_limits<float>::infinity()) continue;
        for (int i = 0; i < width && tokens[size_t(row) * width + i] >= 0; ++i) {
          candidates[n++] = {values[size_t(row) * width + i] + scores[row], tokens[size_t(row) * width + i], k};
        }
      }
      alive -= book.advance_beam(b, n, t);
    }
    DeviceVector<float> d_values(values);
    DeviceVector<int32_t> d_tokens(tokens);
    require_ok(advance_beams_cuda(d, B, t, kEos, penalty, d_values.get(), d_tokens.get(), nullptr),
               "advance_beams_cuda");
    require_finished(nullptr, "advance_beams_cuda");

    REQUIRE(d_alive.download()[0] == alive);
    const std::vector<int> dev_done = d_done.download();
    const std::vector<float> dev_scores = d_scores.download();
    const std::vector<int32_t> dev_parents = d_parents.download(), dev_steps = d_steps.download(),
                               dev_index = d_index.download(), dev_history = d_history.download();
    for (int b = 0; b < B; ++b) {
      INFO("sentence " << b);
      CHECK(dev_done[b] == done[b]);
      if (done_before[b]) continue;  // not stepped: the host's arrays hold its results now
      for (int k = 0; k < K; ++k) {
        const int row = b * K + k;
        INFO("beam " << k);
        CHECK(dev_parents[row] == parents[row]);
        CHECK(dev_index[row] == b * K + parents[row]);
        CHECK(same(dev_scores[row], scores[row]));
        if (scores[row] == -std::numeric_limits<float>::infinity()) continue;
        CHECK(dev_steps[row] == steps[row]);
        for (int i = 0; i <= t; ++i) CHECK(dev_history[size_t(row) * T + i] == history[size_t(row) * T + i]);
      }
    }
  }
  REQUIRE(alive == 0);
  // Every sentence's finished hypotheses, in the order they were kept.
  const std::vector<int> dev_counts = d_counts.download();
  const std::vector<Finished> dev_finished = d_finished.download();
  const std::vector<int32_t> dev_tokens = d_finished_tokens.download();
  for (int b = 0; b < B; ++b) {
    if (start_done[b]) continue;
    INFO("sentence " << b);
    REQUIRE(dev_counts[b] == counts[b]);  // emit left the host's count as it was: hypotheses = K
    for (int i = 0; i < counts[b]; ++i) {
      INFO("finished " << i);
      const Finished& want = finished[size_t(b) * capacity + i];
      const Finished& got = dev_finished[size_t(b) * capacity + i];
      CHECK(same(got.score, want.score));
      CHECK(same(got.log_prob, want.log_prob));
      REQUIRE(got.length == want.length);
      for (int j = 0; j < want.length; ++j) {
        CHECK(dev_tokens[(size_t(b) * capacity + i) * T + j] == finished_tokens[(size_t(b) * capacity + i) * T + j]);
      }
    }
  }
}
