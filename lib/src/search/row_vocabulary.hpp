// The target ids one row of a decoder step's logits covers: every id (column
// = id), or a sentence's vocabulary shortlist (column j = ids[j], ascending,
// so the lower column wins a tie as the lower id does without one).
#pragma once

#include <algorithm>
#include <cstdint>

namespace mt::detail {

struct RowVocabulary {
  const int32_t* ids = nullptr;  // null: the whole vocabulary
  int size = 0;                  // columns

  int32_t id(int column) const { return ids == nullptr ? column : ids[column]; }
  // The column of `id`, or -1 when the row does not cover it.
  int column(int32_t id) const {
    if (ids == nullptr) return id;
    const int32_t* it = std::lower_bound(ids, ids + size, id);
    return it != ids + size && *it == id ? int(it - ids) : -1;
  }
};

}  // namespace mt::detail
