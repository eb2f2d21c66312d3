#include "cuda/nccl_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#define MT_NCCL_STRINGIFY(x) #x
#define MT_NCCL_SONAME(major) "libnccl.so." MT_NCCL_STRINGIFY(major)

namespace mt::autograd::gpu {

namespace {

template <class F>
bool resolve(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

constexpr const char* kInstall =
    "install NCCL 2 for this CUDA (NVIDIA's libnccl2 package, or `pip install nvidia-nccl-cu13` with its "
    "nvidia/nccl/lib on LD_LIBRARY_PATH), or name the library file in MT_NCCL_LIBRARY";

}  // namespace

const NcclLibrary* open_nccl_library(const std::string& path, std::string* why) {
  // Never closed: communicators may live until exit.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    *why = "NCCL: " + (error ? std::string(error) : "cannot open " + path) + ": " + kInstall;
    return nullptr;
  }
  auto l = std::make_unique<NcclLibrary>();
  const bool ok = resolve(handle, "ncclGetVersion", &l->get_version) &&
                  resolve(handle, "ncclGetUniqueId", &l->get_unique_id) &&
                  resolve(handle, "ncclCommInitRank", &l->comm_init_rank) &&
                  resolve(handle, "ncclCommDestroy", &l->comm_destroy) &&
                  resolve(handle, "ncclCommAbort", &l->comm_abort) &&
                  resolve(handle, "ncclAllReduce", &l->all_reduce) &&
                  resolve(handle, "ncclGroupStart", &l->group_start) &&
                  resolve(handle, "ncclGroupEnd", &l->group_end) &&
                  resolve(handle, "ncclGetErrorString", &l->error_string);
  if (!ok) {
    *why = "NCCL: " + path + " lacks an entry point libmt calls (not NCCL 2, or damaged): " + kInstall;
    return nullptr;
  }
  l->path = path;
  if (l->get_version(&l->version) != ncclSuccess || l->version / 10000 != NCCL_MAJOR) {
    *why = "NCCL: " + path + " is version code " + std::to_string(l->version) + ", this build's header is " +
           std::to_string(NCCL_VERSION_CODE) + " (another major version): " + kInstall;
    return nullptr;
  }
  return l.release();
}

const NcclLibrary* nccl_library(std::string* why) {
  static std::once_flag once;
  static const NcclLibrary* library = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    if (const char* path = std::getenv("MT_NCCL_LIBRARY"); path != nullptr && *path != '\0') {
      library = open_nccl_library(path, &failure);  // named: no fallback
      return;
    }
    library = open_nccl_library(MT_NCCL_SONAME(NCCL_MAJOR), &failure);
#ifdef MT_NCCL_BUILD_LIBRARY
    if (library == nullptr) {
      std::string second;
      library = open_nccl_library(MT_NCCL_BUILD_LIBRARY, &second);
    }
#endif
  });
  if (library == nullptr && why != nullptr) *why = failure;
  return library;
}

}  // namespace mt::autograd::gpu
