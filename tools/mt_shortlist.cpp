// mt_shortlist: give a model a vocabulary shortlist (the target ids each
// source id may translate to), learnt from a parallel corpus, and inspect or
// remove it.
//
//   mt_shortlist build model.mtm --source train.en --target train.de -o out.mtm [--k 50] [--frequent 100]
//   mt_shortlist random model.mtm --k 50 -o out.mtm     (benchmarks)
//   mt_shortlist info model.mtm
//   mt_shortlist remove model.mtm -o out.mtm
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "cli_files.hpp"
#include "guarded_main.hpp"
#include "mt/mt.hpp"
#include "shortlist/lexical_table.hpp"

namespace {

using mt::cli::Option;
constexpr const char* kTool = "mt_shortlist";

constexpr const char* kSynopsis = R"(usage:
  mt_shortlist build MODEL --source FILE --target FILE -o OUT [options]
                                  learn which target ids each source id translates to (IBM Model 1
                                  over the model's own tokenizers) and write the model with that
                                  shortlist: each sentence is then translated over the rows of its
                                  source ids plus the most frequent target ids
  mt_shortlist random MODEL -o OUT [options]
                                  a shortlist of seeded random ids (benchmarks: the speed of a
                                  shortlist of that size, whatever its quality)
  mt_shortlist info MODEL         describe the model's shortlist
  mt_shortlist remove MODEL -o OUT
                                  the model without its shortlist)";

constexpr Option kOptions[] = {
    {"--source", nullptr, "FILE", "build: source sentences, one per line"},
    {"--target", nullptr, "FILE", "build: their translations, line by line"},
    {"--k", "-k", "N", "build, random: target ids kept per source id (default 50)"},
    {"--frequent", nullptr, "N", "build, random: target ids every sentence may use, the corpus' most\n"
                                 "frequent (default 100)"},
    {"--iterations", nullptr, "N", "build: IBM Model 1 EM iterations (default 5)"},
    {"--self-translations", nullptr, nullptr,
     "build: also learn from the model's own greedy translations of --source, so\n"
     "the rows cover what this model says as well as what the references say"},
    {"--threads", nullptr, "N", "build --self-translations: threads translating (default 1)"},
    {"--seed", nullptr, "N", "random: random seed (default 1)"},
    {"--output", "-o", "FILE", "build, random, remove: where to write the model"},
    {"--force", nullptr, nullptr, "build, random, remove: replace an existing output file"},
};

int fail(const std::string& message) { return mt::cli::fail(kTool, message); }
int usage(const std::string& message) { return mt::cli::usage_error(kTool, message); }

// The model written with `shortlist` (or none), a file libmt runs (cli::write_runnable_model).
mt::Expected<std::shared_ptr<const mt::Model>> write_model(const mt::Model& model,
                                                           std::optional<mt::ShortlistData> shortlist,
                                                           const std::string& output) {
  auto writer = mt::ModelWriter::from_model(model);
  if (!writer) return writer.status();
  writer->set_shortlist(std::move(shortlist));
  return mt::cli::write_runnable_model(*writer, output);
}

void describe(const std::string& path, const mt::Model& model) {
  const mt::ShortlistView* s = model.shortlist();
  if (s == nullptr) {
    std::printf("%s: no shortlist (translates over all %d target ids)\n", path.c_str(),
                model.config().target_vocab_size);
    return;
  }
  const int sources = model.config().source_vocab_size;
  std::printf("%s: shortlist of %zu target ids over %d source ids (%.1f a row, the longest %d), %zu frequent ids, "
              "of %d target ids\n",
              path.c_str(), s->targets.size(), sources, double(s->targets.size()) / double(sources), s->longest_row,
              s->frequent.size(), model.config().target_vocab_size);
  if (!s->method.empty()) std::printf("  made by: %.*s\n", int(s->method.size()), s->method.data());
}

// Both sides of the corpus through the model's tokenizers; pairs with an
// empty side are left out.
mt::Expected<std::vector<mt::shortlist::SentencePair>> read_corpus(const mt::Model& model, const std::string& source,
                                                                   const std::string& target) {
  auto sources = mt::cli::read_lines(source);
  if (!sources) return sources.status();
  auto targets = mt::cli::read_lines(target);
  if (!targets) return targets.status();
  if (sources->size() != targets->size()) {
    return mt::Status::error(mt::Errc::invalid_argument, "%s has %zu lines, %s has %zu: they must pair up",
                             source.c_str(), sources->size(), target.c_str(), targets->size());
  }
  std::vector<mt::shortlist::SentencePair> corpus;
  for (size_t i = 0; i < sources->size(); ++i) {
    mt::shortlist::SentencePair pair;
    if (mt::Status s = model.encode((*sources)[i], &pair.source); !s.ok()) {
      return mt::Status::error(s.code(), "%s line %zu: %s", source.c_str(), i + 1, s.message());
    }
    if (mt::Status s = model.encode_target((*targets)[i], &pair.target); !s.ok()) {
      return mt::Status::error(s.code(), "%s line %zu: %s", target.c_str(), i + 1, s.message());
    }
    if (!pair.source.empty() && !pair.target.empty()) corpus.push_back(std::move(pair));
  }
  if (corpus.empty()) return mt::Status::error(mt::Errc::invalid_argument, "the corpus has no sentence pair");
  return corpus;
}

// Each source of the corpus paired again with the model's own greedy
// translation of it (sources longer than the session allows are cut).
mt::Status add_self_translations(const std::shared_ptr<const mt::Model>& model, int threads,
                                 std::vector<mt::shortlist::SentencePair>* corpus) {
  mt::SessionOptions o;
  o.max_batch_size = 32;
  o.max_beam_size = 1;
  o.num_threads = threads;
  o.max_source_length = std::min(256, model->config().max_positions);
  o.max_target_length = std::min(256, model->config().max_positions);
  o.shortlist = false;
  auto session = mt::Session::create(model, o);
  if (!session) return session.status();
  mt::TranslateOptions options;
  options.truncate_long_sources = true;
  const size_t pairs = corpus->size();
  mt::Translations results;
  for (size_t b = 0; b < pairs; b += size_t(o.max_batch_size)) {
    std::vector<std::span<const int32_t>> sources;
    for (size_t i = b; i < std::min(pairs, b + size_t(o.max_batch_size)); ++i) sources.push_back((*corpus)[i].source);
    MT_RETURN_IF_ERROR(session->translate(sources, options, &results));
    for (size_t i = 0; i < sources.size(); ++i) {
      const std::span<const int32_t> tokens = results[i][0].tokens;
      if (tokens.empty()) continue;
      corpus->push_back({std::vector<int32_t>(sources[i].begin(), sources[i].end()),
                         std::vector<int32_t>(tokens.begin(), tokens.end())});
    }
  }
  return {};
}

int run(int argc, char** argv) {
  mt::cli::Args args(argc, argv, kOptions);
  const std::string help = mt::cli::help_text(kSynopsis, kOptions);
  if (const int rc = mt::cli::standard_options(kTool, args, help); rc >= 0) return rc;
  const auto& pos = args.positional();
  if (pos.empty()) return usage("a command is required: build, random, info or remove");
  const std::string& command = pos[0];
  if (command != "build" && command != "random" && command != "info" && command != "remove") {
    return usage("unknown command '" + command + "': build, random, info or remove");
  }
  if (pos.size() != 2) return usage(command + " takes one model file, not " + std::to_string(pos.size() - 1));
  const std::string& input = pos[1];
  // Which options each command reads.
  const std::vector<std::string> reads = command == "build"    ? std::vector<std::string>{"--source", "--target", "--k", "--frequent", "--iterations", "--self-translations", "--threads", "--output", "--force"}
                                         : command == "random" ? std::vector<std::string>{"--k", "--frequent", "--seed", "--output", "--force"}
                                         : command == "remove" ? std::vector<std::string>{"--output", "--force"}
                                                               : std::vector<std::string>{};
  for (const Option& o : kOptions) {
    if (args.has(o.name) && std::find(reads.begin(), reads.end(), o.name) == reads.end())
      return usage(std::string("option ") + o.name + " does not apply to '" + command + "'");
  }
  const int k = args.get_int("--k", 50, 1, 1 << 24);
  const int frequent = args.get_int("--frequent", 100, 0, 1 << 24);
  const int iterations = args.get_int("--iterations", 5, 1, 100);
  const int seed = args.get_int("--seed", 1, 0, INT32_MAX);
  const int threads = args.get_int("--threads", 1, 1, 256);
  if (!args.ok()) return usage(args.error());
  const std::string output = args.get("--output", "");
  if (command != "info") {
    if (output.empty()) return usage(command + " needs -o FILE");
    if (std::string why = mt::cli::unwritable_file(output, args.has("--force")); !why.empty()) return fail(why);
  }
  if (command == "build" && (!args.has("--source") || !args.has("--target"))) {
    return usage("build needs --source FILE and --target FILE (a parallel corpus)");
  }
  auto loaded = mt::Model::load(input);
  if (!loaded) return fail(loaded.status().message());
  const mt::Model& model = **loaded;
  const mt::ModelConfig& cfg = model.config();
  if (command == "info") {
    describe(input, model);
    return 0;
  }
  if (command == "remove") {
    if (auto written = write_model(model, std::nullopt, output); !written) return fail(written.status().message());
    std::printf("%s -> %s (no shortlist)\n", input.c_str(), output.c_str());
    return 0;
  }
  mt::ShortlistData shortlist;
  if (command == "random") {
    shortlist = mt::shortlist::random_shortlist(cfg.source_vocab_size, cfg.target_vocab_size, k, frequent,
                                                uint64_t(seed));
    shortlist.method = "random k=" + std::to_string(k) + " frequent=" + std::to_string(frequent) +
                       " seed=" + std::to_string(seed);
  } else {
    if (!model.has_vocabulary()) return fail(input + " has no vocabulary: build reads text through it");
    auto corpus = read_corpus(model, args.get("--source", ""), args.get("--target", ""));
    if (!corpus) return fail(corpus.status().message());
    const size_t pairs = corpus->size();
    if (args.has("--self-translations")) {
      if (mt::Status s = add_self_translations(loaded.value(), threads, &corpus.value()); !s.ok()) return fail(s.message());
    }
    const auto table = mt::shortlist::learn_ibm1(*corpus, cfg.source_vocab_size, iterations);
    // One vocabulary for both sides: a source piece may be copied as it is.
    const bool copies = model.target_vocabulary() == nullptr && cfg.source_vocab_size == cfg.target_vocab_size;
    shortlist = mt::shortlist::choose_shortlist(table, *corpus, cfg.source_vocab_size, cfg.target_vocab_size, k,
                                                frequent, copies);
    shortlist.method = "ibm1 k=" + std::to_string(k) + " frequent=" + std::to_string(frequent) + " iterations=" +
                       std::to_string(iterations) + (copies ? " copies" : "") +
                       (args.has("--self-translations") ? " self-translations" : "") + " (" + std::to_string(pairs) +
                       " sentence pairs)";
  }
  auto written = write_model(model, std::move(shortlist), output);
  if (!written) return fail(written.status().message());
  describe(output, **written);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mt::cli::guarded_main(kTool, argc, argv, run); }
