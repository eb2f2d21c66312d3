// Reference embedding lookup from a packed [V, C] table (row `id` is packed
// column n = id, read with packed_at).
#include "ref/kernels_ref.h"

namespace mt {

void embed_f32_ref(const float* table_packed, int C, int id, float scale, const float* position,
                   float* y) {
  for (int c = 0; c < C; ++c) {
    const float e = packed_at(table_packed, C, id, c) * scale;
    y[c] = position ? e + position[c] : e;
  }
}

}  // namespace mt
