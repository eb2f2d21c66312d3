// mt_model: create random-weight models for tests and benchmarks, and describe model files.
//
//   mt_model random --config small -o small.mtm [--seed 1] [--pre-norm] [--gelu | --swish] [--untied]
//   mt_model info model.mtm
//   mt_model upgrade old.mtm -o new.mtm
//   mt_model check model.mtm
//   mt_model average run/epoch-*.mtm -o averaged.mtm
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "support/atomic_file.hpp"
#include "cli_args.hpp"
#include "cli_files.hpp"
#include "guarded_main.hpp"
#include "model_average.hpp"
#include "mt/kernels.h"  // unpack_weights_*
#include "mt/mt.hpp"
#include "vocabulary_file.hpp"

namespace {

using mt::cli::Option;
constexpr const char* kTool = "mt_model";

constexpr const char* kSynopsis = R"(usage:
  mt_model random --config NAME -o FILE [options]   write a model with seeded random weights
  mt_model info FILE                                describe a model file
  mt_model upgrade FILE -o OUT                      rewrite a model in the current format version
  mt_model set FILE KEY=VALUE... -o OUT             the same model with these metadata entries (e.g.
                                                    alignment_layer=2: the decoder layer whose
                                                    attention aligns words, measured for the model)
  mt_model check FILE                               verify a model file, reading every weight (NaN, Inf)
  mt_model average FILE FILE... -o OUT              the mean of the weights of fp32 models of one shape and
                                                    vocabulary (checkpoint averaging: a run's last epochs)
  mt_model vocab extract FILE -o OUT                write the model's SentencePiece vocabulary (.model))";

constexpr Option kOptions[] = {
    {"--output", "-o", "FILE", "random, upgrade, set, average, vocab extract: where to write"},
    {"--force", nullptr, nullptr, "random, upgrade, set, average, vocab extract: replace an existing output file"},
    {"--config", nullptr, "NAME", "random: base, small or tiny (mt::ModelConfig::preset)"},
    {"--seed", nullptr, "N", "random: random seed (default 1)"},
    {"--pre-norm", nullptr, nullptr, "random: LayerNorm before each sublayer instead of after"},
    {"--gelu", nullptr, nullptr, "random: GELU feed-forward activation instead of ReLU"},
    {"--swish", nullptr, nullptr, "random: swish (SiLU) feed-forward activation instead of ReLU (format version 3)"},
    {"--untied", nullptr, nullptr, "random: separate source, target and output embeddings"},
    {"--max-positions", nullptr, "N", "random: longest sentence the model accepts (default 1024)"},
    {"--vocab", nullptr, "FILE",
     "random: embed this vocabulary (a SentencePiece .model, or a libmt model\n"
     "whose vocabulary is taken); the vocabulary sizes and special ids follow it"},
};

int fail(const std::string& message) { return mt::cli::fail(kTool, message); }
int usage(const std::string& message) { return mt::cli::usage_error(kTool, message); }

// Reads a vocabulary and points the config's sizes and special ids at it.
mt::Status apply_vocabulary(const std::string& path, mt::ModelConfig* config, mt::VocabularyData* vocab) {
  auto v = mt::cli::read_vocabulary(path);
  if (!v) return v.status();
  *vocab = std::move(v.value());
  const mt::Status used = config->use_vocabulary(*vocab);
  if (!used.ok()) return mt::Status::error(used.code(), "%s: %s", path.c_str(), used.message());
  return {};
}

// Options given to a command that does not read them.
std::string stray_option(const mt::cli::Args& args, const char* command, std::initializer_list<const char*> used) {
  for (const Option& o : kOptions) {
    if (!args.has(o.name)) continue;
    if (std::find_if(used.begin(), used.end(), [&](const char* u) { return std::string(u) == o.name; }) == used.end())
      return std::string("option ") + o.name + " does not apply to '" + command + "'";
  }
  return "";
}

// upgrade and vocab extract: only -o and --force apply; the output must be
// writable. -1 to go on with *output, else the exit code.
int checked_output(const mt::cli::Args& args, const char* command, std::string* output) {
  if (std::string why = stray_option(args, command, {"--output", "--force"}); !why.empty()) return usage(why);
  *output = args.get("--output", "");
  if (output->empty()) return usage(std::string(command) + " needs -o FILE");
  if (std::string why = mt::cli::unwritable_file(*output, args.has("--force")); !why.empty()) return fail(why);
  return -1;
}

// Rewrites a model's tensors, vocabulary, metadata and quantization with
// this libmt's writer: the same model in the current format version (int8
// tensors unpacked and packed again, byte for byte the same).
int upgrade(mt::cli::Args& args, const std::string& input) {
  std::string output;
  if (const int rc = checked_output(args, "upgrade", &output); rc >= 0) return rc;
  auto model = mt::Model::load(input);
  if (!model) return fail(model.status().message());
  const mt::Model& m = **model;
  auto writer = mt::ModelWriter::from_model(m);
  if (!writer) return fail(writer.status().message());
  if (mt::Status s = writer->write(output); !s.ok()) return fail(s.message());
  std::printf("%s (format version %u) -> %s (format version %u)\n", input.c_str(), m.format_version(), output.c_str(),
              writer->format_version());
  return 0;
}

// The mean of the models' weights (average_models: the last file's metadata,
// so a run's files go oldest first, as average/step-*.mtm sort).
int average(mt::cli::Args& args, std::span<const std::string> inputs) {
  std::string output;
  if (const int rc = checked_output(args, "average", &output); rc >= 0) return rc;
  if (inputs.size() < 2) return usage("average takes two model files or more");
  std::vector<std::shared_ptr<const mt::Model>> models;
  for (const std::string& input : inputs) {
    auto model = mt::Model::load(input);
    if (!model) return fail(model.status().message());
    models.push_back(std::move(model.value()));
  }
  auto writer = mt::cli::average_models(models);
  if (!writer) return fail(writer.status().message());
  if (auto written = mt::cli::write_runnable_model(*writer, output); !written) return fail(written.status().message());
  std::printf("%zu models averaged -> %s\n", models.size(), output.c_str());
  return 0;
}

// The model with metadata entries added or replaced (KEY=VALUE each).
int set_metadata(mt::cli::Args& args, const std::string& input, std::span<const std::string> entries) {
  std::string output;
  if (const int rc = checked_output(args, "set", &output); rc >= 0) return rc;
  if (entries.empty()) return usage("set needs KEY=VALUE entries after the model file");
  auto model = mt::Model::load(input);
  if (!model) return fail(model.status().message());
  auto writer = mt::ModelWriter::from_model(**model);
  if (!writer) return fail(writer.status().message());
  mt::ModelMetadata metadata = writer->metadata();
  for (const std::string& entry : entries) {
    const size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string::npos) return usage("'" + entry + "': expected KEY=VALUE");
    const std::string key = entry.substr(0, eq), value = entry.substr(eq + 1);
    auto found = std::find_if(metadata.extra.begin(), metadata.extra.end(), [&](const auto& kv) { return kv.key == key; });
    if (found != metadata.extra.end()) {
      found->value = value;
    } else {
      metadata.extra.push_back({key, value});
    }
  }
  writer->set_metadata(metadata);
  // The entries must leave a model libmt can run.
  if (auto written = mt::cli::write_runnable_model(*writer, output); !written) return fail(written.status().message());
  std::printf("%s -> %s (%zu metadata entries set)\n", input.c_str(), output.c_str(), entries.size());
  return 0;
}

int random_model(mt::cli::Args& args) {
  const std::string output = args.get("--output", "");
  const int seed = args.get_int("--seed", 1, 0, 2147483647);
  const int max_positions = args.get_int("--max-positions", 1024, 2, 65536);
  if (!args.ok()) return usage(args.error());
  if (!args.has("--config")) return usage("random needs --config (base, small or tiny)");
  if (output.empty()) return usage("random needs -o FILE");
  if (args.has("--gelu") && args.has("--swish")) return usage("--gelu and --swish: choose one activation");
  auto config = mt::ModelConfig::preset(args.get("--config", ""));
  if (!config) return usage(config.status().message());
  if (std::string why = mt::cli::unwritable_file(output, args.has("--force")); !why.empty()) return fail(why);
  config->pre_norm = args.has("--pre-norm");
  if (args.has("--gelu")) config->activation = mt::Activation::gelu;
  if (args.has("--swish")) config->activation = mt::Activation::swish;
  if (args.has("--untied")) config->shared_embeddings = config->tied_output = false;
  config->max_positions = max_positions;
  mt::VocabularyData vocab;
  if (args.has("--vocab")) {
    const mt::Status s = apply_vocabulary(args.get("--vocab", ""), &config.value(), &vocab);
    if (!s.ok()) return fail(s.message());
  }
  auto writer = mt::random_model_writer(config.value(), uint64_t(seed));
  if (!writer) return fail(writer.status().message());
  if (vocab.type != mt::VocabularyType::none) writer->set_vocabulary(vocab);
  const mt::Status status = writer->write(output);
  if (!status.ok()) return fail(status.message());
  std::printf("wrote %s: %lld parameters\n", output.c_str(), static_cast<long long>(config->parameter_count()));
  return 0;
}

int info(const std::string& path) {
  auto model = mt::Model::load(path);
  if (!model) return fail(model.status().message());
  const mt::ModelConfig& c = (*model)->config();
  const mt::ModelMetadata& m = (*model)->metadata();
  const mt::ModelQuantization& q = (*model)->quantization();
  std::string precision = "fp32";
  if (q.int8) {
    precision =
        q.activations == mt::ActivationScales::calibrated
            ? "int8 weights, calibrated activations" + (q.method.empty() ? std::string() : " (" + q.method + ")")
            : "int8 weights, activations quantized per row at run time";
  }
  std::printf("file            %s (%zu bytes, format version %u)\n", path.c_str(), (*model)->file_size(),
              (*model)->format_version());
  std::printf("precision       %s\n", precision.c_str());
  std::printf("layers          %d encoder + %d decoder\n", c.encoder_layers, c.decoder_layers);
  std::printf("d_model         %d, heads %d, d_ff %d\n", c.d_model, c.heads, c.d_ff);
  std::printf("vocabulary      source %d, target %d\n", c.source_vocab_size, c.target_vocab_size);
  std::printf("max positions   %d\n", c.max_positions);
  std::printf("norm            %s, activation %s, epsilon %g\n", c.pre_norm ? "pre" : "post",
              c.activation == mt::Activation::gelu    ? "gelu"
              : c.activation == mt::Activation::swish ? "swish"
                                                      : "relu",
              double(c.layer_norm_epsilon));
  std::printf("embeddings      %s, output %s\n", c.shared_embeddings ? "shared" : "separate",
              c.tied_output ? "tied" : "separate");
  std::printf("special ids     pad %d, bos %d, eos %d, unk %d\n", c.pad_id, c.bos_id, c.eos_id, c.unk_id);
  std::printf("decoding        starts from id %d, sources %s EOS, embeddings x %g\n", c.start_id(),
              c.source_eos ? "end in" : "without", double(c.embedding_multiplier()));
  std::printf("positions       %s\n", c.stored_positions ? "stored table" : "sinusoid (computed, interleaved)");
  if (!c.suppressed_ids.empty()) {
    std::string ids;
    for (size_t i = 0; i < c.suppressed_ids.size() && i < 8; ++i)
      ids += (i ? ", " : "") + std::to_string(c.suppressed_ids[i]);
    std::printf("never emitted   %s%s\n", ids.c_str(), c.suppressed_ids.size() > 8 ? ", ..." : "");
  }
  std::printf("parameters      %lld in %zu tensors\n", static_cast<long long>(c.parameter_count()),
              (*model)->tensors().size());
  if (const mt::VocabularyData* v = (*model)->vocabulary()) {
    std::printf("tokenizer       SentencePiece %s, %zu pieces, %s normalization%s\n",
                v->type == mt::VocabularyType::bpe ? "bpe" : "unigram", v->pieces.size(),
                v->normalization_name.empty() ? "no" : v->normalization_name.c_str(),
                v->byte_fallback ? ", byte fallback" : "");
    if (!v->model_ids.empty())
      std::printf("                pieces mapped to model ids (%zu unknown texts with ids of their own)\n",
                  v->unknown_ids.size());
    if (const mt::VocabularyData* t = (*model)->target_vocabulary())
      std::printf("target decoding %zu pieces of their own (model id order)\n", t->pieces.size());
  } else {
    std::printf("tokenizer       none (translates token ids)\n");
  }
  if (const mt::ShortlistView* s = (*model)->shortlist()) {
    std::printf("shortlist       %zu target ids over %d source ids (longest row %d), %zu frequent%s%.*s\n",
                s->targets.size(), c.source_vocab_size, s->longest_row, s->frequent.size(),
                s->method.empty() ? "" : ": ", int(s->method.size()), s->method.data());
  }
  if (!m.tool.empty()) {
    std::printf("written by      %s%s%s\n", m.tool.c_str(), m.tool_version.empty() ? "" : " ", m.tool_version.c_str());
  }
  if (!m.source_language.empty() || !m.target_language.empty())
    std::printf("languages       %s -> %s\n", m.source_language.c_str(), m.target_language.c_str());
  for (const mt::KeyValue& kv : m.extra) {
    // Long keys (calibration_sentences) get their own line rather than breaking the column.
    if (kv.key.size() < 16) {
      std::printf("%-15s %s\n", kv.key.c_str(), kv.value.c_str());
    } else {
      std::printf("%s\n                %s\n", kv.key.c_str(), kv.value.c_str());
    }
  }
  return 0;
}

// The model's vocabulary as a SentencePiece .model file (what mt_vocab
// writes, SentencePiece and the trainer read).
int extract_vocabulary(mt::cli::Args& args, const std::string& input) {
  std::string output;
  if (const int rc = checked_output(args, "vocab extract", &output); rc >= 0) return rc;
  auto model = mt::Model::load(input);
  if (!model) return fail(model.status().message());
  const mt::VocabularyData* v = (*model)->vocabulary();
  if (v == nullptr) return fail(input + " has no vocabulary (it translates token ids)");
  if (const mt::Status s = mt::detail::write_file_atomically(output, v->to_sentencepiece()); !s.ok()) {
    return fail(s.message());
  }
  std::printf("wrote %s: %zu pieces (%s)\n", output.c_str(), v->pieces.size(),
              v->type == mt::VocabularyType::bpe ? "bpe" : "unigram");
  if (!v->model_ids.empty()) {
    std::printf(
        "note: the model maps these pieces to ids of its own (a converted model's vocabulary); the file is\n"
        "      its SentencePiece tokenizer, as the source framework shipped it\n");
  }
  return 0;
}

// Everything load verifies, plus every fp32 weight (which load leaves unread).
int check(const std::string& path) {
  mt::LoadOptions options;
  options.check_weights_finite = true;
  auto model = mt::Model::load(path, options);
  if (!model) return fail(model.status().message());
  std::printf("%s: ok (format version %u, %zu tensors, every weight finite)\n", path.c_str(),
              (*model)->format_version(), (*model)->tensors().size());
  return 0;
}

int run(int argc, char** argv) {
  mt::cli::Args args(argc, argv, kOptions);
  const std::string help = mt::cli::help_text(kSynopsis, kOptions);
  if (const int rc = mt::cli::standard_options(kTool, args, help); rc >= 0) return rc;
  const auto& pos = args.positional();
  if (pos.empty()) return usage("a command is required: random, info, upgrade, check, set, average or vocab extract");
  const std::string& command = pos[0];
  const size_t files = pos.size() - 1;
  if (command == "random") {
    if (files != 0) return usage("random takes no file argument ('" + pos[1] + "'): -o FILE names the output");
    return random_model(args);
  }
  if (command == "vocab") {
    if (files == 0 || pos[1] != "extract") return usage("vocab takes 'extract MODEL -o FILE'");
    if (files != 2) return usage("vocab extract takes one model file, not " + std::to_string(files - 1));
    return extract_vocabulary(args, pos[2]);
  }
  if (command == "average") return average(args, std::span<const std::string>(pos).subspan(1));
  if (command == "set") {
    if (files == 0) return usage("set takes a model file and KEY=VALUE entries");
    return set_metadata(args, pos[1], std::span<const std::string>(pos).subspan(2));
  }
  if (command != "info" && command != "upgrade" && command != "check") {
    return usage("unknown command '" + command + "': random, info, upgrade, check, set, average or vocab extract");
  }
  if (files != 1) {
    return usage(command + " takes one model file, not " + std::to_string(files) +
                 (files > 1 ? " (one at a time)" : ""));
  }
  if (command == "upgrade") return upgrade(args, pos[1]);
  if (std::string why = stray_option(args, command.c_str(), {}); !why.empty()) return usage(why);
  return command == "info" ? info(pos[1]) : check(pos[1]);
}

}  // namespace

int main(int argc, char** argv) { return mt::cli::guarded_main(kTool, argc, argv, run); }
