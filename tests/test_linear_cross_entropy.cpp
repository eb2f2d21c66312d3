// linear_cross_entropy, the output layer and its loss in one op, against the
// two ops it replaces: the same loss and gradients bit for bit (float, loss
// seeded with 1, as training's), over several row blocks, padding, label
// smoothing, a bias or none, 1 and 2 threads, and its input's gradient both
// written (first use) and added to. A seed other than 1 scales both within
// rounding. The unfused ops are checked against finite differences in
// test_autograd.cpp; the whole model's loss in test_train_model.cpp.
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "autograd/linear_cross_entropy.hpp"
#include "autograd/ops.hpp"

namespace mt::autograd {
namespace {

struct Problem {
  int M, V, K;
  bool bias;
  std::vector<float> x, w, b;
  std::vector<int> targets;
};

// V = 5000: blocks of 102 rows, so M = 130 is a full block and a part;
// K = 40: the input gradient's packed operand ends in a partial panel.
Problem make_problem(bool bias, uint64_t seed) {
  Problem p{130, 5000, 40, bias, {}, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto* v : {&p.x, &p.w, &p.b}) v->resize(v == &p.x ? size_t(p.M) * p.K : v == &p.w ? size_t(p.V) * p.K : p.V);
  for (auto* v : {&p.x, &p.w, &p.b})
    for (float& f : *v) f = u(rng);
  std::uniform_int_distribution<int> id(0, p.V - 1);
  for (int r = 0; r < p.M; ++r) p.targets.push_back(r % 9 == 4 ? 0 : id(rng));  // 0: padding
  return p;
}

struct Result {
  float loss = 0.0f;
  double nll = 0.0;
  int64_t tokens = 0;
  std::vector<std::vector<float>> grads;  // of every parameter
};

// x_as_sum: x is a + c for parameters a and c (a step's tensor, whose
// gradient the op writes on first use); else x is a parameter (added to).
// Two steps on one graph, the first on other weights, the second's result
// returned: a gradient written on first use keeps nothing of the first's.
Result run(const Problem& p, bool fused, int threads, bool x_as_sum, float seed = 1.0f) {
  Graph<float> g(threads);
  Tensor<float>* w = g.parameter("w", Shape{p.V, p.K});
  Tensor<float>* b = p.bias ? g.parameter("b", Shape{p.V}) : nullptr;
  Tensor<float>* a = g.parameter(x_as_sum ? "a" : "x", Shape{p.M, p.K});
  Tensor<float>* c = x_as_sum ? g.parameter("c", Shape{p.M, p.K}) : nullptr;
  Result r;
  for (const float shift : {0.25f, 0.0f}) {
    for (size_t i = 0; i < p.w.size(); ++i) w->value[i] = p.w[i] + shift;
    if (b) std::copy(p.b.begin(), p.b.end(), b->value.begin());
    for (size_t i = 0; i < p.x.size(); ++i) {
      a->value[i] = c ? p.x[i] * 0.5f : p.x[i];
      if (c) c->value[i] = p.x[i] - a->value[i];
    }
    g.clear();
    g.zero_grad();
    Tensor<float>* x = c ? add(g, a, c) : a;
    const CrossEntropy<float> ce = fused ? linear_cross_entropy(g, x, w, b, p.targets, 0, 0.1)
                                         : cross_entropy(g, linear(g, x, w, b), p.targets, 0, 0.1);
    g.backward(ce.loss, seed);
    r = Result{ce.loss->value[0], ce.nll, ce.tokens, {}};
    for (const Tensor<float>* t : g.parameters()) r.grads.push_back(t->grad);
  }
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("linear_cross_entropy gives the unfused ops' loss and gradients bit for bit", "[autograd]") {
  const bool bias = GENERATE(true, false);
  const int threads = GENERATE(1, 2);
  const bool x_as_sum = GENERATE(true, false);
  INFO("bias " << bias << ", threads " << threads << ", x a step's tensor " << x_as_sum);
  const Problem p = make_problem(bias, 11);
  const Result fused = run(p, true, threads, x_as_sum), unfused = run(p, false, threads, x_as_sum);
  CHECK(std::memcmp(&fused.loss, &unfused.loss, sizeof(float)) == 0);
  CHECK(fused.nll == unfused.nll);
  CHECK(fused.tokens == unfused.tokens);
  CHECK(fused.tokens == 130 - 14);  // rows 4, 13, ..., 121 are padding
  REQUIRE(fused.grads.size() == unfused.grads.size());
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    INFO("parameter " << i);
    CHECK(same_bits(fused.grads[i], unfused.grads[i]));
  }
}

TEST_CASE("linear_cross_entropy scales its gradients by the loss's seed", "[autograd]") {
  const Problem p = make_problem(true, 12);
  const Result fused = run(p, true, 2, true, 2.5f), unfused = run(p, false, 2, true, 2.5f);
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    double err = 0.0, mag = 0.0;
    for (size_t j = 0; j < fused.grads[i].size(); ++j) {
      err = std::max(err, double(std::abs(fused.grads[i][j] - unfused.grads[i][j])));
      mag = std::max(mag, double(std::abs(unfused.grads[i][j])));
    }
    INFO("parameter " << i << ": max error " << err << " of " << mag);
    CHECK(mag > 0.0);
    CHECK(err <= 2e-5 * mag);  // float sums over V = 5000 rounded otherwise: measured 6e-6
  }
}

TEST_CASE("linear_cross_entropy checks its targets", "[autograd]") {
  Graph<float> g;
  Tensor<float>* x = g.parameter("x", Shape{3, 4});
  Tensor<float>* w = g.parameter("w", Shape{5, 4});
  const std::vector<int> outside = {1, 5, 2}, short_list = {1, 2};
  Tensor<float>* none = nullptr;
  CHECK_THROWS_WITH(linear_cross_entropy(g, x, w, none, outside, 0, 0.1), Catch::Contains("outside the vocabulary"));
  CHECK_THROWS_WITH(linear_cross_entropy(g, x, w, none, short_list, 0, 0.1), Catch::Contains("one target per row"));
  Tensor<float>* w3 = g.parameter("w3", Shape{5, 3});
  CHECK_THROWS_WITH(linear_cross_entropy(g, x, w3, none, short_list, 0, 0.1), Catch::Contains("linear"));
}

}  // namespace mt::autograd
