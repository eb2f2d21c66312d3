// mt_quantize: fp32 libmt model -> int8 libmt model.
//
//   mt_quantize model.mtm --calibration sentences.txt [-o model.int8.mtm] [--method mse] ...
//
// Linear layers and embeddings become int8 with one scale per output row;
// the inputs of the int8 layers are quantized with ranges calibrated by
// translating the calibration text with the fp32 model (or per row at run
// time with --activations dynamic). Prints a per-layer report and how often
// the int8 model's translations of the calibration text equal the fp32 ones.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/atomic_file.hpp"
#include "cli_args.hpp"
#include "cli_files.hpp"
#include "guarded_main.hpp"
#include "eval/scoring.hpp"
#include "quantizer.hpp"

namespace {

using namespace mt;
using namespace mt::quantize;

using cli::Option;
constexpr const char* kTool = "mt_quantize";

constexpr const char* kSynopsis = R"(usage: mt_quantize MODEL --calibration FILE [options]

Writes an int8 copy of the fp32 model MODEL: every linear layer and the
embeddings as int8 with one scale per output row; LayerNorm and biases stay
fp32. Activations entering the int8 layers are quantized with ranges
calibrated on FILE (one sentence per line, e.g. 1000 lines of training text;
token ids per line for a model without a vocabulary), or per row at run time.)";

constexpr Option kOptions[] = {
    {"--output", "-o", "FILE", "int8 model to write (default: MODEL with .mtm replaced by .int8.mtm)"},
    {"--force", nullptr, nullptr, "replace an existing output file"},
    {"--calibration", "-c", "FILE", "calibration text (required)"},
    {"--activations", nullptr, "MODE", "calibrated (default) or dynamic (per-row ranges at run time)"},
    {"--method", nullptr, "METHOD",
     "calibration: max, percentile [P], mse, entropy (default mse), or auto: the\n"
     "one with the best BLEU on --dev-src/--dev-ref"},
    {"--dev-src", nullptr, "FILE", "dev source for --method auto (never the test set)"},
    {"--dev-ref", nullptr, "FILE", "dev reference for --method auto", false, "--dev-tgt"},
    {"--dev-tokenize", nullptr, "TOK", "BLEU tokenization for auto: 13a (default), zh or none"},
    {"--keep-fp32", nullptr, "SCOPE",
     "keep layers whose name starts with SCOPE in fp32, e.g. output,\n"
     "decoder/layer_3, encoder/layer_0/ffn (repeatable)",
     true},
    {"--fp32-embeddings", nullptr, nullptr, "keep the embeddings fp32 (with tied embeddings, the output layer too)"},
    {"--calibration-lines", nullptr, "N", "calibrate on the first N lines of the calibration text (default: all)",
     false, "--max-sentences"},
    {"--threads", nullptr, "N", "threads for the translations (default 1, as every tool)"},
    {"--report", nullptr, "FILE", "also write the per-layer report as TSV"},
};

constexpr const char* kEpilog = "Nothing is written unless the whole run succeeds; an existing output needs --force.\n";

int fail(const std::string& message) { return cli::fail(kTool, message); }
int usage(const std::string& message) { return cli::usage_error(kTool, message); }

Progress progress_bar() {
  if (!cli::stderr_is_terminal()) return {};
  return [](const char* phase, size_t done, size_t total) {
    const int width = 30, filled = total ? int(width * done / total) : width;
    std::fprintf(stderr, "\r%-20s [%s%s] %zu/%zu", phase, std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
  };
}

void print_report(const std::vector<LayerReport>& layers, bool calibrated, std::FILE* out) {
  std::fprintf(out, "%-42s %-5s %10s %10s", "layer", "dtype", "min", "max");
  if (calibrated) std::fprintf(out, " %10s %10s %9s %4s %8s", "range lo", "range hi", "scale", "zero", "clipped");
  std::fprintf(out, "\n");
  for (const LayerReport& r : layers) {
    std::fprintf(out, "%-42s %-5s %10.4g %10.4g", r.layer.c_str(), r.int8 ? "int8" : "fp32", r.min, r.max);
    if (calibrated && r.int8) {
      std::fprintf(out, " %10.4g %10.4g %9.3g %4d %7.4f%%", r.range.lo, r.range.hi, r.input.scale, r.input.zero_point,
                   100.0 * r.clipped);
    }
    std::fprintf(out, "\n");
  }
}

Status write_report_tsv(const std::string& path, const std::vector<LayerReport>& layers) {
  std::ofstream out(path);
  if (!out) return Status::error(Errc::io_error, "cannot write '%s'", path.c_str());
  out << "layer\tdtype\tmin\tmax\trange_lo\trange_hi\tscale\tzero_point\tclipped\n";
  for (const LayerReport& r : layers) {
    out << r.layer << '\t' << (r.int8 ? "int8" : "fp32") << '\t' << r.min << '\t' << r.max << '\t' << r.range.lo << '\t'
        << r.range.hi << '\t' << r.input.scale << '\t' << r.input.zero_point << '\t' << r.clipped << '\n';
  }
  return out ? Status{} : Status::error(Errc::io_error, "cannot write '%s'", path.c_str());
}

// --method auto: every method (and dynamic activations) scored by dev BLEU.
Expected<QuantizeOptions> choose_by_dev_bleu(const Model& fp32, const Calibration& calibration, QuantizeOptions options,
                                             const std::vector<std::string>& dev_src,
                                             const std::vector<std::string>& dev_ref, eval::BleuOptions bleu) {
  std::vector<QuantizeOptions> candidates;
  for (const char* m : {"max", "percentile 99.9", "percentile 99.99", "percentile 99.999", "mse", "entropy"}) {
    options.activations = ActivationScales::calibrated;
    options.method = MethodChoice::parse(m).value();
    candidates.push_back(options);
  }
  options.activations = ActivationScales::dynamic_per_row;
  candidates.push_back(options);
  double best_bleu = -1;
  QuantizeOptions best = candidates.front();
  for (const QuantizeOptions& c : candidates) {
    auto bytes = build_int8_model(fp32, calibration, c);
    if (!bytes) return bytes.status();
    auto model = load_model_bytes(*bytes);
    if (!model) return model.status();
    auto hyp = translate_all(*model, dev_src, c);
    if (!hyp) return hyp.status();
    auto score = eval::corpus_bleu(*hyp, dev_ref, bleu);
    if (!score) return score.status();
    const std::string name = c.activations == ActivationScales::calibrated ? c.method.name() : "dynamic per-row";
    std::fprintf(stderr, "mt_quantize: dev BLEU %.2f with %s\n", score->score, name.c_str());
    if (score->score > best_bleu) best_bleu = score->score, best = c;
  }
  return best;
}

int run(int argc, char** argv) {
  cli::Args args(argc, argv, kOptions);
  const std::string help = cli::help_text(kSynopsis, kOptions, kEpilog);
  if (const int rc = cli::standard_options(kTool, args, help); rc >= 0) return rc;
  QuantizeOptions options;
  options.threads = args.get_int("--threads", 1, 1, 256);
  const int max_sentences = args.get_int("--calibration-lines", 0, 0, 100000000);
  const std::string activations = args.get_choice("--activations", {"calibrated", "dynamic"}, "calibrated");
  const std::string tokenize = args.get_choice("--dev-tokenize", {"13a", "zh", "none"}, "13a");
  if (!args.ok()) return usage(args.error());
  if (args.positional().size() != 1) {
    return usage(args.positional().empty() ? "a model file is required"
                                           : "one model file, not " + std::to_string(args.positional().size()));
  }
  const std::string input = args.positional()[0];
  std::string output = args.get("--output", "");
  if (output.empty()) {
    const bool mtm = input.size() > 4 && input.compare(input.size() - 4, 4, ".mtm") == 0;
    output = (mtm ? input.substr(0, input.size() - 4) : input) + ".int8.mtm";
  }
  // "./m.mtm" names "m.mtm" too: the rename would replace the fp32 model.
  std::error_code same_error;
  if (output == input || std::filesystem::equivalent(input, output, same_error)) {
    return usage("the output would overwrite the input model");
  }
  const std::string calibration_path = args.get("--calibration", "");
  if (calibration_path.empty()) return usage("--calibration FILE is required");
  if (activations == "dynamic") options.activations = ActivationScales::dynamic_per_row;
  const std::string method = args.get("--method", "mse");
  const bool auto_method = method == "auto";
  if (!auto_method) {
    auto m = MethodChoice::parse(method);
    if (!m) return usage(std::string(m.status().message()) + ", or auto");
    options.method = *m;
  }
  if (auto_method && (!args.has("--dev-src") || !args.has("--dev-ref"))) {
    return usage("--method auto needs --dev-src and --dev-ref");
  }
  eval::BleuOptions bleu;
  if (tokenize == "zh") bleu.tokenizer = eval::BleuTokenizer::zh;
  if (tokenize == "none") bleu.tokenizer = eval::BleuTokenizer::none;
  // Every file checked before the calibration's minutes, not after.
  for (const std::string& path : {input, calibration_path}) {
    if (std::string why = cli::unreadable_file(path); !why.empty()) return fail(why);
  }
  if (auto_method) {
    for (const char* dev : {"--dev-src", "--dev-ref"}) {
      if (std::string why = cli::unreadable_file(args.get(dev, "")); !why.empty()) return fail(why);
    }
  }
  if (std::string why = cli::unwritable_file(output, args.has("--force")); !why.empty()) return fail(why);
  if (args.has("--report")) {
    if (std::string why = cli::unwritable_file(args.get("--report", ""), true); !why.empty()) return fail(why);
  }
  options.keep_fp32 = args.all("--keep-fp32");
  options.fp32_embeddings = args.has("--fp32-embeddings");

  const auto start = std::chrono::steady_clock::now();
  LoadOptions load;
  load.check_weights_finite = true;  // NaN or Inf weights: refused with the tensor's name
  auto model = Model::load(input, load);
  if (!model) return fail(model.status().message());
  if ((*model)->quantization().int8) return fail(input + " is already an int8 model");
  auto lines = cli::read_lines(calibration_path, max_sentences > 0 ? size_t(max_sentences) : SIZE_MAX);
  if (!lines) return fail(lines.status().message());
  if (lines->empty()) return fail("calibration text '" + calibration_path + "' is empty");

  const Progress progress = progress_bar();
  auto calibration = calibrate(*model, *lines, options, progress);
  if (!calibration) return fail(calibration.status().message());
  const double calibration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (auto_method) {
    auto dev_src = cli::read_lines(args.get("--dev-src", ""));
    auto dev_ref = cli::read_lines(args.get("--dev-ref", ""));
    if (!dev_src) return fail(dev_src.status().message());
    if (!dev_ref) return fail(dev_ref.status().message());
    if (dev_src->empty() || dev_src->size() != dev_ref->size()) {
      return fail("--dev-src and --dev-ref must have the same, non-zero number of lines");
    }
    auto chosen = choose_by_dev_bleu(**model, *calibration, options, *dev_src, *dev_ref, bleu);
    if (!chosen) return fail(chosen.status().message());
    options = *chosen;
  }

  std::vector<LayerReport> report;
  auto bytes = build_int8_model(**model, *calibration, options, &report);
  if (!bytes) return fail(bytes.status().message());
  auto int8 = load_model_bytes(*bytes);  // the file as libmt will read it
  if (!int8) return fail("the int8 model does not load: " + std::string(int8.status().message()));
  auto int8_translations = translate_all(*int8, *lines, options, progress, "checking");
  if (!int8_translations) return fail(int8_translations.status().message());
  const Agreement agree = agreement(calibration->fp32_translations, *int8_translations);
  if (Status s = detail::write_file_atomically(output, *bytes); !s.ok()) return fail(s.message());
  if (args.has("--report")) {
    if (Status s = write_report_tsv(args.get("--report", ""), report); !s.ok()) return fail(s.message());
  }

  const bool calibrated = options.activations == ActivationScales::calibrated;
  print_report(report, calibrated, stderr);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "mt_quantize: %s -> %s (%.1f MB -> %.1f MB, %.1f%%), activations %s\n"
               "mt_quantize: %zu calibration sentences; int8 vs fp32 greedy translations: %.1f%% identical, "
               "%.1f%% of tokens agree\n"
               "mt_quantize: %.1f s (calibration %.1f s)\n",
               input.c_str(), output.c_str(), double((*model)->file_size()) / 1e6, double(bytes->size()) / 1e6,
               100.0 * double(bytes->size()) / double((*model)->file_size()),
               calibrated ? ("calibrated, " + options.method.name()).c_str() : "dynamic per-row", lines->size(),
               100.0 * agree.sentence_rate(), 100.0 * agree.token_rate(), seconds, calibration_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mt::cli::guarded_main(kTool, argc, argv, run); }
