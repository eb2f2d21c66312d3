// mt_text_ids: text <-> token ids with a model's own vocabulary, one line per
// line, so the comparison feeds both engines the same ids and reads their
// outputs back as text.
//
//   mt_text_ids encode MODEL.mtm < text > ids
//   mt_text_ids decode MODEL.mtm < ids > text
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mt/mt.hpp"
#include "tokenizer/tokenizer.hpp"
#include "access.hpp"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "mt_text_ids: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 3 ? argv[1] : "";
  if (mode != "encode" && mode != "decode") {
    std::fputs("usage: mt_text_ids encode|decode MODEL.mtm < input > output\n", stderr);
    return 2;
  }
  auto model = mt::Model::load(argv[2]);
  if (!model) return fail(std::string(argv[2]) + ": " + model.status().message());
  const mt::detail::Tokenizer* tokenizer = mt::detail::tokenizer_of(*model.value());
  if (tokenizer == nullptr) return fail(std::string(argv[2]) + " has no vocabulary");

  std::string line;
  std::vector<std::byte> workspace;
  std::vector<int32_t> ids;
  std::string text;
  for (long number = 1; std::getline(std::cin, line); ++number) {
    size_t count = 0;
    mt::Status s;
    if (mode == "encode") {
      workspace.resize(tokenizer->encode_workspace_bytes(line.size()));
      ids.resize(tokenizer->max_encoded_ids(line.size()));
      s = tokenizer->encode(line, workspace, ids, &count);
      for (size_t i = 0; s.ok() && i < count; ++i) std::cout << (i ? " " : "") << ids[i];
    } else {
      ids.clear();
      std::istringstream in(line);
      for (long id; in >> id;) ids.push_back(int32_t(id));
      text.resize(tokenizer->max_decoded_bytes(ids.size()));
      s = tokenizer->decode(ids, text, &count);
      if (s.ok()) std::cout.write(text.data(), std::streamsize(count));
    }
    if (!s.ok()) return fail("line " + std::to_string(number) + ": " + s.message());
    std::cout << '\n';
  }
  return std::cout ? 0 : fail("cannot write the output");
}
