#include "trainer.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <algorithm>
#include <stdexcept>

namespace mt::train {

namespace {

constexpr char kCheckpointMagic[8] = {'M', 'T', 'C', 'K', 'P', 'T', '0', '1'};
// The caller's notes follow the optimizer state under this tag (a checkpoint
// without notes ends with the optimizer, as every one before them did).
constexpr char kNotesTag[8] = {'M', 'T', 'N', 'O', 'T', 'E', 'S', '1'};

SpecialIds special_ids(const ModelConfig& c) { return {c.pad_id, c.start_id(), c.eos_id, c.source_eos}; }

}  // namespace


// Slice j's seed (slice_stream).
static uint64_t slice_seed(uint64_t seed, int slice) { return seed + uint64_t(slice) * 0x9E3779B97F4A7C15ull; }

Trainer::Trainer(const TrainerOptions& options, std::vector<SentencePair> train)
    : o_(options),
      rank_(options.communicator ? options.communicator->rank() : 0),
      ranks_(options.communicator ? options.communicator->size() : 1),
      train_(std::move(train)),
      graph_(options.threads),
      model_(graph_, options.model),
      adam_(graph_, options.adam) {
  // No batch to step on: step() would index an empty epoch.
  if (train_.empty()) throw std::invalid_argument("no training pairs to train on");
  if (o_.init) {  // fine-tuning: the same file on every rank
    if (const Status st = model_.initialize_from(*o_.init); !st.ok()) throw std::invalid_argument(st.message());
  } else {
    model_.initialize(o_.seed);  // the same weights on every rank
  }
  graph_.set_seed(o_.seed);
  if (o_.device == Device::cuda) {
    if (o_.slices > 1) throw std::invalid_argument("batch slices run on the CPU only");
    device_ = make_cuda_backend(model_, o_.adam, o_.seed, o_.communicator);
  }
  start_epoch(0);
}

void Trainer::accumulate(bool first) {
  const auto& params = graph_.parameters();
  size_t total = 0;
  for (const autograd::Tensor<float>* p : params) total += size_t(p->numel());
  if (first) flat_.assign(total, 0.0f);
  size_t at = 0;
  for (const autograd::Tensor<float>* p : params) {
    if (!p->grad.empty()) {
      float* to = flat_.data() + at;
      if (first) {
        std::copy(p->grad.begin(), p->grad.end(), to);
      } else {
        for (size_t j = 0; j < p->grad.size(); ++j) to[j] += p->grad[j];
      }
    }
    at += size_t(p->numel());
  }
}

// Slice j's dropout stream at update t: a function of (seed, j, t) alone, so
// any rank count, and a resumed run, draws the same masks for it.
static autograd::RngState slice_stream(uint64_t seed, int slice, int64_t update) {
  return {slice_seed(seed, slice) ^ (uint64_t(update) * 0xD1B54A32D192ED03ull), 0};
}

StepStats Trainer::sliced_step(const std::vector<uint32_t>& all, const ForwardOptions& fo, int slices) {
  const size_t n = all.size();
  const int first = slices * rank_ / ranks_, last = slices * (rank_ + 1) / ranks_;
  double sums[3] = {0.0, 0.0, 0.0};  // loss, nll, tokens: this process's slices', then everyone's
  const int64_t update = adam_.steps();
  for (int j = first; j < last; ++j) {
    const std::vector<uint32_t> slice(all.begin() + ptrdiff_t(n * size_t(j) / size_t(slices)),
                                      all.begin() + ptrdiff_t(n * size_t(j + 1) / size_t(slices)));
    graph_.clear();
    graph_.zero_grad();
    graph_.set_training(true);
    graph_.set_rng_state(slice_stream(o_.seed, j, update));
    if (!slice.empty()) {  // an empty slice adds zeros
      const auto ce = model_.loss(assemble_batch(train_, slice, special_ids(o_.model)), fo);
      graph_.backward(ce.loss);
      sums[0] += double(ce.loss->value[0]), sums[1] += ce.nll, sums[2] += double(ce.tokens);
    }
    accumulate(j == first);
  }
  if (ranks_ > 1) {
    // A failed collective leaves the ranks out of step: nothing sensible is left to do.
    if (Status e = o_.communicator->sum(flat_.data(), flat_.size()); !e.ok()) throw std::runtime_error(e.message());
    if (Status e = o_.communicator->sum(sums, 3); !e.ok()) throw std::runtime_error(e.message());
  }
  size_t at = 0;
  for (autograd::Tensor<float>* p : graph_.parameters()) {
    p->grad.assign(flat_.begin() + ptrdiff_t(at), flat_.begin() + ptrdiff_t(at + size_t(p->numel())));
    at += size_t(p->numel());
  }
  StepStats s;
  s.tokens = int64_t(sums[2]);
  s.loss = sums[0] / std::max(sums[2], 1.0);
  s.nll = sums[1] / std::max(sums[2], 1.0);
  s.grad_norm = adam_.step(1.0 / std::max(sums[2], 1.0));
  s.learning_rate = adam_.last_learning_rate();
  // The stream the checkpoint records: the same on every rank and for one
  // process in slices (each update sets its slices' streams anew).
  graph_.set_rng_state(slice_stream(o_.seed, 0, adam_.steps()));
  return s;
}

// On a GPU: over N ranks, rank r computes slice r of the batch (as
// sliced_step cuts it) with slice r's dropout stream at this update; the
// backend sums the slices' gradients (NCCL) and loss.
StepStats Trainer::device_step(const std::vector<uint32_t>& all, const ForwardOptions& fo) {
  Batch batch;
  if (ranks_ > 1) {
    const size_t n = all.size();
    const std::vector<uint32_t> share(all.begin() + ptrdiff_t(n * size_t(rank_) / size_t(ranks_)),
                                      all.begin() + ptrdiff_t(n * size_t(rank_ + 1) / size_t(ranks_)));
    if (!share.empty()) batch = assemble_batch(train_, share, special_ids(o_.model));
    device_->set_rng_state(slice_stream(o_.seed, rank_, device_->steps()));
  } else {
    batch = assemble_batch(train_, all, special_ids(o_.model));
  }
  StepStats s;
  const BackendLoss l = device_->train_step(batch, fo, &s.grad_norm);
  s.tokens = l.tokens;
  s.loss = l.loss / double(std::max<int64_t>(l.tokens, 1));
  s.nll = l.nll / double(std::max<int64_t>(l.tokens, 1));
  s.learning_rate = device_->last_learning_rate();
  // The stream a checkpoint records: the same on every rank (as sliced_step's).
  if (ranks_ > 1) device_->set_rng_state(slice_stream(o_.seed, 0, device_->steps()));
  return s;
}

TransformerModel<float>& Trainer::model() {
  if (device_) device_->download(model_);
  return model_;
}

// Each epoch's batches come from (seed, epoch) alone, so a resumed run
// rebuilds the same order.
void Trainer::start_epoch(int epoch) {
  epoch_ = epoch;
  position_ = 0;
  if (o_.resegment) {
    if (const Status st = o_.resegment(epoch, &train_); !st.ok())
      throw std::runtime_error("epoch " + std::to_string(epoch + 1) + ": " + st.message());
  }
  batches_ = make_batches(train_, o_.batching, o_.seed * 1000003ull + uint64_t(epoch));
}

StepStats Trainer::step() {
  if (position_ >= batches_.size()) start_epoch(epoch_ + 1);
  const std::vector<uint32_t>& all = batches_[position_++];
  ForwardOptions fo;
  fo.dropout = o_.dropout;
  fo.label_smoothing = o_.label_smoothing;
  if (device_) return device_step(all, fo);
  if (const int slices = ranks_ > 1 ? ranks_ : o_.slices; slices > 1) return sliced_step(all, fo, slices);
  const Batch batch = assemble_batch(train_, all, special_ids(o_.model));
  graph_.clear();
  graph_.zero_grad();
  graph_.set_training(true);
  const auto ce = model_.loss(batch, fo);
  graph_.backward(ce.loss);
  StepStats s;
  s.tokens = ce.tokens;
  s.loss = double(ce.loss->value[0]) / double(std::max<int64_t>(ce.tokens, 1));
  s.nll = ce.nll / double(std::max<int64_t>(ce.tokens, 1));
  // The loss is a sum over tokens: average the gradient per token.
  s.grad_norm = adam_.step(1.0 / double(std::max<int64_t>(ce.tokens, 1)));
  s.learning_rate = adam_.last_learning_rate();
  return s;
}

StepStats Trainer::evaluate(const std::vector<SentencePair>& pairs) {
  graph_.set_training(false);
  BatchingOptions b = o_.batching;
  StepStats total;
  double loss = 0.0, nll = 0.0;
  for (const auto& batch : make_batches(pairs, b, 1)) {
    if (device_) {
      const BackendLoss l =
          device_->evaluate(assemble_batch(pairs, batch, special_ids(o_.model)), {0.0, o_.label_smoothing});
      loss += l.loss;
      nll += l.nll;
      total.tokens += l.tokens;
      continue;
    }
    graph_.clear();
    const auto ce = model_.loss(assemble_batch(pairs, batch, special_ids(o_.model)), {0.0, o_.label_smoothing});
    loss += double(ce.loss->value[0]);
    nll += ce.nll;
    total.tokens += ce.tokens;
  }
  graph_.clear();
  graph_.set_training(true);
  total.loss = loss / double(std::max<int64_t>(total.tokens, 1));
  total.nll = nll / double(std::max<int64_t>(total.tokens, 1));
  return total;
}

Status Trainer::save_checkpoint(const std::string& path, const std::string& notes) {
  std::vector<char> out(kCheckpointMagic, kCheckpointMagic + sizeof(kCheckpointMagic));
  auto put = [&](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
  };
  const int64_t epoch = epoch_, position = int64_t(position_);
  const autograd::RngState rng = device_ ? device_->rng_state() : graph_.rng_state();
  // On a GPU the weights are brought back into the CPU model first: the
  // checkpoint is the same file on either device.
  if (device_) device_->download(model_);
  put(&epoch, sizeof(epoch));
  put(&position, sizeof(position));
  put(&rng.seed, sizeof(rng.seed));
  put(&rng.calls, sizeof(rng.calls));
  const uint64_t count = graph_.parameters().size();
  put(&count, sizeof(count));
  for (const autograd::Tensor<float>* p : graph_.parameters()) {
    const uint64_t name_size = p->name.size(), n = p->value.size();
    put(&name_size, sizeof(name_size));
    put(p->name.data(), name_size);
    put(&n, sizeof(n));
    put(p->value.data(), n * sizeof(float));
  }
  if (device_)
    device_->save_optimizer(&out);
  else
    adam_.save(&out);
  if (!notes.empty()) {
    const uint64_t size = notes.size();
    put(kNotesTag, sizeof(kNotesTag));
    put(&size, sizeof(size));
    put(notes.data(), notes.size());
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(out.data(), std::streamsize(out.size()));
    if (!f.flush()) {
      std::remove(tmp.c_str());
      return Status::error(Errc::io_error, "cannot write checkpoint '%s'", path.c_str());
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(Errc::io_error, "cannot write checkpoint '%s'", path.c_str());
  }
  return {};
}

Status Trainer::load_checkpoint(const std::string& path, std::string* notes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(Errc::io_error, "cannot open checkpoint '%s'", path.c_str());
  const std::vector<char> in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t at = 0;
  auto get = [&](void* p, size_t n) {
    if (n > in.size() - at) return false;
    std::memcpy(p, in.data() + at, n);
    at += n;
    return true;
  };
  char magic[sizeof(kCheckpointMagic)];
  if (!get(magic, sizeof(magic)) || std::memcmp(magic, kCheckpointMagic, sizeof(magic)) != 0) {
    return Status::error(Errc::invalid_argument, "'%s' is not an mt_train checkpoint", path.c_str());
  }
  int64_t epoch = 0, position = 0;
  autograd::RngState rng;
  uint64_t count = 0;
  if (!get(&epoch, sizeof(epoch)) || !get(&position, sizeof(position)) || !get(&rng.seed, sizeof(rng.seed)) ||
      !get(&rng.calls, sizeof(rng.calls)) || !get(&count, sizeof(count)) || count != graph_.parameters().size()) {
    return Status::error(Errc::invalid_argument, "checkpoint '%s' does not match this model", path.c_str());
  }
  for (autograd::Tensor<float>* p : graph_.parameters()) {
    uint64_t name_size = 0, n = 0;
    std::string name;
    if (!get(&name_size, sizeof(name_size)) || name_size > 4096)
      return Status::error(Errc::invalid_argument, "checkpoint '%s' is corrupt", path.c_str());
    name.resize(name_size);
    if (!get(name.data(), name_size) || name != p->name || !get(&n, sizeof(n)) || n != p->value.size() ||
        !get(p->value.data(), n * sizeof(float))) {
      return Status::error(Errc::invalid_argument, "checkpoint '%s': parameter '%s' is missing or mis-sized",
                           path.c_str(), p->name.c_str());
    }
  }
  size_t used = 0;
  if (device_) {
    device_->upload(model_);
    MT_RETURN_IF_ERROR(device_->load_optimizer(in.data() + at, in.size() - at, &used));
  } else {
    MT_RETURN_IF_ERROR(adam_.load(in.data() + at, in.size() - at, &used));
  }
  at += used;
  std::string kept;
  if (at < in.size()) {
    char tag[sizeof(kNotesTag)];
    uint64_t size = 0;
    if (!get(tag, sizeof(tag)) || std::memcmp(tag, kNotesTag, sizeof(tag)) != 0 || !get(&size, sizeof(size)) ||
        size != in.size() - at) {
      return Status::error(Errc::invalid_argument, "checkpoint '%s' is corrupt", path.c_str());
    }
    kept.assign(in.data() + at, size);
  }
  start_epoch(int(epoch));
  if (size_t(position) > batches_.size())
    return Status::error(Errc::invalid_argument, "checkpoint '%s': batch position out of range", path.c_str());
  position_ = size_t(position);
  graph_.set_rng_state(rng);
  if (device_) device_->set_rng_state(rng);
  if (notes != nullptr) *notes = std::move(kept);
  return {};
}

}  // namespace mt::train
