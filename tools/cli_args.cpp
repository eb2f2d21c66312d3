#include "cli_args.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#endif

namespace mt::cli {

Args::Args(int argc, char** argv, const std::vector<std::string>& flags) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      positional_.push_back(arg);
      continue;
    }
    std::string value;
    if (const auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (std::find(flags.begin(), flags.end(), arg) == flags.end()) {
      if (i + 1 >= argc) {
        missing_value_ = arg;
        continue;
      }
      value = argv[++i];
    }
    values_[arg].push_back(value);
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> Args::all(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>() : it->second;
}

int Args::get_int(const std::string& name, int fallback, int lo, int hi) {
  if (!has(name)) return fallback;
  const std::string value = get(name, "");
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
    if (error_.empty()) {
      error_ = "option " + name + " = '" + value + "': expected a whole number in [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]";
    }
    return fallback;
  }
  return int(v);
}

float Args::get_float(const std::string& name, float fallback, float lo, float hi) {
  if (!has(name)) return fallback;
  const std::string value = get(name, "");
  char* end = nullptr;
  const float v = std::strtof(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
    if (error_.empty()) {
      char range[64];
      std::snprintf(range, sizeof range, "[%g, %g]", double(lo), double(hi));
      error_ = "option " + name + " = '" + value + "': expected a number in " + range;
    }
    return fallback;
  }
  return v;
}

void Args::reject_unknown(const std::vector<std::string>& known) {
  for (const auto& [name, values] : values_) {
    if (std::find(known.begin(), known.end(), name) == known.end() && error_.empty()) {
      error_ = "unknown option " + name + " (see --help)";
    }
  }
  if (!missing_value_.empty() && std::find(known.begin(), known.end(), missing_value_) == known.end() &&
      error_.empty()) {
    error_ = "unknown option " + missing_value_ + " (see --help)";
  }
}

bool thread_split_option(Args& args, ThreadSplit* split, std::string* error) {
  const std::string value = args.get("--thread-split", "automatic");
  if (value == "automatic" || value == "layers" || value == "sentences") {
    *split = value == "layers" ? ThreadSplit::layers : value == "sentences" ? ThreadSplit::sentences : ThreadSplit::automatic;
    return true;
  }
  *error = "--thread-split must be automatic, layers or sentences, not '" + value + "'";
  return false;
}

bool device_options(Args& args, SessionOptions* options, std::string* error) {
  const std::string device = args.get("--device", "cpu");
  if (device != "cpu" && device != "cuda") {
    *error = "--device must be cpu or cuda, not '" + device + "'";
    return false;
  }
  options->device = device == "cuda" ? Device::cuda : Device::cpu;
  options->cuda_device = args.get_int("--gpu", 0, 0, 255);
  options->allow_tf32 = args.has("--tf32");
  options->cuda_int8_gemm = !args.has("--cuda-dequantize");
  options->cuda_fp16 = args.has("--fp16");
  return true;
}

bool stderr_is_terminal() {
#ifdef __EMSCRIPTEN__
  // A browser has no process: no terminal either.
  return EM_ASM_INT({ return typeof process == "object" && require("tty").isatty(2) ? 1 : 0; }) != 0;
#else
  return isatty(STDERR_FILENO) != 0;
#endif
}

}  // namespace mt::cli
