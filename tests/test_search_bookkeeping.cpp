// The search bookkeeping that the CPU and GPU searches share, driven by hand:
// which hypotheses finish, which beams continue from which, and what the
// results hold. Token 1 is BOS, token 2 EOS.
#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "search/search_bookkeeping.hpp"

namespace mt::detail {
namespace {

constexpr int32_t kBos = 1, kEos = 2;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The buffers of a search of B sentences, beams of K, T positions.
struct Buffers {
  Buffers(int B, int K, int T, std::vector<int> limits)
      : limits(std::move(limits)),
        done(B),
        scores(B * K),
        steps(B * K),
        parents(B * K),
        history(B * K * T),
        scratch(K * T),
        candidates(2 * K * K),
        finished(B * K),
        finished_tokens(B * K * T),
        counts(B),
        hypotheses(B * K) {
    view.capacity = K;
    view.T = T;
    view.length_limits = this->limits.data();
    view.done = done.data();
    view.scores = scores.data();
    view.step_tokens = steps.data();
    view.parents = parents.data();
    view.history = history.data();
    view.history_scratch = scratch.data();
    view.candidates = candidates.data();
    view.finished = finished.data();
    view.finished_tokens = finished_tokens.data();
    view.finished_counts = counts.data();
    view.hypotheses = hypotheses.data();
  }
  std::vector<int32_t> result(int b, int i, int K) const {
    const Hypothesis& h = hypotheses[size_t(b) * K + i];
    return {h.tokens.begin(), h.tokens.end()};
  }

  std::vector<int> limits, done;
  std::vector<float> scores;
  std::vector<int32_t> steps, parents, history, scratch;
  std::vector<Candidate> candidates;
  std::vector<Finished> finished;
  std::vector<int32_t> finished_tokens;
  std::vector<int> counts;
  std::vector<Hypothesis> hypotheses;
  SearchBuffers view;
};

SearchLimits beam_limits(int beam, int hypotheses, float length_penalty = 1.0f) {
  SearchLimits limits;
  limits.beam = beam;
  limits.hypotheses = hypotheses;
  limits.length_penalty = length_penalty;
  return limits;
}

// Puts `list` into the bookkeeping's candidate buffer; returns its size.
int offer(SearchBookkeeping& book, std::initializer_list<Candidate> list) {
  int n = 0;
  for (const Candidate& c : list) book.candidates()[n++] = c;
  return n;
}

TEST_CASE("search bookkeeping: greedy finishes on EOS or at the length limit", "[search]") {
  Buffers buffers(3, 2, 8, {0, 3, 5});  // an empty source, then limits 3 and 5
  SearchBookkeeping book(buffers.view, beam_limits(1, 1), kBos, kEos);
  REQUIRE(book.start_greedy(3) == 2);
  CHECK(book.max_steps() == 5);
  // The empty source has its one empty hypothesis at once.
  REQUIRE(book.done(0));
  REQUIRE(buffers.counts[0] == 1);
  CHECK(buffers.hypotheses[0].tokens.empty());
  CHECK(buffers.hypotheses[0].score == 0.0f);

  const float lp = std::log(0.5f);
  CHECK_FALSE(book.advance_greedy(1, 0, 7, lp));
  CHECK_FALSE(book.advance_greedy(2, 0, 8, lp));
  CHECK_FALSE(book.advance_greedy(1, 1, 9, lp));
  CHECK(book.advance_greedy(2, 1, kEos, lp));  // EOS: not a token of the result, but counted in the score
  CHECK(book.advance_greedy(1, 2, 4, lp));     // the limit: 3 tokens, no EOS
  REQUIRE(book.done(1));
  REQUIRE(book.done(2));
  const Hypothesis& one = buffers.hypotheses[1 * 2];  // sentence b at b * capacity
  const Hypothesis& two = buffers.hypotheses[2 * 2];
  CHECK(buffers.result(1, 0, 2) == std::vector<int32_t>{7, 9, 4});
  CHECK(one.log_prob == Approx(3 * lp));
  CHECK(one.score == Approx(3 * lp / 3));
  CHECK(buffers.result(2, 0, 2) == std::vector<int32_t>{8});
  CHECK(two.log_prob == Approx(2 * lp));
  CHECK(two.score == Approx(2 * lp / 2));
}

TEST_CASE("search bookkeeping: beams continue from their parents and keep their histories", "[search]") {
  const int K = 2;
  Buffers buffers(1, K, 6, {6});
  SearchBookkeeping book(buffers.view, beam_limits(K, 2, 0.0f), kBos, kEos);
  REQUIRE(book.start_beam(1) == 1);
  // All beams start at BOS, only beam 0 alive.
  CHECK(buffers.steps == std::vector<int32_t>{kBos, kBos});
  CHECK(buffers.scores[0] == 0.0f);
  CHECK(buffers.scores[1] == kNegInf);

  // Step 0: one row (beam 0) offers 10 and 11.
  int n = offer(book, {{-1.0f, 11, 0}, {-0.5f, 10, 0}, {-3.0f, 12, 0}});
  CHECK_FALSE(book.advance_beam(0, n, 0));
  CHECK(buffers.steps == std::vector<int32_t>{10, 11});
  CHECK(buffers.parents == std::vector<int32_t>{0, 0});
  CHECK(buffers.scores == std::vector<float>{-0.5f, -1.0f});

  // Step 1: one continues beam 0 (history 10), one beam 1 (history 11).
  n = offer(book, {{-0.9f, 20, 0}, {-1.2f, 21, 1}, {-1.1f, 22, 1}, {-5.0f, 23, 0}});
  CHECK_FALSE(book.advance_beam(0, n, 1));
  CHECK(buffers.parents == std::vector<int32_t>{0, 1});
  CHECK(buffers.steps == std::vector<int32_t>{20, 22});
  CHECK(std::vector<int32_t>(buffers.history.begin(), buffers.history.begin() + 2) == std::vector<int32_t>{10, 20});
  CHECK(std::vector<int32_t>(buffers.history.begin() + 6, buffers.history.begin() + 8) == std::vector<int32_t>{11, 22});

  // Step 2: the best candidate ends: it finishes with beam 1's history, and
  // the K best of the rest continue, crossed: beam 0 from beam 1 and back.
  n = offer(book, {{-1.0f, kEos, 1}, {-2.0f, 30, 1}, {-2.5f, 31, 0}, {-9.0f, 32, 0}});
  CHECK_FALSE(book.advance_beam(0, n, 2));
  REQUIRE(buffers.counts[0] == 1);
  CHECK(buffers.finished[0].length == 2);
  CHECK(buffers.finished[0].log_prob == -1.0f);
  CHECK(buffers.steps == std::vector<int32_t>{30, 31});
  CHECK(buffers.parents == std::vector<int32_t>{1, 0});
  CHECK(std::vector<int32_t>(buffers.history.begin(), buffers.history.begin() + 3) == std::vector<int32_t>{11, 22, 30});
  CHECK(std::vector<int32_t>(buffers.history.begin() + 6, buffers.history.begin() + 9) ==
        std::vector<int32_t>{10, 20, 31});

  // Step 3: a second EOS fills the K finished: the sentence is done, best first.
  n = offer(book, {{-1.5f, kEos, 0}, {-4.0f, 40, 1}, {-4.5f, 41, 0}});
  CHECK(book.advance_beam(0, n, 3));
  REQUIRE(book.done(0));
  REQUIRE(buffers.counts[0] == 2);
  CHECK(buffers.result(0, 0, K) == std::vector<int32_t>{11, 22});
  CHECK(buffers.result(0, 1, K) == std::vector<int32_t>{11, 22, 30});
  CHECK(buffers.hypotheses[0].score == -1.0f);
  CHECK(buffers.hypotheses[1].score == -1.5f);
  // A finished sentence's beams are their own parents: no cache moves.
  CHECK(buffers.parents == std::vector<int32_t>{0, 1});
}

TEST_CASE("search bookkeeping: a better hypothesis replaces the worst finished one", "[search]") {
  const int K = 2;
  Buffers buffers(1, K, 8, {8});
  SearchBookkeeping book(buffers.view, beam_limits(K, 2, 0.0f), kBos, kEos);
  book.start_beam(1);
  int n = offer(book, {{-1.0f, 5, 0}, {-2.0f, 6, 0}});
  book.advance_beam(0, n, 0);
  // Step 1: [6] ends at -3.
  n = offer(book, {{-2.5f, 7, 0}, {-3.0f, kEos, 1}, {-3.5f, 8, 1}});
  CHECK_FALSE(book.advance_beam(0, n, 1));
  REQUIRE(buffers.counts[0] == 1);
  // Step 2: three more end. The first fills the K finished, the second
  // replaces [6] (-3), the third is worse than both and is dropped.
  n = offer(book, {{-2.5f, kEos, 0}, {-2.7f, kEos, 1}, {-2.8f, 9, 0}, {-3.2f, kEos, 0}});
  CHECK(book.advance_beam(0, n, 2));
  REQUIRE(buffers.counts[0] == 2);
  CHECK(buffers.hypotheses[0].log_prob == -2.5f);
  CHECK(buffers.result(0, 0, K) == std::vector<int32_t>{5, 7});
  CHECK(buffers.hypotheses[1].log_prob == -2.7f);
  CHECK(buffers.result(0, 1, K) == std::vector<int32_t>{6, 8});
}

TEST_CASE("search bookkeeping: num_hypotheses keeps the best finished ones", "[search]") {
  const int K = 3;
  Buffers buffers(1, K, 4, {4});
  SearchBookkeeping book(buffers.view, beam_limits(K, 1, 0.0f), kBos, kEos);
  book.start_beam(1);
  int n = offer(book, {{-2.0f, kEos, 0}, {-1.0f, kEos, 0}, {-3.0f, kEos, 0}, {-4.0f, 5, 0}});
  CHECK(book.advance_beam(0, n, 0));
  REQUIRE(buffers.counts[0] == 1);
  CHECK(buffers.hypotheses[0].log_prob == -1.0f);
  CHECK(buffers.result(0, 0, K).empty());
}

TEST_CASE("search bookkeeping: at the length limit every live beam finishes", "[search]") {
  const int K = 3;
  Buffers buffers(2, K, 4, {2, 4});
  SearchBookkeeping book(buffers.view, beam_limits(K, 3, 1.0f), kBos, kEos);
  REQUIRE(book.start_beam(2) == 2);
  int n = offer(book, {{-1.0f, 5, 0}, {-2.0f, 6, 0}});
  CHECK_FALSE(book.advance_beam(0, n, 0));
  n = offer(book, {{-1.0f, 7, 0}});
  CHECK_FALSE(book.advance_beam(1, n, 0));
  // Sentence 0 reaches its limit of 2 with two live beams (the third never lived).
  n = offer(book, {{-1.5f, 8, 0}, {-2.5f, 9, 1}, {-4.0f, 10, 0}});
  CHECK(book.advance_beam(0, n, 1));
  REQUIRE(buffers.counts[0] == 3);
  CHECK(buffers.result(0, 0, K) == std::vector<int32_t>{5, 8});
  CHECK(buffers.result(0, 1, K) == std::vector<int32_t>{6, 9});
  CHECK(buffers.result(0, 2, K) == std::vector<int32_t>{5, 10});
  CHECK(buffers.hypotheses[0].score == Approx(-1.5f / 2));
  // Sentence 1 is untouched by sentence 0's end.
  CHECK_FALSE(book.done(1));
  CHECK(buffers.steps[K] == 7);
}

TEST_CASE("search bookkeeping: a step with no candidates still gives the sentence a result", "[search]") {
  // NaN logits leave no candidate: the best prefix so far comes back, scored NaN.
  const int K = 2;
  Buffers buffers(1, K, 6, {6});
  SearchBookkeeping book(buffers.view, beam_limits(K, 1), kBos, kEos);
  book.start_beam(1);
  int n = offer(book, {{-1.0f, 5, 0}});
  CHECK_FALSE(book.advance_beam(0, n, 0));
  CHECK(book.advance_beam(0, 0, 1));
  REQUIRE(buffers.counts[0] == 1);
  CHECK(buffers.result(0, 0, K) == std::vector<int32_t>{5});
  CHECK(std::isnan(buffers.hypotheses[0].score));
}

TEST_CASE("search bookkeeping: an empty source gets one empty hypothesis in beam search", "[search]") {
  Buffers buffers(2, 4, 5, {0, 5});
  SearchBookkeeping book(buffers.view, beam_limits(4, 4), kBos, kEos);
  REQUIRE(book.start_beam(2) == 1);
  REQUIRE(book.done(0));
  REQUIRE(buffers.counts[0] == 1);
  CHECK(buffers.hypotheses[0].tokens.empty());
  CHECK_FALSE(book.done(1));
  CHECK(book.max_steps() == 5);
}

}  // namespace
}  // namespace mt::detail
