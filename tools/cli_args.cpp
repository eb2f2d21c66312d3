#include "cli_args.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <unistd.h>
#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#endif

#include "mt/kernels.h"
#include "mt/model.hpp"
#include "mt/version.hpp"

namespace mt::cli {
namespace {

constexpr Option kStandard[] = {
    {"--help", "-h", nullptr, "this text"},
    {"--version", nullptr, nullptr, "libmt's version, the model formats it reads, this CPU's kernels, CUDA"},
};

const Option* find(std::span<const Option> options, const std::string& spelled) {
  for (const Option& o : options) {
    if (spelled == o.name || (o.short_name != nullptr && spelled == o.short_name)) return &o;
  }
  for (const Option& o : kStandard) {
    if (spelled == o.name || (o.short_name != nullptr && spelled == o.short_name)) return &o;
  }
  return nullptr;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean --beam?)" for another tool's spelling or a near miss, else "".
std::string suggestion(std::span<const Option> options, const std::string& spelled) {
  for (const Option& o : options) {
    if (o.foreign == nullptr) continue;
    std::istringstream words(o.foreign);
    for (std::string word; words >> word;) {
      if (word == spelled) return std::string(" (did you mean ") + o.name + "?)";
    }
  }
  const Option* best = nullptr;
  size_t best_distance = 3;  // at most 2 edits, and fewer than a third of the word
  const std::string bare = spelled.rfind("--", 0) == 0 ? spelled : "-" + spelled;  // "-beam" is "--beam"
  for (const Option& o : options) {
    const size_t d = edit_distance(bare, o.name);
    if (d < best_distance && d * 3 < std::string(o.name).size()) best = &o, best_distance = d;
  }
  return best != nullptr ? std::string(" (did you mean ") + best->name + "?)" : "";
}

}  // namespace

Args::Args(int argc, char** argv, std::span<const Option> options, int first) {
  bool options_ended = false;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (options_ended || arg.size() < 2 || arg[0] != '-') {
      positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    std::string spelled = arg, value;
    const size_t eq = arg.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) spelled = arg.substr(0, eq), value = arg.substr(eq + 1);
    const Option* option = find(options, spelled);
    if (option == nullptr) {
      set_error("unknown option " + spelled + suggestion(options, spelled));
      continue;
    }
    const std::string name = option->name;
    if (option->value == nullptr) {
      if (inline_value) set_error("option " + name + " is a switch and takes no value ('" + arg + "')");
    } else if (!inline_value) {
      if (i + 1 >= argc) {
        set_error("option " + name + " needs a value (" + option->value + ")");
        continue;
      }
      value = argv[++i];
    }
    if (name == "--help") help_ = true;
    if (name == "--version") version_ = true;
    auto& values = values_[name];
    if (!values.empty() && !option->repeatable && name != "--help" && name != "--version") {
      set_error("option " + name + " is given more than once");
    }
    values.push_back(value);
  }
}

void Args::set_error(const std::string& message) {
  if (error_.empty()) error_ = message;
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
    set_error("option " + name + " = '" + value + "': expected a whole number in [" + std::to_string(lo) + ", " +
              std::to_string(hi) + "]");
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
    char range[64];
    std::snprintf(range, sizeof range, "[%g, %g]", double(lo), double(hi));
    set_error("option " + name + " = '" + value + "': expected a number in " + range);
    return fallback;
  }
  return v;
}

std::string Args::get_choice(const std::string& name, std::span<const char* const> choices, const char* fallback) {
  const std::string value = get(name, fallback);
  std::string listed;
  for (const char* c : choices) {
    if (value == c) return value;
    listed += (listed.empty() ? "" : ", ") + std::string(c);
  }
  set_error("option " + name + " = '" + value + "': expected one of " + listed);
  return fallback;
}

std::string help_text(const char* synopsis, std::span<const Option> options, const char* epilog) {
  std::string out = synopsis;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "\noptions:\n";
  const auto left = [](const Option& o) {
    std::string s = "  ";
    s += o.short_name != nullptr ? std::string(o.short_name) + ", " : "";
    s += o.name;
    if (o.value != nullptr) s += std::string(" ") + o.value;
    return s;
  };
  size_t width = 0;
  for (const Option& o : options) width = std::max(width, left(o).size());
  for (const Option& o : kStandard) width = std::max(width, left(o).size());
  width = std::min<size_t>(width + 2, 34);
  const auto add = [&](const Option& o) {
    std::string l = left(o);
    if (l.size() + 1 > width) {
      out += l + "\n" + std::string(width, ' ');
    } else {
      out += l + std::string(width - l.size(), ' ');
    }
    for (const char* p = o.help; *p != '\0'; ++p) {
      out += *p;
      if (*p == '\n') out += std::string(width, ' ');
    }
    out += '\n';
  };
  for (const Option& o : options) add(o);
  for (const Option& o : kStandard) add(o);
  if (epilog != nullptr && *epilog != '\0') out += std::string("\n") + epilog;
  if (out.back() != '\n') out += '\n';
  return out;
}

std::string version_text(const char* tool) {
  std::string out = std::string(tool) + " (libmt " + kVersion + ")\n";
  out += "model files: format versions 1 to " + std::to_string(kModelFormatVersion) + " read\n";
  out += std::string("kernels: ") + best_kernels().isa + " on this CPU (";
  const auto available = available_kernels();
  for (size_t i = 0; i < available.size(); ++i) out += (i ? ", " : "") + std::string(available[i]->isa);
  out += " available)\n";
#ifdef MT_CLI_WITH_CUDA
  out += "CUDA: built in (--device cuda needs an NVIDIA driver and cuBLAS at run time)\n";
#else
  out += "CUDA: not built in\n";
#endif
  return out;
}

int standard_options(const char* tool, const Args& args, const std::string& help) {
  if (args.wants_help()) {
    std::fputs(help.c_str(), stdout);
    return 0;
  }
  if (args.wants_version()) {
    std::fputs(version_text(tool).c_str(), stdout);
    return 0;
  }
  if (!args.ok()) return usage_error(tool, args.error());
  return -1;
}

int fail(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", tool, message.c_str());
  return kExitFailure;
}

int usage_error(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s (see %s --help)\n", tool, message.c_str(), tool);
  return kExitUsage;
}

void warn(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: warning: %s\n", tool, message.c_str());
}

void thread_split_option(Args& args, ThreadSplit* split) {
  const std::string value = args.get_choice("--thread-split", {"automatic", "layers", "sentences"}, "automatic");
  *split = value == "layers"      ? ThreadSplit::layers
           : value == "sentences" ? ThreadSplit::sentences
                                  : ThreadSplit::automatic;
}

namespace {
constexpr Option kDeviceOptions[] = {
    {"--device", nullptr, "cpu|cuda", "where the model runs (default cpu; cuda needs libmt built with CUDA and a GPU)"},
    {"--gpu", nullptr, "N", "which GPU with --device cuda (default 0)"},
    {"--tf32", nullptr, nullptr, "with --device cuda: GEMMs on TF32 tensor cores (faster, ~1e-3 relative error)"},
    {"--fp16", nullptr, nullptr,
     "with --device cuda: weights in half precision, GEMMs on fp16 tensor cores with\n"
     "fp32 sums (half the weight memory, ~1e-3 relative error)"},
    {"--cuda-dequantize", nullptr, nullptr,
     "with --device cuda and an int8 model: weights dequantized to fp32 and fp32\n"
     "GEMMs, instead of int8 GEMMs as on the CPU (the default)"},
    {"--cuda-int8", nullptr, nullptr, "with --device cuda and an int8 model: int8 GEMMs (the default)"},
};
}  // namespace

std::span<const Option> device_option_table() { return kDeviceOptions; }

void device_options(Args& args, SessionOptions* options) {
  const std::string device = args.get_choice("--device", {"cpu", "cuda"}, "cpu");
  options->device = device == "cuda" ? Device::cuda : Device::cpu;
  options->cuda_device = args.get_int("--gpu", 0, 0, 255);
  options->allow_tf32 = args.has("--tf32");
  options->cuda_int8_gemm = !args.has("--cuda-dequantize");
  options->cuda_fp16 = args.has("--fp16");
  if (device != "cuda") {
    for (const char* gpu_only : {"--gpu", "--tf32", "--fp16", "--cuda-dequantize", "--cuda-int8"}) {
      if (args.has(gpu_only))
        args.set_error(std::string(gpu_only) + " applies to --device cuda only; this run is on the CPU");
    }
  }
}

bool stderr_is_terminal() {
#ifdef __EMSCRIPTEN__
  // A browser has no process: no terminal either.
  return EM_ASM_INT({ return typeof process == "object" && require("tty").isatty(2) ? 1 : 0; }) != 0;
#else
  return isatty(STDERR_FILENO) != 0;
#endif
}

bool stdin_is_terminal() {
#ifdef __EMSCRIPTEN__
  return EM_ASM_INT({ return typeof process == "object" && require("tty").isatty(0) ? 1 : 0; }) != 0;
#else
  return isatty(STDIN_FILENO) != 0;
#endif
}

bool stdout_is_terminal() {
#ifdef __EMSCRIPTEN__
  return EM_ASM_INT({ return typeof process == "object" && require("tty").isatty(1) ? 1 : 0; }) != 0;
#else
  return isatty(STDOUT_FILENO) != 0;
#endif
}

}  // namespace mt::cli
