// Model::encode / Model::decode: the session's tokenizer with heap buffers,
// for callers that tokenize outside a session.
#include <cstddef>
#include <string>
#include <vector>

#include "mt/model.hpp"
#include "tokenizer/line_breaks.hpp"
#include "tokenizer/tokenizer.hpp"

namespace mt {
namespace {

Status no_vocabulary() {
  return Status::error(Errc::invalid_argument, "this model has no vocabulary (or was loaded without it)");
}

Status encode_with(const detail::Tokenizer* t, std::string_view text, std::vector<int32_t>* ids) {
  if (ids == nullptr) return Status::error(Errc::invalid_argument, "ids must not be null");
  ids->clear();
  if (t == nullptr) return no_vocabulary();
  std::vector<std::byte> workspace(t->encode_workspace_bytes(text.size()));
  ids->resize(t->max_encoded_ids(text.size()));
  size_t count = 0;
  const Status status = t->encode(text, workspace, *ids, &count);
  ids->resize(status.ok() ? count : 0);
  return status;
}

}  // namespace

Status Model::encode(std::string_view text, std::vector<int32_t>* ids) const { return encode_with(tokenizer(), text, ids); }

Status Model::encode_target(std::string_view text, std::vector<int32_t>* ids) const {
  return encode_with(target_tokenizer(), text, ids);
}

Status Model::decode(std::span<const int32_t> ids, std::string* text, bool line_breaks_as_spaces) const {
  if (text == nullptr) return Status::error(Errc::invalid_argument, "text must not be null");
  text->clear();
  const detail::Tokenizer* t = target_tokenizer();
  if (t == nullptr) return no_vocabulary();
  text->resize(t->max_decoded_bytes(ids.size()));
  size_t length = 0;
  const Status status = t->decode(ids, *text, &length);
  if (status.ok() && line_breaks_as_spaces) length = detail::replace_line_breaks(text->data(), length);
  text->resize(status.ok() ? length : 0);
  return status;
}

}  // namespace mt
