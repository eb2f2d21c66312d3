// Translates one sentence with libmt's C++ API:
//
//   translate_cpp MODEL.mtm "A sentence."
#include <cstdio>
#include <string_view>

#include "mt/mt.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: translate_cpp MODEL.mtm SENTENCE\n");
    return 2;
  }
  auto model = mt::Model::load(argv[1]);  // mapped and checked; weights used in place
  if (!model) {
    std::fprintf(stderr, "translate_cpp: %s\n", model.status().message());
    return 1;
  }
  mt::SessionOptions options;
  options.max_batch_size = 1;
  options.max_beam_size = 4;
  auto session = mt::Session::create(model.value(), options);  // all its memory, once
  if (!session) {
    std::fprintf(stderr, "translate_cpp: %s\n", session.status().message());
    return 1;
  }
  mt::TranslateOptions translate;
  translate.beam_size = 4;
  const std::string_view sentences[] = {argv[2]};
  mt::TextTranslations results;  // a view into the session, valid until its next call
  if (mt::Status s = session->translate_text(sentences, translate, &results); !s.ok()) {
    std::fprintf(stderr, "translate_cpp: %s\n", s.message());
    return 1;
  }
  const std::string_view best = results[0][0].text;
  std::printf("%.*s\n", int(best.size()), best.data());
  return 0;
}
