#include "cuda/nccl_gradient_sum.hpp"

#include <cuda_runtime.h>

#include <stdexcept>

#include "cuda/cuda_check.hpp"

#ifdef MT_HAVE_NCCL
#include "cuda/nccl_library.hpp"
#endif

namespace mt::autograd::gpu {

void select_rank_device(const train::Communicator* ranks) {
  if (ranks == nullptr || !ranks->launched()) return;
  int count = 0;
  MT_GPU_CHECK(cudaGetDeviceCount(&count));
  if (count > 0) MT_GPU_CHECK(cudaSetDevice(ranks->local_rank() % count));
}

#ifdef MT_HAVE_NCCL

struct NcclGradientSum::State {
  const NcclLibrary* nccl = nullptr;
  ncclComm_t comm = nullptr;
  Stream stream = nullptr;
  int ranks = 1;
};

namespace {

[[noreturn]] void nccl_fail(const NcclLibrary* nccl, ncclResult_t result, const char* call) {
  throw std::runtime_error(std::string("NCCL: ") + call + " failed: " + nccl->error_string(result));
}

void check(Status status) {
  if (!status.ok()) throw std::runtime_error(status.message());
}

}  // namespace

bool nccl_available(std::string* why) { return nccl_library(why) != nullptr; }

std::unique_ptr<NcclGradientSum> NcclGradientSum::create(train::Communicator& ranks, Stream stream) {
  std::string why;
  const NcclLibrary* nccl = nccl_library(&why);
  // Every rank learns whether all have NCCL before any waits in ncclCommInitRank.
  double missing = nccl == nullptr ? 1.0 : 0.0;
  check(ranks.sum(&missing, 1));
  if (nccl == nullptr) throw std::runtime_error(why);
  if (missing > 0.0)
    throw std::runtime_error("NCCL: " + std::to_string(int(missing)) + " of " + std::to_string(ranks.size()) +
                             " ranks cannot open NCCL (their messages say why)");
  ncclUniqueId id{};
  const ncclResult_t made = ranks.rank() == 0 ? nccl->get_unique_id(&id) : ncclSuccess;
  double failed = made == ncclSuccess ? 0.0 : 1.0;  // the others must not wait for an id that never comes
  check(ranks.sum(&failed, 1));
  if (made != ncclSuccess) nccl_fail(nccl, made, "ncclGetUniqueId");
  if (failed > 0.0) throw std::runtime_error("NCCL: rank 0 could not make the communicator's id (its message says why)");
  check(ranks.broadcast(&id, sizeof(id)));
  auto state = std::make_unique<State>();
  state->nccl = nccl;
  state->stream = stream;
  state->ranks = ranks.size();
  if (ncclResult_t r = nccl->comm_init_rank(&state->comm, ranks.size(), id, ranks.rank()); r != ncclSuccess)
    nccl_fail(nccl, r, "ncclCommInitRank");
  return std::unique_ptr<NcclGradientSum>(new NcclGradientSum(std::move(state)));
}

NcclGradientSum::~NcclGradientSum() {
  if (s_ && s_->comm) s_->nccl->comm_destroy(s_->comm);
}

void NcclGradientSum::sum(const std::vector<Tensor*>& parameters) {
  const NcclLibrary* nccl = s_->nccl;
  if (ncclResult_t r = nccl->group_start(); r != ncclSuccess) nccl_fail(nccl, r, "ncclGroupStart");
  for (Tensor* p : parameters) {
    if (ncclResult_t r = nccl->all_reduce(p->grad, p->grad, size_t(p->numel()), ncclFloat32, ncclSum, s_->comm,
                                          s_->stream);
        r != ncclSuccess) {
      (void)nccl->group_end();
      nccl_fail(nccl, r, "ncclAllReduce");
    }
  }
  if (ncclResult_t r = nccl->group_end(); r != ncclSuccess) nccl_fail(nccl, r, "ncclGroupEnd");
}

std::string NcclGradientSum::describe() const {
  const int v = s_->nccl->version;
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         " (" + s_->nccl->path + "), " + std::to_string(s_->ranks) + (s_->ranks == 1 ? " rank" : " ranks");
}

#else  // built without nccl.h

struct NcclGradientSum::State {};

constexpr const char* kNoNccl =
    "NCCL: this build has none (nccl.h was not found when it was configured: scripts/install-deps.sh fetches it "
    "into build-deps/nccl, or set NCCL_HOME; then configure and build again)";

bool nccl_available(std::string* why) {
  if (why) *why = kNoNccl;
  return false;
}

std::unique_ptr<NcclGradientSum> NcclGradientSum::create(train::Communicator&, Stream) {
  throw std::runtime_error(kNoNccl);
}

NcclGradientSum::~NcclGradientSum() = default;

void NcclGradientSum::sum(const std::vector<Tensor*>&) {}

std::string NcclGradientSum::describe() const { return "no NCCL"; }

#endif

NcclGradientSum::NcclGradientSum(std::unique_ptr<State> state) : s_(std::move(state)) {}

}  // namespace mt::autograd::gpu
