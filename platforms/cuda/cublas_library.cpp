#include "cublas_library.hpp"

#include <dlfcn.h>

#define MT_CUBLAS_STRINGIFY(x) #x
#define MT_CUBLAS_SONAME(major) "libcublas.so." MT_CUBLAS_STRINGIFY(major)

namespace mt::cuda_detail {
namespace {

template <class F>
bool resolve(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

const CublasLibrary* load() {
  static CublasLibrary l;
  // The soname of the cuBLAS the headers came from: another major version may differ in ABI.
  void* library = dlopen(MT_CUBLAS_SONAME(CUBLAS_VER_MAJOR), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return nullptr;
  const bool ok = resolve(library, "cublasCreate_v2", &l.create) && resolve(library, "cublasDestroy_v2", &l.destroy) &&
                  resolve(library, "cublasSetStream_v2", &l.set_stream) &&
                  resolve(library, "cublasSetWorkspace_v2", &l.set_workspace) &&
                  resolve(library, "cublasGetStatusString", &l.status_string) &&
                  resolve(library, "cublasGemmEx", &l.gemm_ex);
  return ok ? &l : nullptr;  // never closed: handles may live until exit
}

}  // namespace

const CublasLibrary* cublas_library() {
  static const CublasLibrary* library = load();
  return library;
}

}  // namespace mt::cuda_detail
