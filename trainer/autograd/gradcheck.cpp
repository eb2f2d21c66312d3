// Central finite differences against the tape's gradients.
#include "autograd/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mt::autograd {

GradCheckResult grad_check(Graph<double>& g, const std::function<Tensor<double>*(Graph<double>&)>& build, double step,
                           double floor, int64_t max_per_param) {
  const RngState rng = g.rng_state();
  auto evaluate = [&] {
    g.clear();
    g.set_rng_state(rng);
    Tensor<double>* loss = build(g);
    MT_AG_CHECK(loss->numel() == 1, "grad_check: the loss must have one element");
    return loss->value[0];
  };
  g.clear();
  g.zero_grad();
  g.set_rng_state(rng);
  g.backward(build(g));

  GradCheckResult result;
  for (Tensor<double>* p : g.parameters()) {
    const int64_t n = p->numel();
    const int64_t count = max_per_param > 0 ? std::min(n, max_per_param) : n;
    for (int64_t c = 0; c < count; ++c) {
      const int64_t i = count == n ? c : c * n / count;
      const double x = p->value[i];
      p->value[i] = x + step;
      const double up = evaluate();
      p->value[i] = x - step;
      const double down = evaluate();
      p->value[i] = x;
      const double numeric = (up - down) / (2 * step);
      const double analytic = p->grad[i];
      const double err = std::abs(analytic - numeric) / std::max({std::abs(analytic), std::abs(numeric), floor});
      ++result.entries;
      if (err >= result.max_rel_error) {
        result.max_rel_error = err;
        std::ostringstream s;
        s.precision(10);
        s << p->name << "[" << i << "] analytic " << analytic << " numeric " << numeric;
        result.worst = s.str();
      }
    }
  }
  g.clear();
  g.set_rng_state(rng);
  return result;
}

}  // namespace mt::autograd
