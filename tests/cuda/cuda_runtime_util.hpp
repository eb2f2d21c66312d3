// Helpers of the CUDA session tests: finding the committed models and
// sentences wherever the binary runs (GPU machines get a copy of the tree),
// and sessions on either device.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mt/mt.hpp"

namespace mt::test {

// A file of the source tree: under $MT_SOURCE_DIR, the tree this binary was
// built from, or the working directory, whichever has it.
inline std::string source_file(const std::string& relative) {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("MT_SOURCE_DIR")) roots.emplace_back(env);
  roots.emplace_back(MT_SOURCE_DIR);
  roots.emplace_back(".");
  for (const std::string& root : roots) {
    const std::filesystem::path p = std::filesystem::path(root) / relative;
    if (std::filesystem::exists(p)) return p.string();
  }
  FAIL(relative << " not found under $MT_SOURCE_DIR, " << MT_SOURCE_DIR << " or the working directory");
  return {};
}

inline std::vector<std::string> shipped_sentences() {
  std::ifstream in(source_file("tests/data/shipped_sentences.en"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() >= 40);
  return lines;
}

inline std::shared_ptr<const Model> load_model(const std::string& relative) {
  auto model = Model::load(source_file(relative));
  INFO(model.status().message());
  REQUIRE(model.ok());
  return model.value();
}

inline Session make_session(std::shared_ptr<const Model> model, SessionOptions options, Device device) {
  options.device = device;
  auto session = Session::create(std::move(model), options);
  INFO((device == Device::cuda ? "CUDA" : "CPU") << " session: " << session.status().message());
  REQUIRE(session.ok());
  return std::move(session.value());
}

struct TextResult {
  std::string text;
  float score;
};

// Every sentence's n-best, translated in batches of `batch` sentences (0:
// the session's max_batch_size).
inline std::vector<std::vector<TextResult>> translate_all(Session& session, const std::vector<std::string>& lines,
                                                          const TranslateOptions& options, size_t batch = 0) {
  std::vector<std::vector<TextResult>> out;
  if (batch == 0) batch = size_t(session.options().max_batch_size);
  for (size_t b = 0; b < lines.size(); b += batch) {
    const std::vector<std::string_view> part(lines.begin() + b, lines.begin() + std::min(lines.size(), b + batch));
    TextTranslations results;
    const Status status = session.translate_text(part, options, &results);
    INFO(status.message());
    REQUIRE(status.ok());
    for (size_t i = 0; i < results.size(); ++i) {
      std::vector<TextResult> nbest;
      for (const TextHypothesis& h : results[i]) nbest.push_back({std::string(h.text), h.score});
      out.push_back(nbest);
    }
  }
  return out;
}

}  // namespace mt::test
