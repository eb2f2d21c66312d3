// Autograd tests: every op's backward against central finite differences in
// double on small random shapes (odd sizes, padding masks of different
// lengths, causal masks, label smoothing with padding), the float path
// (platforms GEMM, threads) against the double one, hand-checked values,
// dropout determinism and the graph's reuse across steps.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string_view>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "autograd/dropout_mask.hpp"
#include "autograd/gemm.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "mt/kernels.h"
#include "support/splitmix64.hpp"
#include "test_skip.hpp"

namespace mt::detail {
// The runtime's sinusoidal table (lib/src/transformer/transformer.cpp), which the
// embedding must reproduce exactly.
void fill_positions(float* positions, int P, int C);
}  // namespace mt::detail

namespace mt::autograd {
namespace {

// Finite differences in double with grad_check's default h = 1e-5: truncation
// O(h^2 f''') and rounding ~ 1e-16 |f| / h, both ~1e-11 here, against
// gradients of 1e-3 and more (the floor for near-zero entries). Measured: at
// most ~3e-7 (the tiny transformer, |loss| ~ 10), far less for single ops.
constexpr double kGradTolerance = 1e-6;
// Float against double, max |f - d| / max |d| over a tensor: float rounding
// of sums of up to ~100 terms, measured at most 5e-7 for outputs and gradients.
constexpr double kFloatForwardTolerance = 1e-5;
constexpr double kFloatBackwardTolerance = 1e-5;

std::vector<double> random_values(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// A parameter of either precision holding the same random values.
template <class T>
Tensor<T>* random_parameter(Graph<T>& g, const std::string& name, Shape shape, uint64_t seed, double lo = -1.0,
                            double hi = 1.0) {
  Tensor<T>* p = g.parameter(name, shape);
  const std::vector<double> v = random_values(size_t(shape.numel()), seed, lo, hi);
  std::copy(v.begin(), v.end(), p->value.begin());
  return p;
}

// loss = sum(y * w) for a fixed random w: its gradient reaches every output
// of y with a different weight, so the check covers the whole Jacobian.
template <class T>
Tensor<T>* weighted_sum(Graph<T>& g, Tensor<T>* y, uint64_t seed) {
  const std::vector<double> w = random_values(size_t(y->numel()), seed);
  std::vector<T> wt(w.begin(), w.end());
  return sum(g, mul(g, y, g.input(y->shape, std::span<const T>(wt))));
}

void require_gradients(Graph<double>& g, const std::function<Tensor<double>*(Graph<double>&)>& build) {
  const GradCheckResult r = grad_check(g, build);
  INFO("worst: " << r.worst << " (" << r.entries << " entries)");
  CHECK(r.entries > 0);
  CHECK(r.max_rel_error < kGradTolerance);
}

// max |got - ref| / max |ref|
template <class A, class B>
double relative_error(const std::vector<A>& got, const std::vector<B>& ref) {
  REQUIRE(got.size() == ref.size());
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::abs(double(got[i]) - double(ref[i])));
    mag = std::max(mag, std::abs(double(ref[i])));
  }
  return mag == 0.0 ? err : err / mag;
}

TEST_CASE("linear backward matches finite differences", "[autograd]") {
  // N = 19 spans two GEMM panels; x is rank 3 to check the row flattening.
  // With 12 rows of 3 features, the weight gradient transposes x, not dy,
  // and the bias gradient comes from the GEMM (gemm's col_sums).
  for (const Shape& x_shape : {Shape{2, 3, 7}, Shape{4, 3, 3}}) {
    Graph<double> g;
    random_parameter(g, "x", x_shape, 1);
    random_parameter(g, "w", Shape{19, x_shape[x_shape.rank - 1]}, 2);
    random_parameter(g, "b", Shape{19}, 3);
    require_gradients(g, [](Graph<double>& g) {
      auto& p = g.parameters();
      return weighted_sum(g, linear(g, p[0], p[1], p[2]), 4);
    });
  }
}

TEST_CASE("linear_relu backward matches finite differences", "[autograd]") {
  // x a temporary, its gradient written on first use (Op::writes_fresh);
  // then x read again after the op, so that the op adds into it.
  for (const bool x_again : {false, true}) {
    Graph<double> g;
    random_parameter(g, "x", Shape{2, 3, 7}, 1);
    random_parameter(g, "w", Shape{19, 7}, 2);
    random_parameter(g, "b", Shape{19}, 3);
    require_gradients(g, [x_again](Graph<double>& g) {
      auto& p = g.parameters();
      Tensor<double>* x = scale(g, p[0], 0.5);
      Tensor<double>* loss = weighted_sum(g, linear_relu(g, x, p[1], p[2]), 4);
      return x_again ? add(g, loss, weighted_sum(g, x, 5)) : loss;
    });
  }
}

// The fused op's values and every gradient are the unfused ops' bit for bit
// (the GEMM's epilogue ReLU is relu's select; y > 0 exactly where x w^T + b
// > 0), at the shapes of a training step's FFN and small ones, 1 and 2 threads.
TEST_CASE("linear_relu is relu(linear(...)) bit for bit", "[autograd]") {
  for (const auto [M, K, N] : {std::array{1000, 130, 150}, std::array{256, 128, 256}, std::array{5, 3, 19}}) {
    for (int threads : {1, 2}) {
      for (const bool x_again : {false, true}) {
        INFO(M << " x " << K << " -> " << N << " on " << threads << " threads, x read again " << x_again);
        std::vector<float> y[2];
        std::vector<std::vector<float>> grads[2];
        for (const bool fused : {false, true}) {
          Graph<float> g(threads);
          Tensor<float>* p = random_parameter(g, "x", Shape{M, K}, 1);
          Tensor<float>* w = random_parameter(g, "w", Shape{N, K}, 2);
          Tensor<float>* b = random_parameter(g, "b", Shape{N}, 3);
          Tensor<float>* x = scale(g, p, 1.0);
          Tensor<float>* out = fused ? linear_relu(g, x, w, b) : relu(g, linear(g, x, w, b));
          Tensor<float>* loss = weighted_sum(g, out, 4);
          if (x_again) loss = add(g, loss, weighted_sum(g, x, 5));
          g.backward(loss);
          y[fused] = out->value;
          for (Tensor<float>* t : {p, w, b}) grads[fused].push_back(t->grad);
        }
        CHECK(std::count_if(y[1].begin(), y[1].end(), [](float v) { return v == 0.0f; }) >
              0);  // both sides of the kink
        CHECK(y[1] == y[0]);
        for (size_t i = 0; i < 3; ++i) CHECK(grads[1][i] == grads[0][i]);
      }
    }
  }
}

// The bias gradient is dy's column sums in row order, bit for bit, whether
// a loop over dy's rows takes them or the weight gradient's GEMM while
// packing dy (M > K here), on 1 and 2 threads (two row ranges of panels
// there: the sums must be taken once).
TEST_CASE("the bias gradient is the row-order sum of dy", "[autograd]") {
  for (const auto [M, K, N] : {std::array{1000, 130, 150}, std::array{40, 64, 100}}) {
    for (int threads : {1, 2}) {
      INFO(M << " x " << K << " -> " << N << " on " << threads << " threads");
      Graph<float> g(threads);
      Tensor<float>* x = random_parameter(g, "x", Shape{M, K}, 1);
      Tensor<float>* w = random_parameter(g, "w", Shape{N, K}, 2);
      Tensor<float>* b = random_parameter(g, "b", Shape{N}, 3);
      const std::vector<double> c64 = random_values(size_t(M) * N, 4);
      const std::vector<float> c(c64.begin(), c64.end());
      g.backward(sum(g, mul(g, linear(g, x, w, b), g.input(Shape{M, N}, c))));  // dy = c
      std::vector<float> expected(size_t(N), 0.0f);
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) expected[size_t(n)] += c[size_t(m) * N + n];
      CHECK(b->grad == expected);
    }
  }
}

TEST_CASE("matmul and batched matmul backward match finite differences", "[autograd]") {
  for (bool trans_b : {false, true}) {
    Graph<double> g;
    random_parameter(g, "a", Shape{5, 3}, 1);
    random_parameter(g, "b", trans_b ? Shape{4, 3} : Shape{3, 4}, 2);
    random_parameter(g, "ba", Shape{3, 2, 5}, 3);
    random_parameter(g, "bb", trans_b ? Shape{3, 7, 5} : Shape{3, 5, 7}, 4);
    require_gradients(g, [trans_b](Graph<double>& g) {
      auto& p = g.parameters();
      Tensor<double>* y = matmul(g, p[0], p[1], trans_b);
      Tensor<double>* z = batched_matmul(g, p[2], p[3], trans_b);
      return add(g, weighted_sum(g, y, 5), weighted_sum(g, z, 6));
    });
  }
}

TEST_CASE("elementwise ops backward match finite differences", "[autograd]") {
  Graph<double> g;
  random_parameter(g, "a", Shape{3, 5}, 1);
  random_parameter(g, "b", Shape{3, 5}, 2);
  random_parameter(g, "bias", Shape{5}, 3);
  require_gradients(g, [](Graph<double>& g) {
    auto& p = g.parameters();
    // a used three times: gradients of every use must add up.
    Tensor<double>* y = add(g, mul(g, p[0], p[1]), add_bias(g, p[0], p[2]));
    return add(g, weighted_sum(g, scale(g, y, -0.7), 4), weighted_sum(g, mul(g, p[0], p[0]), 5));
  });
}

TEST_CASE("layer norm backward matches finite differences", "[autograd]") {
  Graph<double> g;
  // 37 columns: two whole groups of the row sums' 16 lanes and a tail.
  random_parameter(g, "x", Shape{4, 37}, 1, -2.0, 3.0);
  random_parameter(g, "gamma", Shape{37}, 2, 0.5, 1.5);
  random_parameter(g, "beta", Shape{37}, 3);
  require_gradients(g, [](Graph<double>& g) {
    auto& p = g.parameters();
    return weighted_sum(g, layer_norm(g, p[0], p[1], p[2], 1e-5), 4);
  });
}

TEST_CASE("softmax relu gelu and swish backward match finite differences", "[autograd]") {
  Graph<double> g;
  random_parameter(g, "x", Shape{3, 11}, 1, -3.0, 3.0);
  require_gradients(g, [](Graph<double>& g) {
    Tensor<double>* x = g.parameters()[0];
    return add(g, add(g, add(g, weighted_sum(g, softmax(g, x), 2), weighted_sum(g, relu(g, x), 3)),
                      weighted_sum(g, gelu(g, x), 4)),
               weighted_sum(g, swish(g, x), 5));
  });
}

// Self-attention over B = 3 sequences padded to L = 5 with different lengths
// (one empty), C = 6 in 2 heads of 3.
void check_self_attention(bool causal) {
  Graph<double> g;
  random_parameter(g, "qkv", Shape{15, 18}, causal ? 11 : 1, -1.5, 1.5);
  require_gradients(g, [causal](Graph<double>& g) {
    static const int lengths[] = {5, 2, 4};
    return weighted_sum(g, self_attention(g, g.parameters()[0], SeqBatch{3, 5, lengths}, 2, causal), 2);
  });
}

TEST_CASE("self attention with a padding mask matches finite differences", "[autograd]") {
  check_self_attention(false);
}

TEST_CASE("causal self attention with a padding mask matches finite differences", "[autograd]") {
  check_self_attention(true);
}

TEST_CASE("cross attention with padding masks matches finite differences", "[autograd]") {
  Graph<double> g;
  // B = 2, Lq = 3 decoder rows, Lk = 4 memory rows, C = 8 in 2 heads of 4.
  random_parameter(g, "q", Shape{6, 8}, 1, -1.5, 1.5);
  random_parameter(g, "kv", Shape{8, 16}, 2, -1.5, 1.5);
  require_gradients(g, [](Graph<double>& g) {
    static const int q_len[] = {3, 2}, k_len[] = {2, 4};
    auto& p = g.parameters();
    return weighted_sum(g, cross_attention(g, p[0], SeqBatch{2, 3, q_len}, p[1], SeqBatch{2, 4, k_len}, 2), 3);
  });
}

TEST_CASE("attention masks hide padding and the future", "[autograd]") {
  Graph<double> g;
  const int B = 2, L = 4, C = 4, H = 2;
  const int lengths[] = {4, 2};
  std::vector<double> qkv = random_values(size_t(B) * L * 3 * C, 1);
  auto run = [&](bool causal) {
    g.clear();
    Tensor<double>* x = g.input(Shape{B * L, 3 * C}, qkv);
    return self_attention(g, x, SeqBatch{B, L, lengths}, H, causal)->value;
  };
  const std::vector<double> full = run(false), causal = run(true);
  // Changing sequence 1's padded rows (t >= 2) and sequence 0's last row...
  for (int c = 0; c < 3 * C; ++c) {
    for (int t = 2; t < L; ++t) qkv[size_t(1 * L + t) * 3 * C + c] += 10.0;
    qkv[size_t(0 * L + 3) * 3 * C + c] += 10.0;
  }
  const std::vector<double> full2 = run(false), causal2 = run(true);
  for (int c = 0; c < C; ++c) {
    // ...leaves sequence 1's valid rows alone (padded keys are masked)...
    for (int t = 0; t < 2; ++t) CHECK(full2[size_t(1 * L + t) * C + c] == full[size_t(1 * L + t) * C + c]);
    // ...and causally, sequence 0's earlier rows too (row 3 is their future).
    for (int t = 0; t < 3; ++t) CHECK(causal2[size_t(t) * C + c] == causal[size_t(t) * C + c]);
    // Padded query rows output zeros.
    for (int t = 2; t < L; ++t) CHECK(full[size_t(1 * L + t) * C + c] == 0.0);
  }
  // The first causal row sees only itself: its output is its own V.
  for (int c = 0; c < C; ++c) CHECK(causal[size_t(c)] == Approx(qkv[size_t(2 * C + c)]).epsilon(1e-12));
}

TEST_CASE("embedding with positions and a tied output matches finite differences", "[autograd]") {
  Graph<double> g;
  const int V = 7, C = 6, L = 3;
  random_parameter(g, "table", Shape{V, C}, 1);
  random_parameter(g, "bias", Shape{V}, 2);
  require_gradients(g, [](Graph<double>& g) {
    static const int ids[] = {3, 1, 3, 0, 6, 3};  // repeats: the scatter must add
    static const int targets[] = {1, 3, 0, 2, 0, 5};
    auto& p = g.parameters();
    Tensor<double>* x = embedding(g, p[0], std::span<const int>(ids), L, std::sqrt(double(C)));
    // The table again as the output projection: its gradient sums both uses.
    Tensor<double>* logits = linear(g, scale(g, x, 0.2), p[0], p[1]);
    return cross_entropy(g, logits, targets, /*pad_id=*/0, 0.1).loss;
  });
}

TEST_CASE("embedding positions equal the runtime table", "[autograd]") {
  const int P = 9, C = 7;  // odd C: the last column has no cos partner
  std::vector<float> ours(size_t(P) * C), runtime(size_t(P) * C);
  sinusoid_positions(P, C, ours.data());
  detail::fill_positions(runtime.data(), P, C);
  CHECK(ours == runtime);

  Graph<float> g;
  Tensor<float>* table = g.parameter("table", Shape{5, C});
  for (size_t i = 0; i < table->value.size(); ++i) table->value[i] = float(i) * 0.01f;
  const int ids[] = {4, 2, 0, 1, 3, 4};
  Tensor<float>* y = embedding(g, table, std::span<const int>(ids), 3, 2.0);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < C; ++c)
      CHECK(y->value[size_t(r) * C + c] ==
            Approx(table->value[size_t(ids[r]) * C + c] * 2.0f + ours[size_t(r % 3) * C + c]).epsilon(1e-6));
}

TEST_CASE("cross entropy with label smoothing and padding matches finite differences", "[autograd]") {
  for (double eps : {0.0, 0.1}) {
    Graph<double> g;
    random_parameter(g, "logits", Shape{5, 9}, 1, -3.0, 3.0);
    require_gradients(g, [eps](Graph<double>& g) {
      static const int targets[] = {4, 2, 2, 8, 2};  // pad_id 2: rows 1, 2, 4 ignored
      return cross_entropy(g, g.parameters()[0], targets, 2, eps).loss;
    });
    // Padded rows get no gradient.
    for (int v = 0; v < 9; ++v) CHECK(g.parameters()[0]->grad[size_t(1 * 9 + v)] == 0.0);
  }
}

// Gradients that ops write on their first use (Op::writes_fresh: a
// linear's or matmul's left operand, the logits of cross_entropy, the inputs
// of add, relu, layer_norm and dropout) instead of adding into zeros. Ops
// run in reverse: h's gradient is written by the linear, then the relu adds;
// y's is written by add(d, y), then layer_norm's input q is written and
// scale adds q's into y, then y's is zeroed for matmul(y, y) (y twice in one
// op), which adds both halves, then the logits' matmul adds. add(rr, rr)
// adds rr's gradient twice; relu writes a's, add writes d's, dropout n's.
template <class T>
void first_use_parameters(Graph<T>& g) {
  random_parameter(g, "x", Shape{6, 5}, 1);
  random_parameter(g, "w", Shape{7, 5}, 2);
  random_parameter(g, "b", Shape{7}, 3);
  random_parameter(g, "v", Shape{9, 7}, 4);
  random_parameter(g, "gamma", Shape{7}, 5, 0.5, 1.5);
  random_parameter(g, "beta", Shape{7}, 6);
}

template <class T>
Tensor<T>* first_use_loss(Graph<T>& g, std::span<const int> targets) {
  auto& p = g.parameters();
  g.set_seed(7);  // the same dropout mask at every call
  Tensor<T>* h = scale(g, p[0], 0.5);
  Tensor<T>* r = relu(g, h);
  Tensor<T>* y = linear(g, h, p[1], p[2]);
  Tensor<T>* logits = matmul(g, y, p[3], true);
  Tensor<T>* yy = matmul(g, y, y, true);
  Tensor<T>* ce = cross_entropy(g, logits, targets, 2, 0.1).loss;
  Tensor<T>* q = scale(g, y, 2.0);
  Tensor<T>* n = layer_norm(g, q, p[4], p[5], 1e-5);
  Tensor<T>* d = dropout(g, n, 0.3);
  Tensor<T>* a = add(g, d, y);
  Tensor<T>* rr = relu(g, a);
  Tensor<T>* s = add(g, rr, rr);
  return add(g, add(g, ce, weighted_sum(g, yy, 5)), add(g, weighted_sum(g, r, 6), weighted_sum(g, s, 7)));
}

TEST_CASE("gradients written on first use match finite differences", "[autograd]") {
  Graph<double> g;
  first_use_parameters(g);
  require_gradients(g, [](Graph<double>& g) {
    static const int targets[] = {4, 2, 2, 8, 2, 0};  // pad_id 2
    return first_use_loss(g, targets);
  });
}

// Written gradients overwrite the previous step's buffers: a second step
// with other inputs (`first`, then `second`) gives a new graph's gradients,
// bit for bit, on 1 and 2 threads.
template <class Parameters, class Loss>
void check_second_step_equals_new_graph(Parameters&& parameters, Loss&& loss, std::span<const int> first,
                                        std::span<const int> second) {
  for (int threads : {1, 2}) {
    Graph<float> reused(threads), fresh(threads);
    parameters(reused);
    parameters(fresh);
    reused.backward(loss(reused, first));
    reused.clear();
    reused.zero_grad();
    reused.backward(loss(reused, second));
    fresh.backward(loss(fresh, second));
    for (size_t i = 0; i < fresh.parameters().size(); ++i) {
      INFO(fresh.parameters()[i]->name << " on " << threads << " threads");
      CHECK(reused.parameters()[i]->grad == fresh.parameters()[i]->grad);
    }
  }
}

// Other padding in the second step: padded rows of the logits' gradient
// must be written too.
TEST_CASE("gradients written on first use do not keep the previous step's values", "[autograd]") {
  const int first[] = {4, 5, 7, 8, 1, 0}, second[] = {4, 2, 2, 8, 2, 0};  // pad_id 2
  check_second_step_equals_new_graph(first_use_parameters<float>, first_use_loss<float>, first, second);
}

// Attention writes its inputs' gradients on their first use too: one tensor
// at both positions (fused qkv) or two (cross attention's q and kv), each
// head's valid rows by its GEMMs, padded rows and empty sequences as zeros.
// The inputs are temporaries (scale), so their gradients are pending.
template <class T>
void attention_first_use_parameters(Graph<T>& g) {
  random_parameter(g, "qkv", Shape{15, 18}, 1, -1.5, 1.5);  // B 3 x L 5, C 6 in 2 heads
  random_parameter(g, "q", Shape{6, 8}, 2, -1.5, 1.5);      // B 2 x Lq 3, C 8 in 2 heads
  random_parameter(g, "kv", Shape{8, 16}, 3, -1.5, 1.5);    // B 2 x Lk 4
}

// lengths: the self-attention's 3, then the queries' 2 and the keys' 2.
template <class T>
Tensor<T>* attention_first_use_loss(Graph<T>& g, std::span<const int> lengths) {
  auto& p = g.parameters();
  Tensor<T>* qkv = scale(g, p[0], 0.5);
  Tensor<T>* q = scale(g, p[1], 0.5);
  Tensor<T>* kv = scale(g, p[2], 0.5);
  Tensor<T>* self = self_attention(g, qkv, SeqBatch{3, 5, lengths.subspan(0, 3)}, 2, true);
  Tensor<T>* cross =
      cross_attention(g, q, SeqBatch{2, 3, lengths.subspan(3, 2)}, kv, SeqBatch{2, 4, lengths.subspan(5, 2)}, 2);
  return add(g, weighted_sum(g, self, 2), weighted_sum(g, cross, 3));
}

TEST_CASE("attention gradients written on first use match finite differences", "[autograd]") {
  Graph<double> g;
  attention_first_use_parameters(g);
  require_gradients(g, [](Graph<double>& g) {
    static const int lengths[] = {5, 0, 3, 3, 2, 2, 4};
    return attention_first_use_loss(g, lengths);
  });
}

TEST_CASE("attention gradients written on first use do not keep the previous step's values", "[autograd]") {
  const int first[] = {5, 2, 4, 3, 2, 2, 4}, second[] = {3, 5, 0, 1, 3, 4, 1};
  check_second_step_equals_new_graph(attention_first_use_parameters<float>, attention_first_use_loss<float>, first,
                                     second);
}

TEST_CASE("cross entropy hand checked value", "[autograd]") {
  Graph<double> g;
  // Row 0: logits (0, ln 2, ln 5) -> p = (1/8, 2/8, 5/8), target 2. Row 1: padding.
  const std::vector<double> z = {0.0, std::log(2.0), std::log(5.0), 1.0, 2.0, 3.0};
  Tensor<double>* logits = g.input(Shape{2, 3}, z);
  const int targets[] = {2, 0};
  const double eps = 0.3;
  CrossEntropy<double> ce = cross_entropy(g, logits, targets, 0, eps);
  const double nll = -std::log(5.0 / 8.0);
  const double smooth = -(std::log(1.0 / 8.0) + std::log(2.0 / 8.0) + std::log(5.0 / 8.0)) / 3.0;
  CHECK(ce.tokens == 1);
  CHECK(ce.nll == Approx(nll).epsilon(1e-14));
  CHECK(ce.loss->value[0] == Approx((1 - eps) * nll + eps * smooth).epsilon(1e-14));
}

TEST_CASE("dropout is deterministic for a seed and call order", "[autograd]") {
  auto masks = [](uint64_t seed) {
    Graph<float> g(2);
    g.set_seed(seed);
    Tensor<float>* x = g.parameter("x", Shape{70, 1000});
    std::fill(x->value.begin(), x->value.end(), 1.0f);
    std::vector<float> a = dropout(g, x, 0.25)->value;  // first call
    std::vector<float> b = dropout(g, x, 0.25)->value;  // second call: another mask
    return std::pair{a, b};
  };
  const auto [a1, b1] = masks(42);
  const auto [a2, b2] = masks(42);
  const auto [a3, b3] = masks(43);
  CHECK(a1 == a2);
  CHECK(b1 == b2);
  CHECK(a1 != b1);
  CHECK(a1 != a3);
  // Kept values are scaled by 1 / (1 - p); about p of them are dropped.
  const double dropped = double(std::count(a1.begin(), a1.end(), 0.0f)) / double(a1.size());
  CHECK(dropped == Approx(0.25).margin(0.01));
  for (float v : a1) CHECK((v == 0.0f || v == 1.0f / 0.75f));

  // The op decides in integers what dropout_uniform defines in doubles.
  for (double p : {1e-12, 0.1, 0.25, 0.3, 1.0 / 3.0, 0.5, 0.9, std::nextafter(1.0, 0.0)})
    for (uint64_t i = 0; i < 20000; ++i) {
      INFO("p " << p << " element " << i);
      REQUIRE(dropout_drops(42, 3, i, p) == (dropout_uniform(42, 3, i) < p));
    }
  // Thresholds exactly at a draw: u < u is false, u < next(u) true.
  for (uint64_t i = 0; i < 64; ++i) {
    const double u = dropout_uniform(9, 1, i);
    CHECK_FALSE(dropout_drops(9, 1, i, u));
    CHECK(dropout_drops(9, 1, i, std::nextafter(u, 1.0)));
  }
  {  // and the op's masks are those
    Graph<float> g(2);
    g.set_seed(42);
    Tensor<float>* x = g.parameter("x", Shape{70, 1000});
    std::fill(x->value.begin(), x->value.end(), 1.0f);
    const std::vector<float> y = dropout(g, x, 0.3)->value;
    for (size_t i = 0; i < y.size(); ++i) REQUIRE((y[i] == 0.0f) == dropout_drops(42, 0, i, 0.3));
  }

  // Identity at inference: the input tensor itself comes back.
  Graph<double> g;
  Tensor<double>* x = random_parameter(g, "x", Shape{4, 4}, 1);
  g.set_training(false);
  CHECK(dropout(g, x, 0.5) == x);
  g.set_training(true);
  // And the mask is the same in every evaluation of a gradient check.
  require_gradients(g,
                    [](Graph<double>& g) { return weighted_sum(g, gelu(g, dropout(g, g.parameters()[0], 0.5)), 2); });
}

// Each ISA's dropout forward against the definition, bit for bit: every
// offset of a range's start and end within a 16-lane vector, every sign and
// special value of x, and probabilities from never to almost always dropping.
TEST_CASE("dropout's forward is the same on every ISA", "[autograd]") {
#if !MT_AUTOGRAD_HAS_AVX512
  MT_SKIP("not an x86-64 build: dropout has one implementation, the definition");
#else
  const KernelTable* avx512 = nullptr;
  for (const KernelTable* t : available_kernels())
    if (std::string_view(t->isa).starts_with("avx512")) avx512 = t;
  if (avx512 == nullptr) {
    MT_SKIP("no AVX-512 kernel table on this CPU or build: dropout has no other implementation to compare");
  }
  // The AVX-512 tables run the AVX-512 forward, the others the definition.
  for (const KernelTable* t : available_kernels()) {
    INFO("ISA " << t->isa);
    CHECK(dropout_mask_f32_for(*t) ==
          (std::string_view(t->isa).starts_with("avx512") ? &dropout_mask_f32_avx512 : &dropout_mask_f32_scalar));
  }
  constexpr int n = 80;
  std::vector<float> x(n);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  x[3] = -0.0f;
  x[17] = std::numeric_limits<float>::infinity();
  x[18] = -std::numeric_limits<float>::infinity();
  x[33] = std::numeric_limits<float>::quiet_NaN();
  x[40] = std::numeric_limits<float>::denorm_min();
  const auto compare = [&](uint64_t key, uint64_t threshold, float keep, int begin, int end) {
    std::vector<float> y0(n, 7.0f), m0(n, 7.0f), y1(n, 7.0f), m1(n, 7.0f);
    dropout_mask_f32_scalar(x.data(), y0.data(), m0.data(), begin, end, key, threshold, keep);
    dropout_mask_f32_avx512(x.data(), y1.data(), m1.data(), begin, end, key, threshold, keep);
    // memcmp: NaN == NaN and -0 != +0 here; outside the range both stay 7.
    REQUIRE(std::memcmp(y0.data(), y1.data(), n * sizeof(float)) == 0);
    REQUIRE(std::memcmp(m0.data(), m1.data(), n * sizeof(float)) == 0);
  };
  // Thresholds at an element's own draw (kept) and one above it (dropped).
  for (int j : {0, 9, 16, 79}) {
    const uint64_t key = 0x0123456789abcdefull, draw = detail::splitmix64(key + uint64_t(j)) >> 11;
    for (uint64_t threshold : {draw, draw + 1}) {
      INFO("threshold at element " << j << "'s draw + " << threshold - draw);
      compare(key, threshold, 2.0f, 0, n);
    }
  }
  for (double p : {1e-12, 0.1, 0.3, 0.5, std::nextafter(1.0, 0.0)}) {
    const uint64_t threshold = uint64_t(std::ceil(p * 0x1.0p53));
    const float keep = float(1.0 / (1.0 - p));
    for (uint64_t key : {uint64_t(0), uint64_t(0x0123456789abcdefull), ~uint64_t(0) - 20})
      for (int begin = 0; begin <= 17; ++begin)
        for (int end = begin; end <= n; end += (end < 40 ? 1 : 7)) {
          INFO("p " << p << " key " << key << " elements [" << begin << ", " << end << ")");
          compare(key, threshold, keep, begin, end);
        }
  }
#endif
}

// One post-norm or pre-norm encoder-decoder block in the runtime's layout,
// small enough for finite differences: embeddings (shared, tied output),
// encoder self-attention over padded sources, decoder causal self-attention
// and cross-attention, GELU feed-forward, label-smoothed loss with padding.
template <class T>
Tensor<T>* tiny_transformer(Graph<T>& g, bool pre_norm) {
  const int B = 2, S = 4, Tt = 3, C = 8, H = 2;
  static const int src[] = {5, 6, 7, 2, 8, 9, 0, 0};  // pad 0: lengths 4 and 2
  static const int src_len[] = {4, 2};
  static const int tgt_in[] = {1, 5, 6, 1, 9, 0};
  static const int tgt_out[] = {5, 6, 2, 9, 2, 0};
  static const int tgt_len[] = {3, 2};
  auto& p = g.parameters();
  int k = 0;
  auto next = [&] { return p[size_t(k++)]; };
  Tensor<T>* table = next();
  auto norm = [&](Tensor<T>* x, Tensor<T>* gamma, Tensor<T>* beta) { return layer_norm(g, x, gamma, beta, 1e-5); };
  // Post-norm: x = LN(x + f(x)); pre-norm: x = x + f(LN(x)).
  auto sublayer = [&](Tensor<T>* x, auto&& f) {
    Tensor<T>* gamma = next();
    Tensor<T>* beta = next();
    if (pre_norm) return add(g, x, f(norm(x, gamma, beta)));
    return norm(add(g, x, f(x)), gamma, beta);
  };
  auto ffn = [&](Tensor<T>* x) {
    Tensor<T>* w0 = next();
    Tensor<T>* b0 = next();
    Tensor<T>* w1 = next();
    Tensor<T>* b1 = next();
    return linear(g, dropout(g, gelu(g, linear(g, x, w0, b0)), 0.1), w1, b1);
  };
  const double emb_scale = std::sqrt(double(C));
  Tensor<T>* mem = embedding(g, table, std::span<const int>(src), S, emb_scale);
  mem = sublayer(mem, [&](Tensor<T>* x) {
    Tensor<T>* wqkv = next();
    Tensor<T>* bqkv = next();
    Tensor<T>* wo = next();
    Tensor<T>* bo = next();
    return linear(g, self_attention(g, linear(g, x, wqkv, bqkv), SeqBatch{B, S, src_len}, H, false), wo, bo);
  });
  mem = sublayer(mem, ffn);
  Tensor<T>* y = embedding(g, table, std::span<const int>(tgt_in), Tt, emb_scale);
  y = sublayer(y, [&](Tensor<T>* x) {
    Tensor<T>* wqkv = next();
    Tensor<T>* bqkv = next();
    Tensor<T>* wo = next();
    Tensor<T>* bo = next();
    return linear(g, self_attention(g, linear(g, x, wqkv, bqkv), SeqBatch{B, Tt, tgt_len}, H, true), wo, bo);
  });
  y = sublayer(y, [&](Tensor<T>* x) {
    Tensor<T>* wq = next();
    Tensor<T>* bq = next();
    Tensor<T>* wkv = next();
    Tensor<T>* bkv = next();
    Tensor<T>* wo = next();
    Tensor<T>* bo = next();
    Tensor<T>* a = cross_attention(g, linear(g, x, wq, bq), SeqBatch{B, Tt, tgt_len}, linear(g, mem, wkv, bkv),
                                   SeqBatch{B, S, src_len}, H);
    return linear(g, a, wo, bo);
  });
  y = sublayer(y, ffn);
  Tensor<T>* logits = linear(g, y, table, next());
  return cross_entropy(g, logits, std::span<const int>(tgt_out), 0, 0.1).loss;
}

template <class T>
void tiny_transformer_parameters(Graph<T>& g) {
  const int V = 11, C = 8, F = 12;
  uint64_t seed = 100;
  auto param = [&](const std::string& name, Shape s, double lo = -0.5, double hi = 0.5) {
    random_parameter(g, name, s, seed++, lo, hi);
  };
  auto norm = [&](const std::string& n) {
    param(n + "/gamma", Shape{C}, 0.8, 1.2);
    param(n + "/beta", Shape{C}, -0.1, 0.1);
  };
  auto ffn = [&](const std::string& n) {
    norm(n + "/norm");
    param(n + "/linear_0/weight", Shape{F, C});
    param(n + "/linear_0/bias", Shape{F});
    param(n + "/linear_1/weight", Shape{C, F});
    param(n + "/linear_1/bias", Shape{C});
  };
  auto self = [&](const std::string& n) {
    norm(n + "/norm");
    param(n + "/qkv/weight", Shape{3 * C, C});
    param(n + "/qkv/bias", Shape{3 * C});
    param(n + "/out/weight", Shape{C, C});
    param(n + "/out/bias", Shape{C});
  };
  param("target_embedding", Shape{V, C}, -0.3, 0.3);
  self("encoder/layer_0/self_attention");
  ffn("encoder/layer_0/ffn");
  self("decoder/layer_0/self_attention");
  const std::string x = "decoder/layer_0/cross_attention";
  norm(x + "/norm");
  param(x + "/q/weight", Shape{C, C});
  param(x + "/q/bias", Shape{C});
  param(x + "/kv/weight", Shape{2 * C, C});
  param(x + "/kv/bias", Shape{2 * C});
  param(x + "/out/weight", Shape{C, C});
  param(x + "/out/bias", Shape{C});
  ffn("decoder/layer_0/ffn");
  param("output/bias", Shape{V});
}

TEST_CASE("a tiny transformer passes the gradient check", "[autograd]") {
  for (bool pre_norm : {false, true}) {
    Graph<double> g;
    g.set_seed(7);
    tiny_transformer_parameters(g);
    // Every value of every parameter (~1,600).
    require_gradients(g, [pre_norm](Graph<double>& g) { return tiny_transformer(g, pre_norm); });
  }
}

// Runs build in float (two threads) and double from the same parameters and
// compares every output and every parameter gradient.
template <class Init, class Build>
void compare_float_with_double(Init&& init, Build&& build) {
  Graph<double> gd;
  Graph<float> gf(2);
  init(gd);
  init(gf);
  const std::vector<Tensor<double>*> yd = build(gd);
  const std::vector<Tensor<float>*> yf = build(gf);
  Tensor<double>* ld = nullptr;
  Tensor<float>* lf = nullptr;
  for (size_t i = 0; i < yd.size(); ++i) {
    INFO("output " << i);
    CHECK(relative_error(yf[i]->value, yd[i]->value) < kFloatForwardTolerance);
    Tensor<double>* wd = weighted_sum(gd, yd[i], 99 + i);
    Tensor<float>* wf = weighted_sum(gf, yf[i], 99 + i);
    ld = ld ? add(gd, ld, wd) : wd;
    lf = lf ? add(gf, lf, wf) : wf;
  }
  gd.backward(ld);
  gf.backward(lf);
  for (size_t i = 0; i < gd.parameters().size(); ++i) {
    INFO("gradient of " << gd.parameters()[i]->name);
    CHECK(relative_error(gf.parameters()[i]->grad, gd.parameters()[i]->grad) < kFloatBackwardTolerance);
  }
}

TEST_CASE("float linear and matmul match double", "[autograd]") {
  // K = 67 and N = 37: partial panels and a tail; M = 45 rows.
  compare_float_with_double(
      [](auto& g) {
        random_parameter(g, "x", Shape{45, 67}, 1);
        random_parameter(g, "w", Shape{37, 67}, 2);
        random_parameter(g, "b", Shape{37}, 3);
        random_parameter(g, "m", Shape{67, 21}, 4);
        random_parameter(g, "ba", Shape{5, 9, 13}, 5);
        random_parameter(g, "bb", Shape{5, 13, 17}, 6);
        random_parameter(g, "bc", Shape{5, 9, 17}, 7);
      },
      [](auto& g) {
        auto& p = g.parameters();
        auto y = linear(g, p[0], p[1], p[2]);
        return std::vector{y,                                                              // [45, 37]
                           matmul(g, p[0], p[3]),                                          // [45, 21]
                           matmul(g, y, y, true),                                          // [45, 45]
                           batched_matmul(g, batched_matmul(g, p[4], p[5]), p[6], true)};  // [5, 9, 9]
      });
}

// Sizes of the float attention test (constants, so the lambdas need no capture).
constexpr int kB = 3, kL = 11, kC = 32, kH = 4;

TEST_CASE("float layer norm and attention match double", "[autograd]") {
  compare_float_with_double(
      [](auto& g) {
        random_parameter(g, "x", Shape{kB * kL, 3 * kC}, 1, -2.0, 2.0);
        random_parameter(g, "gamma", Shape{3 * kC}, 2, 0.5, 1.5);
        random_parameter(g, "beta", Shape{3 * kC}, 3);
        random_parameter(g, "mem", Shape{kB * 7, 2 * kC}, 4, -2.0, 2.0);
      },
      [](auto& g) {
        static const int lengths[] = {11, 6, 1}, mem_len[] = {7, 3, 5};
        auto& p = g.parameters();
        auto qkv = layer_norm(g, p[0], p[1], p[2], 1e-5);
        auto a = self_attention(g, qkv, SeqBatch{kB, kL, lengths}, kH, false);
        auto c = self_attention(g, qkv, SeqBatch{kB, kL, lengths}, kH, true);
        auto x = cross_attention(g, add(g, a, c), SeqBatch{kB, kL, lengths}, p[3], SeqBatch{kB, 7, mem_len}, kH);
        return std::vector{qkv, a, c, x, softmax(g, x)};
      });
}

// The float loss takes p = exp(z - lse) from the forward's saved lse in one
// SIMD pass (scaled_exp_f32); double computes it with std::exp. Rows of 1003
// (vector tails), padding, label smoothing, a gradient written on first use
// (a) and one added to another op's (b: scale(b, 0.5), recorded after the
// loss, runs its backward first). a and b are scale(p, 1) of the parameters
// because a parameter's gradient is never written on first use.
TEST_CASE("float cross entropy matches double", "[autograd]") {
  compare_float_with_double(
      [](auto& g) {
        random_parameter(g, "za", Shape{37, 1003}, 1, -6.0, 6.0);
        random_parameter(g, "zb", Shape{37, 1003}, 2, -6.0, 6.0);
      },
      [](auto& g) {
        static const std::vector<int> targets = [] {
          std::vector<int> t(37);
          for (int r = 0; r < 37; ++r) t[size_t(r)] = r % 5 == 3 ? 0 : (r * 389 + 7) % 1003;  // pad_id 0
          return t;
        }();
        auto& p = g.parameters();
        auto a = scale(g, p[0], 1.0);
        auto b = scale(g, p[1], 1.0);
        auto la = cross_entropy(g, a, targets, 0, 0.1).loss;
        auto lb = cross_entropy(g, b, targets, 0, 0.2).loss;
        return std::vector{la, lb, scale(g, b, 0.5)};
      });
}

TEST_CASE("float self attention matches the runtime kernel", "[autograd]") {
  const int B = 2, L = 9, C = 48, H = 3, dh = C / H;
  const int lengths[] = {9, 5};
  const std::vector<double> v = random_values(size_t(B) * L * 3 * C, 1, -2.0, 2.0);
  const std::vector<float> qkv(v.begin(), v.end());
  Graph<float> g(2);
  for (bool causal : {false, true}) {
    g.clear();
    Tensor<float>* ours = self_attention(g, g.input(Shape{B * L, 3 * C}, qkv), SeqBatch{B, L, lengths}, H, causal);
    std::vector<float> ref(ours->value.size(), 0.0f), scratch(L);
    const KernelTable& k = best_kernels();
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        const float* q = qkv.data() + size_t(b) * L * 3 * C + size_t(h) * dh;
        k.attention_f32(q, 3 * C, q + C, q + 2 * C, 3 * C, ref.data() + size_t(b) * L * C + size_t(h) * dh, C,
                        lengths[b], lengths[b], dh, 1.0f / std::sqrt(float(dh)), causal ? 0 : -1, scratch.data());
      }
    INFO("causal " << causal << " kernels " << k.isa);
    CHECK(relative_error(ours->value, ref) < kFloatForwardTolerance);
  }
}

// The transposes (4 x 4 vector blocks, scalar edges) against plain loops,
// exactly, on odd sizes, row ranges and strides; and the GEMM's packing of
// an [N, K] operand against its [K, N] one: the same products, so the same
// bits.
TEMPLATE_TEST_CASE("transposes and the packing of an [N, K] operand are exact", "[autograd]", float, double) {
  using T = TestType;
  for (int R : {1, 3, 4, 7, 33, 70})
    for (int Cn : {1, 4, 5, 31, 38}) {
      const size_t ld = size_t(Cn) + 3;
      const std::vector<double> v = random_values(size_t(R) * ld, uint64_t(R * 100 + Cn));
      const std::vector<T> src(v.begin(), v.end());
      const std::vector<double> w = random_values(size_t(R) * Cn, 7);
      const std::vector<T> base(w.begin(), w.end());
      std::vector<T> got = base, want = base, got_add = base, want_add = base;
      const int r0 = R / 3, r1 = R - R / 4;  // a row range, as the pool's tasks take them
      transpose(src.data(), R, Cn, ld, got.data(), r0, r1);
      // add_transposed reads a dense [R, Cn] source.
      std::vector<T> dense(size_t(R) * Cn);
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < Cn; ++c) dense[size_t(r) * Cn + c] = src[size_t(r) * ld + c];
      add_transposed(dense.data(), R, Cn, got_add.data(), r0, r1);
      for (int r = r0; r < r1; ++r)
        for (int c = 0; c < Cn; ++c) {
          want[size_t(c) * R + r] = src[size_t(r) * ld + c];
          want_add[size_t(c) * R + r] += src[size_t(r) * ld + c];
        }
      INFO("R " << R << " Cn " << Cn);
      CHECK(got == want);
      CHECK(got_add == want_add);
    }
  if constexpr (std::is_same_v<T, float>) {
    Graph<float> g(2);
    for (int N : {1, 5, 16, 19, 37})
      for (int K : {1, 6, 33}) {
        const int M = 9;
        const std::vector<double> a = random_values(size_t(M) * K, 1), b = random_values(size_t(N) * K, 2);
        const std::vector<float> A(a.begin(), a.end()), B_nk(b.begin(), b.end());
        std::vector<float> B_kn(size_t(K) * N);
        for (int n = 0; n < N; ++n)
          for (int k = 0; k < K; ++k) B_kn[size_t(k) * N + n] = B_nk[size_t(n) * K + k];
        std::vector<float> c_nk(size_t(M) * N), c_kn(size_t(M) * N);
        gemm(g, M, N, K, A.data(), size_t(K), B_nk.data(), size_t(K), BLayout::nk, static_cast<const float*>(nullptr),
             c_nk.data(), size_t(N), false);
        gemm(g, M, N, K, A.data(), size_t(K), B_kn.data(), size_t(N), BLayout::kn, static_cast<const float*>(nullptr),
             c_kn.data(), size_t(N), false);
        INFO("N " << N << " K " << K);
        CHECK(c_nk == c_kn);
      }
  }
}

TEST_CASE("float results do not depend on the thread count", "[autograd]") {
  auto run = [](int threads) {
    Graph<float> g(threads);
    g.set_seed(5);
    tiny_transformer_parameters(g);
    Tensor<float>* loss = tiny_transformer(g, false);
    g.backward(loss);
    std::vector<float> all = loss->value;
    for (Tensor<float>* p : g.parameters()) all.insert(all.end(), p->grad.begin(), p->grad.end());
    return all;
  };
  CHECK(run(1) == run(2));
  CHECK(run(1) == run(3));
}

// M = 200 rows: at two and three threads gemm splits each group of panels
// into row ranges, each task packing its panels of B and the first range's
// taking the column sums; at one thread a single task packs and multiplies.
// The outputs and the column sums must be the same bits.
TEST_CASE("gemm and its column sums do not depend on the thread count", "[autograd]") {
  const int M = 200;
  for (int N : {37, 128, 200})
    for (int K : {5, 300})
      for (BLayout layout : {BLayout::nk, BLayout::kn})
        for (int mode = 0; mode < 3; ++mode) {  // bias, bias + accumulate, relu
          const std::vector<double> a = random_values(size_t(M) * K, 11), b = random_values(size_t(N) * K, 12);
          const std::vector<double> c0 = random_values(size_t(M) * N, 13), bs = random_values(size_t(N), 14);
          const std::vector<float> A(a.begin(), a.end()), B(b.begin(), b.end()), bias(bs.begin(), bs.end());
          const bool accumulate = mode == 1, kn = layout == BLayout::kn;
          const Activation act = mode == 2 ? Activation::relu : Activation::none;
          auto run = [&](int threads) {
            Graph<float> g(threads);
            std::vector<float> c(c0.begin(), c0.end()), sums(size_t(N), 0.5f);
            gemm(g, M, N, K, A.data(), size_t(K), B.data(), size_t(kn ? N : K), layout, bias.data(), c.data(),
                 size_t(N), accumulate, kn ? sums.data() : nullptr, act);
            c.insert(c.end(), sums.begin(), sums.end());
            return c;
          };
          INFO("N " << N << " K " << K << (kn ? " kn" : " nk") << " mode " << mode);
          const std::vector<float> one = run(1);
          CHECK(one == run(2));
          CHECK(one == run(3));
          if (mode == 2) CHECK(std::count(one.begin(), one.begin() + size_t(M) * N, 0.0f) > 0);
        }
}

TEST_CASE("clear keeps parameters and reuses the step buffers", "[autograd]") {
  Graph<float> g(2);
  g.set_seed(1);
  tiny_transformer_parameters(g);
  const std::vector<Tensor<float>*> params = g.parameters();
  g.backward(tiny_transformer(g, true));
  const size_t ops = g.op_count(), tensors = g.tensor_count();
  const std::vector<float> grad = params[0]->grad;
  // Same seed state, second step without zero_grad: gradients accumulate.
  g.clear();
  CHECK(g.op_count() == 0);
  g.set_seed(1);
  g.backward(tiny_transformer(g, true));
  CHECK(g.parameters() == params);
  CHECK(g.op_count() == ops);
  CHECK(g.tensor_count() == tensors);
  // (The second step's terms add onto the first's sum: equal up to rounding.)
  for (size_t i = 0; i < grad.size(); ++i) CHECK(params[0]->grad[i] == Approx(2.0f * grad[i]).epsilon(1e-5));
  g.zero_grad();
  CHECK(std::all_of(params[0]->grad.begin(), params[0]->grad.end(), [](float v) { return v == 0.0f; }));
}

TEST_CASE("shape errors throw naming the op", "[autograd]") {
  Graph<double> g;
  Tensor<double>* x = g.parameter("x", Shape{3, 4});
  Tensor<double>* w = g.parameter("w", Shape{5, 3});
  CHECK_THROWS_WITH(linear(g, x, w), Catch::Contains("linear"));
  CHECK_THROWS_WITH(add(g, x, w), Catch::Contains("add"));
  const int bad_len[] = {6};
  CHECK_THROWS_WITH(self_attention(g, g.parameter("qkv", Shape{5, 12}), SeqBatch{1, 5, bad_len}, 2, false),
                    Catch::Contains("self_attention"));
  const int targets[] = {0, 1, 9};
  CHECK_THROWS_WITH(cross_entropy(g, x, targets, 0, 0.1), Catch::Contains("cross_entropy"));
  CHECK_THROWS_WITH(g.backward(x), Catch::Contains("backward"));
}

}  // namespace
}  // namespace mt::autograd
