// A libmt built without CUDA: CUDA sessions are refused with a clear error,
// and models carry an empty weight cache.
#include "cuda/cuda_session.hpp"
#include "cuda/cuda_weights.hpp"

namespace mt::detail {
namespace {

Status no_cuda() {
  return Status::error(Errc::unsupported,
                       "libmt was built without CUDA (rebuild with nvcc available, -DMT_CUDA=ON to insist)");
}

}  // namespace

CudaWeightCache::~CudaWeightCache() = default;
Expected<const CudaModelWeights*> CudaWeightCache::get(const Model&, int, CudaWeightForm) { return no_cuda(); }

Expected<std::unique_ptr<CudaSession>> CudaSession::create(const Model&, const SessionOptions&, const SessionPlan&) {
  return no_cuda();
}
CudaSession::~CudaSession() = default;
Status CudaSession::run(Session::Impl&, int, const TranslateOptions&) { return no_cuda(); }
Status CudaSession::encode(Session::Impl&, int) { return no_cuda(); }
Status CudaSession::step_logits(const int32_t*, int, int, int, float*) { return no_cuda(); }

}  // namespace mt::detail
