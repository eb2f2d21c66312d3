#include "model/model_shortlist.hpp"

#include <algorithm>
#include <cstdio>

namespace mt {

ShortlistData ShortlistView::to_data() const {
  return {std::vector<int32_t>(frequent.begin(), frequent.end()),
          std::vector<uint32_t>(row_ends.begin(), row_ends.end()),
          std::vector<int32_t>(targets.begin(), targets.end()), std::string(method)};
}

namespace detail {

namespace {

// Ids strictly ascending and in [0, V): a sentence's candidates are
// gathered by marking ids in a [V] table, and the search finds an id's
// column by binary search in them.
// `row` < 0: the frequent ids.
Status check_ascending(std::span<const int32_t> ids, int V, long row) {
  char what[48] = "frequent ids";
  if (row >= 0) std::snprintf(what, sizeof what, "row %ld", row);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= V) {
      return Status::error(Errc::invalid_model, "shortlist %s has target id %d, outside [0, %d)", what, int(ids[i]), V);
    }
    if (i > 0 && ids[i] <= ids[i - 1]) {
      return Status::error(Errc::invalid_model, "shortlist %s is not ascending (%d after %d)", what, int(ids[i]),
                           int(ids[i - 1]));
    }
  }
  return {};
}

Status check_parts(std::span<const int32_t> frequent, std::span<const uint32_t> row_ends,
                   std::span<const int32_t> targets, const ModelConfig& config, int* longest_row) {
  MT_RETURN_IF_ERROR(check_ascending(frequent, config.target_vocab_size, -1));
  if (row_ends.size() != size_t(config.source_vocab_size)) {
    return Status::error(Errc::invalid_model, "shortlist has %zu rows for %d source ids", row_ends.size(),
                         config.source_vocab_size);
  }
  uint32_t begin = 0;
  *longest_row = 0;
  for (size_t s = 0; s < row_ends.size(); ++s) {
    if (row_ends[s] < begin || row_ends[s] > targets.size()) {
      return Status::error(Errc::invalid_model, "shortlist row %zu ends at %u, outside [%u, %zu]", s, row_ends[s],
                           begin, targets.size());
    }
    MT_RETURN_IF_ERROR(check_ascending(targets.subspan(begin, row_ends[s] - begin), config.target_vocab_size, long(s)));
    *longest_row = std::max(*longest_row, int(row_ends[s] - begin));
    begin = row_ends[s];
  }
  if (begin != targets.size()) {
    return Status::error(Errc::invalid_model, "shortlist rows hold %u of its %zu target ids", begin, targets.size());
  }
  return {};
}

template <class T>
std::span<const T> span_of(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? std::span<const T>() : std::span<const T>(v->data(), v->size());
}

}  // namespace

Expected<std::optional<ShortlistView>> read_shortlist(const fb::Shortlist* s, const ModelConfig& config) {
  if (s == nullptr) return std::optional<ShortlistView>();
  ShortlistView view;
  view.frequent = span_of(s->frequent());
  view.row_ends = span_of(s->row_ends());
  view.targets = span_of(s->targets());
  if (s->method() != nullptr) view.method = s->method()->string_view();
  MT_RETURN_IF_ERROR(check_parts(view.frequent, view.row_ends, view.targets, config, &view.longest_row));
  return std::optional<ShortlistView>(view);
}

Status check_shortlist(const ShortlistData& s, const ModelConfig& config) {
  int longest = 0;
  return check_parts(s.frequent, s.row_ends, s.targets, config, &longest);
}

flatbuffers::Offset<fb::Shortlist> build_shortlist(flatbuffers::FlatBufferBuilder& b, const ShortlistData& s) {
  const auto frequent = b.CreateVector(s.frequent);
  const auto row_ends = b.CreateVector(s.row_ends);
  const auto targets = b.CreateVector(s.targets);
  const auto method = b.CreateString(s.method);
  return fb::CreateShortlist(b, frequent, row_ends, targets, method);
}

}  // namespace detail
}  // namespace mt
