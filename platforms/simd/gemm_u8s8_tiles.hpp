// How the intrinsics int8 GEMMs (AVX2, aarch64, WebAssembly) walk C: M = 1
// (decoding) takes several panels per tile so more weight loads are in
// flight; larger M sweeps N in blocks that stay in L2, each block by every
// row tile. A Kernel supplies
// kMaxMR, kMaxNP, kGemvNP and template <int MR, int NP> tile(g, m0, p0).
#pragma once

#include "simd/gemm_u8s8_args.hpp"

namespace mt::simd {

inline constexpr size_t kInt8L2BlockBytes = 512 * 1024;

// Picks the tile instantiation for a run-time (mr, np) with mr <= MR, np <= NP.
template <class Kernel, int MR, int NP>
void run_tile(const GemmU8S8Args& g, int m0, int p0, int mr, int np) {
  if constexpr (MR > 1) {
    if (mr < MR) return run_tile<Kernel, MR - 1, NP>(g, m0, p0, mr, np);
  }
  if constexpr (NP > 1) {
    if (np < NP) return run_tile<Kernel, MR, NP - 1>(g, m0, p0, mr, np);
  }
  Kernel::template tile<MR, NP>(g, m0, p0);
}

template <class Kernel>
void run_gemm_u8s8(const GemmU8S8Args& g, int M, int n_begin, int n_end) {
  if (M <= 0 || n_begin >= n_end) return;
  const int p_begin = n_begin / kPanelWidth;
  const int p_end = (n_end + kPanelWidth - 1) / kPanelWidth;
  if (M == 1) {
    for (int p = p_begin; p < p_end; p += Kernel::kGemvNP) {
      const int np = p_end - p < Kernel::kGemvNP ? p_end - p : Kernel::kGemvNP;
      run_tile<Kernel, 1, Kernel::kGemvNP>(g, 0, p, 1, np);
    }
    return;
  }
  const size_t panel_bytes = size_t(g.Kp) * kPanelWidth;
  int block = int(kInt8L2BlockBytes / (panel_bytes ? panel_bytes : 1));
  block = block < Kernel::kMaxNP ? Kernel::kMaxNP : block / Kernel::kMaxNP * Kernel::kMaxNP;
  for (int pb = p_begin; pb < p_end; pb += block) {
    const int pe = p_end - pb < block ? p_end : pb + block;
    for (int m = 0; m < M; m += Kernel::kMaxMR) {
      const int mr = M - m < Kernel::kMaxMR ? M - m : Kernel::kMaxMR;
      for (int p = pb; p < pe; p += Kernel::kMaxNP) {
        const int np = pe - p < Kernel::kMaxNP ? pe - p : Kernel::kMaxNP;
        run_tile<Kernel, Kernel::kMaxMR, Kernel::kMaxNP>(g, m, p, mr, np);
      }
    }
  }
}

}  // namespace mt::simd
