// Run-time choice of the KernelTable: which ISA tables this CPU runs, and the
// best one (or the one MT_ISA asks for). Decided once, on first use.
#include <cstdlib>
#include <cstring>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "mt/kernels.h"
#ifdef MT_HAVE_X86_KERNELS
#include "x86/kernels_x86.h"
#endif
#ifdef MT_HAVE_WASM_KERNELS
#include "wasm/kernels_wasm.h"
#endif
#ifdef MT_HAVE_ARM_KERNELS
#include "arm/kernels_arm.h"
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#endif

namespace mt {

namespace {

struct Registry {
  std::vector<const KernelTable*> available;  // ascending: ref first, best last
  std::vector<const char*> unavailable;
  const KernelTable* best = nullptr;
};

#ifdef MT_HAVE_X86_KERNELS
// xsimd 8.1 reads the CPUID feature bits only: it neither asks the OS
// (XGETBV) whether the AVX / AVX-512 register state is enabled nor knows
// AVX-512VL. GCC's and Clang's __builtin_cpu_supports check both.
bool cpu_runs_avx2() {
  const auto arch = xsimd::available_architectures();
  return arch.fma3_avx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool cpu_runs_avx512() {
  const auto arch = xsimd::available_architectures();
  // xsimd's avx512bw bit already requires F, CD and DQ.
  return arch.avx512bw && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512cd") && cpu_runs_avx2();
}

bool cpu_runs_avx512vnni() { return cpu_runs_avx512() && __builtin_cpu_supports("avx512vnni"); }
#endif

#ifdef MT_HAVE_ARM_KERNELS
// FEAT_DotProd (udot/sdot), as the kernel reports it to user space.
bool cpu_runs_dotprod() {
#if defined(__linux__)
  constexpr unsigned long kHwcapAsimdDp = 1ul << 20;  // HWCAP_ASIMDDP in <asm/hwcap.h>
  return (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
#elif defined(__ARM_FEATURE_DOTPROD)
  return true;  // the whole build targets it
#else
  return false;
#endif
}
#endif

Registry make_registry() {
  Registry r;
  r.available.push_back(&reference_kernels());
#ifdef MT_HAVE_X86_KERNELS
  // Tables are only touched once their ISA is known to run here.
  if (cpu_runs_avx2())
    r.available.push_back(&avx2_kernels());
  else
    r.unavailable.push_back("avx2");
  if (cpu_runs_avx512())
    r.available.push_back(&avx512_kernels());
  else
    r.unavailable.push_back("avx512");
  if (cpu_runs_avx512vnni())
    r.available.push_back(&avx512vnni_kernels());
  else
    r.unavailable.push_back("avx512vnni");
#endif
#ifdef MT_HAVE_ARM_KERNELS
  r.available.push_back(&neon_kernels());  // Advanced SIMD is part of every aarch64 CPU
  if (cpu_runs_dotprod())
    r.available.push_back(&neon_dotprod_kernels());
  else
    r.unavailable.push_back("neon_dotprod");
#endif
#ifdef MT_HAVE_WASM_KERNELS
  r.available.push_back(&wasm_simd128_kernels());  // the build targets SIMD128: no choice at run time
#endif
  r.best = r.available.back();
  // MT_ISA picks another table this CPU runs; anything else keeps the best.
  if (const char* want = std::getenv("MT_ISA")) {
    for (const KernelTable* t : r.available)
      if (std::strcmp(t->isa, want) == 0) r.best = t;
  }
  return r;
}

const Registry& registry() {
  static const Registry r = make_registry();  // thread-safe initialisation
  return r;
}

}  // namespace

const KernelTable& best_kernels() { return *registry().best; }

std::span<const KernelTable* const> available_kernels() { return registry().available; }

std::span<const char* const> unavailable_kernels() { return registry().unavailable; }

}  // namespace mt
