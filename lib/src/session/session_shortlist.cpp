// SessionOptions::shortlist: each sentence is translated over its own
// candidate ids (its source ids' rows of the model's shortlist, the frequent
// ids, EOS, the prefixes), so its translation never depends on the batch.
// A call computes the output layer once for the union of its sentences'
// candidates (those columns gathered from the model's layer, or the whole
// layer when the union is most of the vocabulary: each column's value is the
// same either way, mt/kernels.h), then gives each row its own sentence's
// columns.
#include <algorithm>
#include <cstring>

#include "access.hpp"
#include "session/session_impl.hpp"

namespace mt {

namespace {

// Column j of `w`'s packed weights (and its scale, row sum and bias) into
// column `to` of `into`'s, for j = ids[to].
void gather_panel(const detail::Linear& w, const int32_t* ids, int n, int panel, detail::Linear& into) {
  const int begin = panel * kPanelWidth, end = std::min(n, begin + kPanelWidth);
  if (w.is_int8()) {
    // packed_k4n16: a column's 4 bytes of each k group are contiguous.
    const size_t Kp = size_t(padded_k_i8(w.k));
    auto* to = const_cast<int8_t*>(into.weight_i8) + size_t(panel) * Kp * kPanelWidth;
    std::memset(to, 0, Kp * kPanelWidth);
    for (size_t g = 0; g < Kp / 4; ++g) {
      for (int c = begin; c < end; ++c) {
        const int32_t id = ids[c];
        std::memcpy(to + g * 64 + size_t(c - begin) * 4, w.weight_i8 + packed_offset_i8(w.k, id, int(g * 4)), 4);
      }
    }
  } else {
    const size_t K = size_t(w.k);
    auto* to = const_cast<float*>(into.weight) + size_t(panel) * K * kPanelWidth;
    std::fill(to, to + K * kPanelWidth, 0.0f);
    for (size_t k = 0; k < K; ++k) {
      for (int c = begin; c < end; ++c) {
        const int32_t id = ids[c];
        to[k * kPanelWidth + size_t(c - begin)] = w.weight[size_t(id / kPanelWidth) * K * kPanelWidth +
                                                           k * kPanelWidth + size_t(id % kPanelWidth)];
      }
    }
  }
  for (int c = begin; c < end; ++c) {
    const int32_t id = ids[c];
    if (w.scales != nullptr) const_cast<float*>(into.scales)[c] = w.scales[id];
    if (w.row_sums != nullptr) const_cast<int32_t*>(into.row_sums)[c] = w.row_sums[id];
    if (w.bias != nullptr) const_cast<float*>(into.bias)[c] = w.bias[id];
  }
}

// Puts the n ids of `ids` (those with `bit` set in marks) in ascending order:
// a sort for a few, a pass over the marks for many (n log n past V / 16).
void ascending(int32_t* ids, int n, const uint8_t* marks, int V, uint8_t bit) {
  if (n < V / 16) {
    std::sort(ids, ids + n);
    return;
  }
  int at = 0;
  for (int32_t id = 0; id < V; ++id) {
    if (marks[id] & bit) ids[at++] = id;
  }
}

}  // namespace

bool Session::Impl::uses_shortlist() const {
  return options.shortlist && options.device == Device::cpu && model->shortlist() != nullptr;
}

void Session::Impl::prepare_shortlist(int B, const TranslateOptions& options) {
  const ShortlistView& shortlist = *model->shortlist();
  const ModelConfig& cfg = model->config();
  const size_t width = size_t(plan.shortlist_width);
  const int* offsets = at<int>(plan.source_offsets);
  const int32_t* sources = at<int32_t>(plan.source_tokens);
  // Per id: bit 0, in this sentence's candidates; bit 1, in the union. All 0 between calls.
  uint8_t* marks = at<uint8_t>(plan.shortlist_marks);
  int* counts = at<int>(plan.shortlist_counts);
  int32_t* all = at<int32_t>(plan.union_ids);
  int union_size = 0;
  for (int b = 0; b < B; ++b) {
    int32_t* ids = at<int32_t>(plan.shortlist_ids) + size_t(b) * width;
    int n = 0;
    // At most `width` ids (plan.shortlist_width bounds them; the test keeps
    // a target_prefix longer than max_target_length in bounds).
    const auto add = [&](int32_t id) {
      if ((marks[id] & 1) == 0 && size_t(n) < width) marks[id] |= 1, ids[n++] = id;
    };
    for (int i = offsets[b]; i < offsets[b + 1]; ++i) {
      for (const int32_t id : shortlist.row(sources[i])) add(id);
    }
    for (const int32_t id : shortlist.frequent) add(id);
    add(cfg.eos_id);
    for (const int32_t id : options.target_prefix) add(id);
    if (size_t(b) < options.prefixes.size()) {
      for (const int32_t id : options.prefixes[size_t(b)]) add(id);
    }
    ascending(ids, n, marks, cfg.target_vocab_size, 1);
    counts[b] = n;
    for (int j = 0; j < n; ++j) {
      uint8_t& mark = marks[ids[j]];
      if ((mark & 2) == 0) all[union_size++] = ids[j];
      mark = 2;
    }
  }
  ascending(all, union_size, marks, cfg.target_vocab_size, 2);
  for (int j = 0; j < union_size; ++j) marks[all[j]] = 0;

  const detail::Linear& output = detail::weights_of(*model).output;
  detail::Linear& into = *at<detail::Linear>(plan.gathered_linear);
  into = detail::Linear{};  // n 0: the model's layer
  if (union_size < cfg.target_vocab_size && union_size <= plan.gather_capacity) {
    into = output;
    into.n = union_size;
    if (output.is_int8()) {
      into.weight_i8 = at<int8_t>(plan.gathered_weight);
      into.scales = at<float>(plan.gathered_scales);
      if (output.row_sums != nullptr) into.row_sums = at<int32_t>(plan.gathered_row_sums);
    } else {
      into.weight = at<float>(plan.gathered_weight);
    }
    if (output.bias != nullptr) into.bias = at<float>(plan.gathered_bias);
    const int panels = int(packed_panels(union_size));
    pool->parallel_for(panels, [&](int panel, int) { gather_panel(output, all, union_size, panel, into); });
    int32_t* column_of = at<int32_t>(plan.union_columns);
    for (int j = 0; j < union_size; ++j) column_of[all[j]] = j;
    for (int b = 0; b < B; ++b) {
      const int32_t* ids = at<int32_t>(plan.shortlist_ids) + size_t(b) * width;
      int32_t* columns = at<int32_t>(plan.shortlist_columns) + size_t(b) * width;
      for (int j = 0; j < counts[b]; ++j) columns[j] = column_of[ids[j]];
    }
  } else {  // the whole layer: the column is the id
    for (int b = 0; b < B; ++b) {
      const int32_t* ids = at<int32_t>(plan.shortlist_ids) + size_t(b) * width;
      std::copy(ids, ids + counts[b], at<int32_t>(plan.shortlist_columns) + size_t(b) * width);
    }
  }
}

const detail::Linear* Session::Impl::shortlist_output() {
  if (plan.shortlist_width == 0) return nullptr;
  const detail::Linear* gathered = at<detail::Linear>(plan.gathered_linear);
  return gathered->n > 0 ? gathered : nullptr;
}

void Session::Impl::shortlist_rows(int rows, const int* sentence_of_row) {
  const size_t width = size_t(plan.shortlist_width);
  const detail::Linear* output = shortlist_output();
  const size_t stride = output != nullptr ? size_t(output->n) : size_t(model->config().target_vocab_size);
  const float* logits = at<float>(plan.logits);
  float* out = at<float>(plan.shortlist_logits);
  const int* counts = at<int>(plan.shortlist_counts);
  for (int i = 0; i < rows; ++i) {
    const int b = sentence_of_row[i];
    const int32_t* columns = at<int32_t>(plan.shortlist_columns) + size_t(b) * width;
    const float* from = logits + size_t(i) * stride;
    float* to = out + size_t(i) * width;
    for (int j = 0; j < counts[b]; ++j) to[j] = from[columns[j]];
  }
}

detail::StepRow Session::Impl::step_row(int i, int b) {
  if (plan.shortlist_width == 0) {
    const int V = model->config().target_vocab_size;
    return {at<float>(plan.logits) + size_t(i) * V, {nullptr, V}};
  }
  const size_t width = size_t(plan.shortlist_width);
  return {at<float>(plan.shortlist_logits) + size_t(i) * width,
          {at<int32_t>(plan.shortlist_ids) + size_t(b) * width, at<int>(plan.shortlist_counts)[b]}};
}

}  // namespace mt
