// The fp32 GEMM kernel (platforms/simd/gemm.hpp, AVX-512 or AVX2) of the
// working tree against another commit's, call by call in one process on the
// same data, so that both meet the machine's same moments: on the 2-vCPU
// cloud machines one binary's rate moves by +-20% from second to second,
// which swallows any change of a few percent when builds run one after the
// other. bench/gemm_ab.sh builds it with the other commit's header in
// namespace mt::simd_base; it checks both write the same C, bit for bit.
//   gemm_ab M N K [SECONDS]   -> GFLOP/s of each, and new/base time
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemm_base.hpp"
#include "simd/gemm.hpp"

namespace {

#if defined(__AVX512F__)
using Arch = xsimd::avx512bw;
#else
using Arch = xsimd::avx2;
#endif

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: gemm_ab M N K [SECONDS]\n");
    return 2;
  }
  const int M = std::atoi(argv[1]), N = std::atoi(argv[2]), K = std::atoi(argv[3]);
  const double seconds = argc > 4 ? std::atof(argv[4]) : 1.0;
  if (M < 1 || N < 1 || K < 1 || !(seconds > 0)) {
    std::fprintf(stderr, "gemm_ab: M, N, K and SECONDS must be positive\n");
    return 2;
  }
  // A and C rotate through four copies, as a training step's activations do
  // not all stay in cache; each side writes its own C.
  constexpr int kCopies = 4;
  const size_t a_size = size_t(M) * K, c_size = size_t(M) * N;
  std::vector<float> A(kCopies * a_size), C_base(kCopies * c_size), C_new(kCopies * c_size);
  std::vector<float> Wp(mt::packed_size(N, K));
  uint32_t x = 12345;
  auto next = [&] { return float((x = x * 1664525u + 1013904223u) >> 9) * 0x1p-23f - 0.5f; };
  for (float& v : A) v = next();
  for (float& v : Wp) v = next();

  std::vector<double> t_base, t_new;
  const double end = now() + seconds;
  for (int call = 0; now() < end || call < 4 * kCopies; ++call) {
    const int copy = (call / 2) % kCopies;
    const float* a = A.data() + copy * a_size;
    const bool base = call % 2 == 0;
    float* c = (base ? C_base.data() : C_new.data()) + copy * c_size;
    const double t0 = now();
    if (base)
      mt::simd_base::gemm_f32<Arch>(a, K, Wp.data(), nullptr, nullptr, 0, c, N, M, N, K, 0, N, mt::Activation::none);
    else
      mt::simd::gemm_f32<Arch>(a, K, Wp.data(), nullptr, nullptr, 0, c, N, M, N, K, 0, N, mt::Activation::none);
    (base ? t_base : t_new).push_back(now() - t0);
  }
  if (std::memcmp(C_base.data(), C_new.data(), C_base.size() * sizeof(float)) != 0) {
    std::printf("M=%d N=%d K=%d: the two kernels write different C\n", M, N, K);
    return 1;
  }
  const size_t pairs = std::min(t_base.size(), t_new.size());
  std::vector<double> ratio(pairs);
  double sum_base = 0, sum_new = 0;
  for (size_t i = 0; i < pairs; ++i) {
    ratio[i] = t_new[i] / t_base[i];
    sum_base += t_base[i];
    sum_new += t_new[i];
  }
  std::sort(ratio.begin(), ratio.end());
  const double gflop = 2.0 * M * N * K * 1e-9;
  std::printf("M=%d N=%d K=%d: base %.1f, new %.1f GFLOP/s; new/base time %.3f (sum), %.3f (median of %zu pairs)\n", M,
              N, K, gflop * pairs / sum_base, gflop * pairs / sum_new, sum_new / sum_base, ratio[pairs / 2], pairs);
}
