// A weight gradient's product, g[N, K] = dy^T a over M tokens, two ways in
// turn, pair by pair: "old" transposes dy (autograd's blocked transpose)
// and runs gemm_f32 on the copy; "new" runs gemm_f32_strided reading dy
// transposed where it lies (in_place_operands.patch). a is packed for both.
// With FLUSH = 1 a 64 MB walk precedes each call, so dy comes from memory.
// Prints the mean times, the median new/old ratio and whether the bits agree.
//   weight_gradient_ab M N K PAIRS FLUSH
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "autograd/gemm.hpp"
#include "mt/kernels.h"

int main(int argc, char** argv) {
  if (argc < 6) return 2;
  using namespace mt;
  const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]), pairs = std::atoi(argv[4]);
  const bool flush = std::atoi(argv[5]) != 0;
  const KernelTable& t = best_kernels();
  std::vector<float> dy(size_t(M) * N), a(size_t(M) * K), dyt(size_t(M) * N), at(size_t(K) * M);
  std::vector<float> packed(packed_size(K, M)), c_old(size_t(N) * K), c_new(c_old.size());
  for (float& x : dy) x = float(std::rand()) / RAND_MAX - 0.5f;
  for (float& x : a) x = float(std::rand()) / RAND_MAX - 0.5f;
  autograd::transpose<float>(a.data(), M, K, size_t(K), at.data(), 0, M);  // a as the [K, M] "weight"
  pack_weights_f32(at.data(), K, M, packed.data());
  std::vector<char> junk(size_t(64) << 20);
  std::vector<double> ratios;
  double sum_old = 0, sum_new = 0;
  for (int i = 0; i < pairs; ++i) {
    double s[2];
    for (int j = 0; j < 2; ++j) {
      const int is_new = (i + j) % 2;
      if (flush)
        for (size_t q = 0; q < junk.size(); q += 64) ++junk[q];
      const auto t0 = std::chrono::steady_clock::now();
      if (is_new) {
        t.gemm_f32_strided(dy.data(), size_t(N), true, packed.data(), 0, nullptr, nullptr, 0, c_new.data(), size_t(K),
                           N, K, M, 0, K, Activation::none);
      } else {
        autograd::transpose<float>(dy.data(), M, N, size_t(N), dyt.data(), 0, M);
        t.gemm_f32(dyt.data(), size_t(M), packed.data(), nullptr, nullptr, 0, c_old.data(), size_t(K), N, K, M, 0, K,
                   Activation::none);
      }
      s[is_new] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ratios.push_back(s[1] / s[0]);
    sum_old += s[0], sum_new += s[1];
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "M=%d N=%d K=%d flush=%d: old %.3f ms, new %.3f ms (means), new/old %.3f (median of %d pairs), same bits %s\n", M,
      N, K, int(flush), sum_old / pairs * 1e3, sum_new / pairs * 1e3, ratios[ratios.size() / 2], pairs,
      c_old == c_new ? "yes" : "NO");
}
