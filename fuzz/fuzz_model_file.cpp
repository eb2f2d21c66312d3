// Model loading from arbitrary bytes: every input is refused with a status or
// loads, and a model that loads also creates a session and translates.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const mt::fuzz::AlignedBytes bytes(data, size);
  mt::LoadOptions options;
  options.check_weights_finite = size % 2 == 0;  // both paths
  auto model = mt::Model::from_buffer(bytes.span(), options);
  if (!model) return 0;
  const mt::ModelConfig& c = (*model)->config();
  mt::SessionOptions so;
  so.max_batch_size = 2;
  so.max_source_length = std::min(8, c.max_positions);
  so.max_target_length = std::min(6, c.max_positions);
  so.max_beam_size = std::min(2, c.target_vocab_size - 1);
  if (so.max_beam_size < 1) return 0;
  auto session = mt::Session::create(*model, so);
  if (!session) return 0;
  std::vector<int32_t> a = {1 % c.source_vocab_size, 4 % c.source_vocab_size}, b = {};
  const std::span<const int32_t> batch[] = {a, b};
  mt::TranslateOptions to;
  to.beam_size = so.max_beam_size;
  mt::Translations out;
  (void)session->translate(batch, to, &out);
  if ((*model)->vocabulary() != nullptr) {
    const std::string_view text[] = {"a b", ""};
    mt::TextTranslations texts;
    (void)session->translate_text(text, to, &texts);
  }
  return 0;
}
