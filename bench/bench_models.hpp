// The models the translation benchmarks run (bench_translate,
// bench_decode_profile), written on first use:
//   base, small, tiny       random weights (mt::write_random_model, seed 1), fp32,
//                           in the temporary directory
//   <preset>-int8           the same quantized by mt_quantize's library, calibrated
//                           on 8 random sentences; -int8dyn: per-row dynamic scales
//   en-de-tiny, en-de-tiny-int8   the shipped models (MT_MODELS_DIR)
// and the benchmarks' random source sentences.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "mt/mt.hpp"
#include "quantizer.hpp"

namespace mt_bench {

inline std::string shipped_path(const std::string& name) {
  const std::string file = name == "en-de-tiny-int8" ? "en-de-tiny.int8.mtm" : name + ".mtm";
  return std::string(MT_MODELS_DIR) + "/" + file;
}

inline bool shipped(const std::string& name) { return name.rfind("en-de-tiny", 0) == 0; }

// An int8 copy of a random model, calibrated on random sentences.
inline void write_int8(const std::string& fp32_path, const std::string& path, bool dynamic) {
  auto fp32 = mt::Model::load(fp32_path).value();
  std::vector<std::string> lines;
  uint32_t x = 777;
  for (int i = 0; i < 8; ++i) {
    std::string line;
    for (int t = 0; t < 15; ++t) {
      x = x * 1664525u + 1013904223u;
      if (t > 0) line += ' ';
      line += std::to_string(4 + (x >> 8) % uint32_t(fp32->config().source_vocab_size - 4));
    }
    lines.push_back(line);
  }
  mt::quantize::QuantizeOptions o;
  o.max_length = 16;
  if (dynamic) o.activations = mt::ActivationScales::dynamic_per_row;
  auto calibration = mt::quantize::calibrate(fp32, lines, o);
  if (!calibration) std::abort();
  auto bytes = mt::quantize::build_int8_model(*fp32, *calibration, o);
  if (!bytes) std::abort();
  // Written aside and renamed into place: a benchmark running meanwhile keeps
  // the file it mapped.
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes->data(), 1, bytes->size(), f) != bytes->size()) std::abort();
  std::fclose(f);
  std::filesystem::rename(tmp, path);
}

// Random models are written once, into the temporary directory.
inline const std::string& model_path(const std::string& name) {
  static std::map<std::string, std::string> paths;
  auto it = paths.find(name);
  if (it != paths.end()) return it->second;
  if (shipped(name)) return paths.emplace(name, shipped_path(name)).first->second;
  const std::string path = (std::filesystem::temp_directory_path() / ("libmt-bench-" + name + ".mtm")).string();
  // int8 copies are made anew each run, so they always come from this build's quantizer.
  const size_t dash = name.find('-');
  if (dash != std::string::npos) {
    write_int8(model_path(name.substr(0, dash)), path, name.substr(dash) == "-int8dyn");
  } else if (!std::filesystem::exists(path)) {
    const mt::Status s = mt::write_random_model(mt::ModelConfig::preset(name).value(), 1, path);
    if (!s.ok()) std::abort();
  }
  return paths.emplace(name, path).first->second;
}

// `batch` random sentences of `length` ids in [4, vocab).
inline std::vector<std::vector<int32_t>> sources(int batch, int length, int vocab) {
  std::vector<std::vector<int32_t>> out(size_t(batch), std::vector<int32_t>(size_t(length), 0));
  uint32_t x = 12345;
  for (auto& s : out)
    for (auto& t : s) t = int32_t(4 + ((x = x * 1664525u + 1013904223u) >> 8) % uint32_t(vocab - 4));
  return out;
}

}  // namespace mt_bench
