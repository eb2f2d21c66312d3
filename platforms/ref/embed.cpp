// Reference embedding lookups from a packed [V, C] table (row `id` is packed
// column n = id, read with packed_at / packed_at_i8).
#include "ref/kernels_ref.h"

namespace mt {

void embed_f32_ref(const float* table_packed, int C, int id, float scale, const float* position, float* y) {
  for (int c = 0; c < C; ++c) {
    const float e = packed_at(table_packed, C, id, c) * scale;
    y[c] = position ? e + position[c] : e;
  }
}

void embed_i8_ref(const int8_t* table_packed, const float* row_scales, int C, int id, float scale,
                  const float* position, float* y) {
  const float row_scale = row_scales[id];
  for (int c = 0; c < C; ++c) {
    // Separate statements: the order of mt/kernels.h, never contracted.
    float e = float(packed_at_i8(table_packed, C, id, c)) * row_scale;
    e = e * scale;
    y[c] = position ? e + position[c] : e;
  }
}

}  // namespace mt
