// mt_train: trains a Transformer on a parallel corpus with libmt's own
// autograd and writes libmt model files.
//
//   mt_train --train-src train.en --train-tgt train.de --dev-src val.en --dev-tgt val.de
//            --config tiny --vocab-size 8000 --out runs/en-de --time-budget 80
//
// Every epoch: dev loss, dev BLEU from translating the dev set with libmt
// itself from the exported model (so every checkpoint is known to load and
// translate), the best model by dev BLEU kept, a checkpoint to resume from.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "guarded_main.hpp"
#include "cli_args.hpp"
#include "cli_files.hpp"
#include "vocabulary_file.hpp"
#include "mt/version.hpp"
#include "eval/scoring.hpp"
#include "mt/mt.hpp"
#include "data/subword_sampling.hpp"
#include "trainer.hpp"
#include "model_average.hpp"
#include "vocab/vocab_train.hpp"
#include "support/atomic_file.hpp"
#include "support/content_hash.hpp"
#include "support/mapped_file.hpp"

namespace {

using mt::cli::Option;
constexpr const char* kTool = "mt_train";

constexpr const char* kSynopsis =
    R"(usage: mt_train --train-src FILE --train-tgt FILE --dev-src FILE --dev-ref FILE --out DIR [options]

Trains an encoder-decoder Transformer and writes, in DIR:
  model_best.mtm   the model with the best dev BLEU so far (libmt model file with vocabulary)
  model_last.mtm   the model at the end of the last epoch
  checkpoint.bin   weights, optimizer, dropout stream and data position (--resume continues exactly)
  vocab.model      the SentencePiece vocabulary (trained unless --vocab or --init is given)
  init.txt         with --init: the model file the run started from (--resume reads it)
  run.txt          the options that define the run: its model, vocabulary, training data and
                   their order (--resume refuses others; the rest may change)
  train.tsv        step, epoch, loss, ppl, lr, grad_norm, tokens/s, elapsed_s (every --log-every steps)
  dev.tsv          step, epoch, dev_loss, dev_ppl, dev_bleu, dev_chrf, elapsed_s (every epoch)
Plot the logs with scripts/plot_training.sh DIR. Every option is checked
before any work; an existing DIR needs --resume (continue) or --force (start over).)";

constexpr Option kOptions[] = {
    {"--train-src", nullptr, "FILE", "training source text, one sentence per line"},
    {"--train-tgt", nullptr, "FILE", "training target text, aligned with it"},
    {"--dev-src", nullptr, "FILE", "dev source text (model selection)"},
    {"--dev-ref", nullptr, "FILE", "dev reference translations, aligned with it", false, "--dev-tgt"},
    {"--out", nullptr, "DIR", "the run folder (required)", false, "-o --output"},
    {"--resume", nullptr, nullptr, "continue the run in DIR from DIR/checkpoint.bin"},
    {"--init", nullptr, "MODEL",
     "fine-tune: start from this libmt model file's weights, shape and vocabulary\n"
     "(fp32; the shape and vocabulary options do not apply)"},
    {"--force", nullptr, nullptr,
     "start over in an existing DIR: the old run's files (those above, DIR/average/) are removed\n"
     "first; other files stay"},
    {"--src-lang", nullptr, "CODE", "for the model's metadata (default: the file's extension)"},
    {"--tgt-lang", nullptr, "CODE", "(default: the file's extension)"},
    {"--vocab", nullptr, "FILE",
     "an existing vocabulary: a SentencePiece .model (pad 0, bos 1, eos 2, unk 3)\n"
     "or a libmt model's"},
    {"--vocab-size", nullptr, "N", "otherwise train a joint one of N pieces (default 8000)", false, "--size"},
    {"--vocab-type", nullptr, "T", "unigram or bpe (default unigram)", false, "--type"},
    {"--character-coverage", nullptr, "X",
     "share of characters the vocabulary covers (default 1.0; 0.9995 for Chinese)"},
    {"--byte-fallback", nullptr, nullptr, "spell uncovered characters as UTF-8 byte pieces"},
    {"--normalization", nullptr, "NAME",
     "the vocabulary's text normalization: nmt_nfkc (default), nfkc, nmt_nfkc_cf, nfkc_cf, identity,\n"
     "or nmt_nfkc_cjk: nmt_nfkc keeping full-width punctuation (NFKC folds ，？！ to ASCII,\n"
     "which a Chinese target then cannot write)"},
    {"--max-train-length", nullptr, "N", "drop training pairs longer than N tokens on either side (default 100)", false,
     "--max-length"},
    {"--subword-alpha", nullptr, "X",
     "subword regularization (Kudo 2018): every epoch segments the training text anew, drawing each\n"
     "side's unigram segmentation with probability P^X over all of them (smaller X: more varied\n"
     "and longer: 0.1 doubles the pieces of Multi30k's text, 0.3 adds 12%); default 0: always the\n"
     "best segmentation. Unigram vocabularies; not with --init"},
    {"--config", nullptr, "NAME", "tiny, small or base (default tiny)"},
    {"--encoder-layers", nullptr, "N", "override the config"},
    {"--decoder-layers", nullptr, "N", "override the config"},
    {"--d-model", nullptr, "N", "override the config"},
    {"--heads", nullptr, "N", "override the config"},
    {"--d-ff", nullptr, "N", "override the config"},
    {"--pre-norm", nullptr, nullptr, "pre-norm instead of post-norm"},
    {"--gelu", nullptr, nullptr, "GELU instead of ReLU"},
    {"--max-tokens", nullptr, "N", "padded tokens per batch (default 4096)"},
    {"--lr", nullptr, "X", "peak learning rate (inverse_sqrt) or factor (noam), above 0 (default 5e-4)"},
    {"--warmup", nullptr, "N", "warm-up updates (default 4000)"},
    {"--schedule", nullptr, "S", "inverse_sqrt or noam (default inverse_sqrt)"},
    {"--cooldown", nullptr, "F",
     "the last F (0 to 1) of the run take the schedule's learning rate linearly down to zero\n"
     "(warmup-stable-decay): of --max-steps' updates, or, without it, of --time-budget's\n"
     "minutes (then by the clock: not the same from run to run) (default 0: off)"},
    {"--label-smoothing", nullptr, "X", "(default 0.1)"},
    {"--dropout", nullptr, "X", "(default 0.1)"},
    {"--clip-norm", nullptr, "X", "gradient norm clipping, 0 off (default 0)"},
    {"--weight-decay", nullptr, "X", "decoupled weight decay (default 0)"},
    {"--epochs", nullptr, "N", "stop after N epochs (default: no limit)"},
    {"--max-steps", nullptr, "N", "stop after N updates (default: no limit)"},
    {"--time-budget", nullptr, "MINUTES", "stop after this much training time (default: no limit)"},
    {"--average-last", nullptr, "N",
     "keep the models of the last N evaluations (DIR/average/) and write their mean,\n"
     "DIR/model_avg.mtm, with its dev BLEU, when the run ends (checkpoint averaging; default off)"},
    {"--early-stopping", nullptr, "N", "stop after N epochs without a better dev BLEU (default off)"},
    {"--dev-beam", nullptr, "N", "beam for dev BLEU (default 1)"},
    {"--dev-tokenize", nullptr, "TOK",
     "BLEU tokenizer for the dev set: 13a, zh or none (default zh when\n"
     "--tgt-lang is zh, else 13a)"},
    {"--seed", nullptr, "N", "(default 1)"},
    {"--threads", nullptr, "N", "threads (default 1, as every tool)"},
    {"--batch-slices", nullptr, "N",
     "cut each batch into N slices whose gradients are summed in order, each with\n"
     "dropout masks of its own: one process with N slices trains bit for bit as N\n"
     "ranks do under mpirun (which always slice by rank; docs/training.md)"},
    {"--device", nullptr, "cpu|cuda", "train on the CPU or the first CUDA GPU (default cpu)"},
    {"--log-every", nullptr, "N", "(default 50)"},
};

int fail(const std::string& message) { return mt::cli::fail(kTool, message); }
int usage(const std::string& message) { return mt::cli::usage_error(kTool, message); }

std::string extension(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(dot + 1);
}

std::string today() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

struct DevScore {
  double bleu = 0.0, chrf = 0.0;
};

// Translates the dev source with libmt from the exported model file and scores it.
mt::Expected<DevScore> dev_score(const std::string& model_path, const std::vector<std::string>& sources,
                                 const std::vector<std::string>& references, int beam, int threads,
                                 const mt::eval::BleuOptions& bleu_options, std::span<const int32_t> source_prefix,
                                 std::span<const int32_t> target_prefix) {
  auto model = mt::Model::load(model_path);
  if (!model) return model.status();
  mt::SessionOptions so;
  so.max_batch_size = 64;
  so.max_beam_size = beam;
  so.num_threads = threads;
  so.max_source_length = std::min(256, (*model)->config().max_positions);
  so.max_target_length = std::min(256, (*model)->config().max_positions);
  size_t longest = 4;  // the session's least: one UTF-8 character
  for (const auto& s : sources) longest = std::max(longest, s.size());
  so.max_text_bytes = int(longest);
  auto session = mt::Session::create(model.value(), so);
  if (!session) return session.status();
  mt::TranslateOptions to;
  to.beam_size = beam;
  to.max_length_ratio = 2.0f;
  to.max_length_offset = 10;
  to.truncate_long_sources = true;
  to.source_prefix = source_prefix;  // a multilingual model's language tokens (--init)
  to.target_prefix = target_prefix;
  std::vector<std::string> hypotheses;
  mt::TextTranslations out;
  for (size_t first = 0; first < sources.size(); first += 64) {
    std::vector<std::string_view> batch;
    for (size_t i = first; i < std::min(sources.size(), first + 64); ++i) batch.push_back(sources[i]);
    MT_RETURN_IF_ERROR(session->translate_text(batch, to, &out));
    for (size_t i = 0; i < out.size(); ++i) hypotheses.emplace_back(out[i][0].text);
  }
  auto bleu = mt::eval::corpus_bleu(hypotheses, references, bleu_options);
  if (!bleu) return bleu.status();
  auto chrf = mt::eval::corpus_chrf(hypotheses, references);
  if (!chrf) return chrf.status();
  return DevScore{bleu->score, chrf->score};
}

std::string format_duration(double s) {
  char buf[32];
  const long t = long(s);
  std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

// --vocab FILE (or the run's own DIR/vocab.model): a SentencePiece .model or
// a libmt model's vocabulary, with libmt's special ids.
mt::Expected<mt::VocabularyData> read_given_vocabulary(const std::string& path) {
  using namespace mt;
  auto v = cli::read_vocabulary(path);
  if (!v) return v.status();
  if (!v->model_ids.empty()) {
    return Status::error(Errc::invalid_argument,
                         "'%s': a converted model's vocabulary (its pieces map to ids of the model's own), which a "
                         "new model cannot take; fine-tune that model with --init instead",
                         path.c_str());
  }
  return v;
}

// Everything the command line says, checked before any work.
struct Settings {
  std::string train_src, train_tgt, dev_src, dev_ref, out, vocab_file;
  std::string init_path;                    // --init, or the run's DIR/init.txt when resuming
  std::shared_ptr<const mt::Model> init;    // loaded from it
  std::optional<mt::VocabularyData> vocab;  // read from --vocab
  std::vector<int32_t> source_prefix, target_prefix;  // its language tokens (multilingual models)
  bool resume = false, byte_fallback = false;
  int vocab_size = 8000;
  std::string vocab_type = "unigram";
  float character_coverage = 1.0f;
  std::string normalization = "nmt_nfkc";
  int max_length = 100;  // training pairs longer than this are dropped
  double subword_alpha = 0.0;  // > 0: sampled segmentations each epoch (--subword-alpha)
  mt::train::TrainerOptions trainer;
  mt::ModelConfig config;
  int max_epochs = 0, max_steps = 0, patience = 0, dev_beam = 1, log_every = 50, average_last = 0;
  double budget_s = 0.0;
  double time_cooldown = 0.0;  // > 0: the last this much of budget_s decays the learning rate
  mt::eval::BleuOptions bleu;
  std::string src_lang, tgt_lang;
  // The options that define the run (run_record), DIR/run.txt's lines;
  // written when a run starts (or one from before run.txt resumes).
  std::vector<std::pair<std::string, std::string>> record;
  bool write_record = false;
};

// What mt_train writes in DIR, checkpoint.bin first (--force removes them in
// this order, so a removal cut short leaves nothing --resume would take),
// and DIR/average/ (--average-last).
constexpr const char* kRunFiles[] = {"checkpoint.bin", "run.txt",       "init.txt",  "vocab.model", "model_last.mtm",
                                     "model_best.mtm", "model_avg.mtm", "train.tsv", "dev.tsv"};

// --init's model, checked for fine-tuning: fp32, a vocabulary the trainer
// tokenizes with, a config it computes. Its config and languages become the
// run's. -1 to go on, else the exit code.
int load_init_model(Settings* s, const mt::cli::Args& args) {
  using namespace mt;
  const std::string& path = s->init_path;
  if (std::string why = cli::unreadable_file(path); !why.empty()) return fail("--init: " + why);
  auto model = Model::load(path);
  if (!model) return fail("--init " + path + ": " + model.status().message());
  const Model& m = *model.value();
  if (m.quantization().int8) {
    return fail("--init " + path +
                ": an int8 model cannot be trained: fine-tune the fp32 model it was quantized from, then mt_quantize "
                "the result");
  }
  if (!m.has_vocabulary()) return fail("--init " + path + ": the model has no vocabulary to tokenize the corpus with");
  if (!language_tokens(m).empty()) {
    // A multilingual model: every pair gets the language tokens translation
    // would give it (Marian's target token alone; M2M-100's and NLLB's both).
    auto both = language_prefixes(m, s->src_lang, s->tgt_lang);
    auto prefixes = both ? std::move(both) : language_prefixes(m, "", s->tgt_lang);
    if (!prefixes) {
      return fail("--init " + path + ": a multilingual model: --src-lang and --tgt-lang must name its languages (" +
                  prefixes.status().message() + ")");
    }
    s->source_prefix = prefixes->source_prefix;
    s->target_prefix = prefixes->target_prefix;
  }
  s->config = m.config();
  if (!args.has("--src-lang") && !m.metadata().source_language.empty()) s->src_lang = m.metadata().source_language;
  if (!args.has("--tgt-lang") && !m.metadata().target_language.empty()) s->tgt_lang = m.metadata().target_language;
  // Dev BLEU scores the model's target language, not the file's extension's.
  if (!args.has("--dev-tokenize")) {
    s->bleu.tokenizer =
        s->tgt_lang.rfind("zh", 0) == 0 ? mt::eval::BleuTokenizer::zh : mt::eval::BleuTokenizer::tok_13a;
  }
  s->init = std::move(model.value());
  return -1;
}

// Whether some pair of lines of the training files has text on both sides
// (a pair with an empty side never trains); reads up to the first one.
bool has_text_pair(const std::string& source_path, const std::string& target_path) {
  std::ifstream source(source_path), target(target_path);
  const auto text = [](const std::string& line) { return line.find_first_not_of(" \t\r\v\f") != std::string::npos; };
  std::string a, b;
  while (std::getline(source, a) && std::getline(target, b))
    if (text(a) && text(b)) return true;
  return false;
}

// A training file as run.txt records it: its size and content hash (the
// model file's, support/content_hash.hpp), then its path. The first two say
// whether it is the same corpus (one moved elsewhere is; one edited in place
// is not); the path is for messages. (A file that cannot be mapped now,
// though it was readable and not empty a moment ago, records size 0.)
std::string fingerprint(const std::string& path) {
  const auto file = mt::detail::MappedFile::open(path);
  const std::span<const uint8_t> bytes = file ? file->bytes() : std::span<const uint8_t>();
  char head[48];
  std::snprintf(head, sizeof(head), "%zu %016llx ", bytes.size(),
                static_cast<unsigned long long>(mt::detail::content_hash(bytes)));
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return head + (ec ? path : absolute.string());
}

// The options that define the run: the model, its vocabulary, the training
// data and its order, each as it takes effect (defaults included). The
// optimizer's settings, the limits, the dev set, threads, slices, device
// and logging may change on --resume (a lower --lr after a divergence).
std::vector<std::pair<std::string, std::string>> run_record(const Settings& s, const mt::cli::Args& args) {
  const auto number = [](double x) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", x);
    return std::string(text);
  };
  const auto on = [](bool b) { return std::string(b ? "on" : "off"); };
  std::vector<std::pair<std::string, std::string>> r;
  if (!s.init) {  // a fine-tuning run's shape and vocabulary are its model's (DIR/init.txt)
    const mt::ModelConfig& c = s.config;
    r.push_back({"--config", args.get("--config", "tiny")});
    r.push_back({"--encoder-layers", std::to_string(c.encoder_layers)});
    r.push_back({"--decoder-layers", std::to_string(c.decoder_layers)});
    r.push_back({"--d-model", std::to_string(c.d_model)});
    r.push_back({"--heads", std::to_string(c.heads)});
    r.push_back({"--d-ff", std::to_string(c.d_ff)});
    r.push_back({"--pre-norm", on(c.pre_norm)});
    r.push_back({"--gelu", on(c.activation == mt::Activation::gelu)});
    if (s.vocab_file.empty()) {  // a vocabulary of its own (--vocab's, kept in DIR/vocab.model, is not read again)
      r.push_back({"--vocab-size", std::to_string(s.vocab_size)});
      r.push_back({"--vocab-type", s.vocab_type});
      r.push_back({"--character-coverage", number(s.character_coverage)});
      r.push_back({"--byte-fallback", on(s.byte_fallback)});
      r.push_back({"--normalization", s.normalization});
    }
  }
  r.push_back({"--train-src", fingerprint(s.train_src)});
  r.push_back({"--train-tgt", fingerprint(s.train_tgt)});
  r.push_back({"--max-train-length", std::to_string(s.max_length)});
  r.push_back({"--subword-alpha", number(s.subword_alpha)});
  r.push_back({"--max-tokens", std::to_string(s.trainer.batching.max_tokens)});
  r.push_back({"--seed", std::to_string(s.trainer.seed)});
  r.push_back({"--src-lang", s.src_lang});  // the models' metadata, a multilingual model's language tokens
  r.push_back({"--tgt-lang", s.tgt_lang});
  return r;
}

// --resume: the options given against those DIR/run.txt recorded when the
// run started. -1 to go on, else the exit code (the option named, with the
// run's value and the one given).
int check_record(Settings* s) {
  using namespace mt;
  const std::string path = s->out + "/run.txt";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    cli::warn(kTool, "'" + path + "' is missing (a run begun before mt_train wrote it): the options that define " +
                         "the run are not checked, and are recorded now as given");
    s->write_record = true;
    return -1;
  }
  std::string text, error;
  if (!cli::read_file(path, &text, &error)) return fail(error);
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const size_t tab = line.find('\t');
    if (line.empty() || line[0] == '#' || tab == std::string::npos) continue;
    const std::string option = line.substr(0, tab), recorded = line.substr(tab + 1);
    const auto given =
        std::find_if(s->record.begin(), s->record.end(), [&](const auto& kv) { return kv.first == option; });
    if (given == s->record.end() || given->second == recorded) continue;
    const std::string where = " in the run ('" + path + "')";
    const std::string over = ", or start over with --force";
    if (option == "--train-src" || option == "--train-tgt") {
      // Size and hash (the first two fields) say whether it is the same file.
      const auto identity = [](const std::string& v) { return v.substr(0, v.find(' ', v.find(' ') + 1)); };
      if (identity(given->second) == identity(recorded)) continue;
      const size_t path_at = recorded.find(' ', recorded.find(' ') + 1);
      const std::string recorded_path = path_at == std::string::npos ? recorded : recorded.substr(path_at + 1);
      return usage("--resume: " + option + " '" + (option == "--train-src" ? s->train_src : s->train_tgt) +
                   "' is not the file the run trained on ('" + recorded_path + "', as run.txt records it): give that" +
                   over);
    }
    if (given->second == "on" && recorded == "off")
      return usage("--resume: " + option + " here, not" + where + ": drop it" + over);
    if (given->second == "off" && recorded == "on")
      return usage("--resume: " + option + " missing here, given" + where + ": give it" + over);
    return usage("--resume: " + option + " " + given->second + " here, " + recorded + where + ": give " + option + " " +
                 recorded + over);
  }
  return -1;
}

// DIR/run.txt: run_record's options, one "OPTION<tab>VALUE" a line.
mt::Status write_record(const Settings& s) {
  std::string text = "# mt_train: the options that define this run; --resume refuses others\n";
  for (const auto& [option, value] : s.record) text += option + "\t" + value + "\n";
  return mt::detail::write_file_atomically(s.out + "/run.txt", std::string_view(text));
}

// Reads and checks every option, the files and the run folder: -1 to go on,
// else the exit code (a usage error or a failure already said).
int read_settings(mt::cli::Args& args, Settings* s) {
  using namespace mt;
  const std::string help = cli::help_text(kSynopsis, kOptions);
  if (const int rc = cli::standard_options(kTool, args, help); rc >= 0) return rc;
  if (!args.positional().empty()) return usage("unexpected argument '" + args.positional()[0] + "'");
  s->train_src = args.get("--train-src", ""), s->train_tgt = args.get("--train-tgt", "");
  s->dev_src = args.get("--dev-src", ""), s->dev_ref = args.get("--dev-ref", "");
  s->out = args.get("--out", "");
  s->vocab_file = args.get("--vocab", "");
  s->init_path = args.get("--init", "");
  s->resume = args.has("--resume");
  s->byte_fallback = args.has("--byte-fallback");
  s->vocab_size = args.get_int("--vocab-size", 8000, 16, 1 << 20);
  s->vocab_type = args.get_choice("--vocab-type", {"unigram", "bpe"}, "unigram");
  s->character_coverage = args.get_float("--character-coverage", 1.0f, 0.5f, 1.0f);
  s->normalization =
      args.get_choice("--normalization", vocab::kNormalizations, "nmt_nfkc");
  s->max_length = args.get_int("--max-train-length", 100, 1, 1000);
  s->subword_alpha = args.get_float("--subword-alpha", 0.0f, 0.0f, 1000.0f);
  train::TrainerOptions& o = s->trainer;
  o.batching.max_tokens = args.get_int("--max-tokens", 4096, 16, 1 << 24);
  o.adam.lr = args.get_float("--lr", 5e-4f, 0.0f, 100.0f);
  if (o.adam.lr == 0.0) args.set_error("--lr 0: the weights would never change: give a rate above 0 (default 5e-4)");
  o.adam.warmup = args.get_int("--warmup", 4000, 1, 1 << 24);
  o.label_smoothing = args.get_float("--label-smoothing", 0.1f, 0.0f, 0.99f);
  o.dropout = args.get_float("--dropout", 0.1f, 0.0f, 0.9f);
  o.adam.clip_norm = args.get_float("--clip-norm", 0.0f, 0.0f, 1e6f);
  o.adam.weight_decay = args.get_float("--weight-decay", 0.0f, 0.0f, 1.0f);
  o.seed = uint64_t(args.get_int("--seed", 1, 0, 1 << 30));
  o.threads = args.get_int("--threads", 1, 1, 256);
  o.slices = args.get_int("--batch-slices", 1, 1, 1024);
  s->max_epochs = args.get_int("--epochs", 0, 0, 1 << 20);
  s->max_steps = args.get_int("--max-steps", 0, 0, 1 << 30);
  s->budget_s = 60.0 * args.get_float("--time-budget", 0.0f, 0.0f, 1e6f);
  const double cooldown = args.get_float("--cooldown", 0.0f, 0.0f, 1.0f);
  if (cooldown > 0.0 && s->max_steps == 0 && s->budget_s == 0.0)
    args.set_error("--cooldown: needs --max-steps or --time-budget, the run's length it decays over");
  if (s->max_steps == 0) s->time_cooldown = cooldown;
  o.adam.total = s->max_steps;
  o.adam.cooldown = std::llround(cooldown * double(s->max_steps));
  s->patience = args.get_int("--early-stopping", 0, 0, 1 << 20);
  s->average_last = args.get_int("--average-last", 0, 0, 1000);
  if (s->average_last == 1) args.set_error("--average-last 1: averaging needs 2 models or more (0: off)");
  s->dev_beam = args.get_int("--dev-beam", 1, 1, 64);
  s->log_every = args.get_int("--log-every", 50, 1, 1 << 20);
  const std::string schedule = args.get_choice("--schedule", {"inverse_sqrt", "noam"}, "inverse_sqrt");
  const std::string device = args.get_choice("--device", {"cpu", "cuda"}, "cpu");
  s->src_lang = args.get("--src-lang", extension(s->train_src));
  s->tgt_lang = args.get("--tgt-lang", extension(s->train_tgt));
  // Chinese has no spaces for 13a to split on: score it as sacreBLEU's zh does.
  const std::string dev_tok =
      args.get_choice("--dev-tokenize", {"13a", "zh", "none"}, s->tgt_lang.rfind("zh", 0) == 0 ? "zh" : "13a");
  if (dev_tok == "zh") s->bleu.tokenizer = eval::BleuTokenizer::zh;
  if (dev_tok == "none") s->bleu.tokenizer = eval::BleuTokenizer::none;
  // The model's shape, checked now with the preset's vocabulary sizes (the
  // vocabulary's own are checked once it is read or trained).
  auto preset = ModelConfig::preset(args.get("--config", "tiny"));
  if (!preset) args.set_error("--config: " + std::string(preset.status().message()));
  ModelConfig& c = s->config;
  c = preset ? preset.value() : ModelConfig{};
  c.encoder_layers = args.get_int("--encoder-layers", c.encoder_layers, 1, 64);
  c.decoder_layers = args.get_int("--decoder-layers", c.decoder_layers, 1, 64);
  c.d_model = args.get_int("--d-model", c.d_model, 8, 8192);
  c.heads = args.get_int("--heads", c.heads, 1, 256);
  c.d_ff = args.get_int("--d-ff", c.d_ff, 8, 65536);
  c.pre_norm = args.has("--pre-norm");
  if (args.has("--gelu")) c.activation = Activation::gelu;
  c.max_positions = 1024;
  if (!args.ok()) return usage(args.error());
  if (const Status st = c.validate(); !st.ok()) return usage(st.message());
  if (s->train_src.empty() || s->train_tgt.empty() || s->dev_src.empty() || s->dev_ref.empty() || s->out.empty()) {
    return usage("--train-src, --train-tgt, --dev-src, --dev-ref and --out are required");
  }
  if (s->resume && args.has("--force")) return usage("--resume and --force: choose one");
  if (s->resume && !s->vocab_file.empty()) return usage("--resume uses the run's own vocabulary: drop --vocab");
  // Fine-tuning: the model says its shape and vocabulary.
  constexpr const char* kModelOptions[] = {
      "--config",     "--encoder-layers",     "--decoder-layers", "--d-model",      "--heads",
      "--d-ff",       "--pre-norm",           "--gelu",           "--vocab",        "--vocab-size",
      "--vocab-type", "--character-coverage", "--byte-fallback",  "--normalization"};
  if (!s->init_path.empty()) {
    for (const char* option : kModelOptions) {
      if (args.has(option)) return usage(std::string("--init takes the model's shape and vocabulary: drop ") + option);
    }
    if (s->resume) return usage("--resume continues from the run's own DIR/init.txt: drop --init");
  }
  if (s->subword_alpha > 0.0 && s->vocab_type == "bpe")
    return usage("--subword-alpha draws unigram segmentations: drop --vocab-type bpe");
  for (const std::string& path : {s->train_src, s->train_tgt, s->dev_src, s->dev_ref}) {
    if (std::string why = cli::unreadable_file(path); !why.empty()) return fail(why);
  }
  // Blank lines on a side: known now, before a vocabulary is trained for nothing.
  if (!has_text_pair(s->train_src, s->train_tgt)) {
    return fail("no pair of lines of '" + s->train_src + "' and '" + s->train_tgt +
                "' has text on both sides: nothing to train on");
  }
  if (!s->vocab_file.empty()) {
    auto v = read_given_vocabulary(s->vocab_file);
    if (!v) return fail(v.status().message());
    s->vocab = std::move(v.value());
    if (s->subword_alpha > 0.0 && s->vocab->type != VocabularyType::unigram)
      return usage("--subword-alpha draws unigram segmentations: '" + s->vocab_file + "' is a BPE vocabulary");
  }
  // A run folder is never reused by accident.
  std::error_code exists_error;
  const bool has_checkpoint = std::filesystem::exists(s->out + "/checkpoint.bin", exists_error);
  const bool has_run = has_checkpoint || std::filesystem::exists(s->out + "/vocab.model", exists_error) ||
                       std::filesystem::exists(s->out + "/init.txt", exists_error);
  if (s->resume && !has_checkpoint) return fail("--resume: '" + s->out + "' holds no checkpoint.bin to continue from");
  if (has_run && !s->resume && !args.has("--force")) {
    return fail("'" + s->out + "' holds a run already: --resume continues it, --force starts over");
  }
  if (s->resume && std::filesystem::exists(s->out + "/init.txt", exists_error)) {
    std::string path, error;
    if (!cli::read_file(s->out + "/init.txt", &path, &error)) return fail(error);
    s->init_path = path.substr(0, path.find('\n'));
    for (const char* option : kModelOptions) {
      if (args.has(option))
        return usage(std::string("--resume of a fine-tuning run (DIR/init.txt) takes its model's shape and "
                                 "vocabulary: drop ") +
                     option);
    }
  }
  // Also when --resume found a fine-tuning run's init.txt.
  if (!s->init_path.empty() && s->subword_alpha > 0.0)
    return usage("--subword-alpha: not with a fine-tuning run (--init tokenizes through the model file)");
  if (!s->init_path.empty()) {
    if (const int rc = load_init_model(s, args); rc >= 0) return rc;
  }
  if (device == "cuda") {
    // Checked before any work: no vocabulary is trained for a run that cannot start.
    const std::string why = train::cuda_training_unavailable_reason();
    if (!why.empty()) return fail("--device cuda: " + why);
    o.device = Device::cuda;
  }
  if (schedule == "noam") o.adam.schedule = train::Schedule::noam;
  s->record = run_record(*s, args);
  if (!s->resume) {
    s->write_record = true;
  } else if (const int rc = check_record(s); rc >= 0) {
    return rc;
  }
  return -1;
}

// The vocabulary: the one given, the run's own when resuming, or one trained
// jointly on both sides of the training data; written to DIR/vocab.model.
mt::Expected<mt::VocabularyData> prepare_vocabulary(const Settings& s, bool write = true) {
  using namespace mt;
  if (s.init) {  // fine-tuning: the model's own; DIR/init.txt says where it came from
    if (write) {
      std::error_code ec;
      const std::filesystem::path absolute = std::filesystem::absolute(s.init_path, ec);
      const std::string line = (ec ? s.init_path : absolute.string()) + "\n";
      MT_RETURN_IF_ERROR(detail::write_file_atomically(s.out + "/init.txt", std::string_view(line)));
    }
    return *s.init->vocabulary();
  }
  const std::string vocab_path = s.out + "/vocab.model";
  const std::string existing = !s.vocab_file.empty()                             ? s.vocab_file
                               : s.resume && std::filesystem::exists(vocab_path) ? vocab_path
                                                                                 : std::string();
  std::string proto;
  VocabularyData vocab;
  if (!existing.empty()) {  // a SentencePiece .model or a libmt model's vocabulary
    auto v = s.vocab ? Expected<VocabularyData>(*s.vocab) : read_given_vocabulary(existing);
    if (!v) return v.status();
    vocab = std::move(v.value());
    if (!write || existing == vocab_path) return vocab;  // resuming: DIR/vocab.model stays as it is
    // DIR/vocab.model: a .model file's own bytes, a libmt model's vocabulary re-encoded.
    std::string error;
    if (cli::is_libmt_model(existing)) {
      const std::vector<uint8_t> bytes = vocab.to_sentencepiece();
      proto.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    } else if (!cli::read_file(existing, &proto, &error)) {
      return Status::error(Errc::io_error, "%s", error.c_str());
    }
  } else {
    vocab::TrainOptions vo;
    vo.inputs = {s.train_src, s.train_tgt};
    vo.vocab_size = s.vocab_size;
    vo.type = s.vocab_type == "bpe" ? VocabularyType::bpe : VocabularyType::unigram;
    vo.soft_limit = true;
    vo.character_coverage = s.character_coverage;
    vo.byte_fallback = s.byte_fallback;
    vo.normalization = s.normalization;
    std::fprintf(stderr, "mt_train: training a %d-piece vocabulary\n", s.vocab_size);
    auto v = vocab::train(vo, &proto);
    if (!v) return v.status();
    vocab = std::move(v.value());
  }
  // Whole or not at all: a truncated DIR/vocab.model would be the vocabulary --resume reads.
  if (write) {
    MT_RETURN_IF_ERROR(detail::write_file_atomically(vocab_path, std::string_view(proto)));
  }
  return vocab;
}

// A new run (--force, or a folder without a run) starts with none of the
// files mt_train writes, so no later --resume mixes an old run's with its own
// (an old checkpoint.bin with a new vocab.model, an old init.txt making a new
// model a fine-tuning run). Other files stay, and so does any the new run
// reads (--vocab DIR/vocab.model, --init DIR/model_best.mtm).
mt::Status clear_run(const Settings& s) {
  namespace fs = std::filesystem;
  const auto is_input = [&](const fs::path& path) {
    for (const std::string& input : {s.vocab_file, s.init_path, s.train_src, s.train_tgt, s.dev_src, s.dev_ref}) {
      std::error_code ec;
      if (!input.empty() && fs::equivalent(path, input, ec)) return true;
    }
    return false;
  };
  const auto remove = [&](const fs::path& path) {
    std::error_code ec;
    if (!is_input(path) && !fs::remove(path, ec) && ec) {
      return mt::Status::error(mt::Errc::io_error, "cannot remove the old run's '%s': %s", path.c_str(),
                               ec.message().c_str());
    }
    return mt::Status();
  };
  for (const char* name : kRunFiles) MT_RETURN_IF_ERROR(remove(fs::path(s.out) / name));
  // DIR/average/'s models (the step-*.mtm keep_snapshot names; a link
  // there is only unlinked: what it points to is not the run's), and the
  // temporary files of writes cut short ("model_best.mtm.tmp.XXXXXX"):
  // listed first, then removed.
  std::vector<fs::path> found;
  std::error_code ec;
  const fs::path average = fs::path(s.out) / "average";
  if (fs::is_symlink(average, ec)) {
    found.push_back(average);
  } else {
    for (const auto& entry : fs::directory_iterator(average, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("step-", 0) == 0 && entry.path().extension() == ".mtm") found.push_back(entry.path());
    }
  }
  for (const auto& entry : fs::directory_iterator(s.out, ec)) {
    const std::string name = entry.path().filename().string();
    for (const char* file : kRunFiles)
      if (name.rfind(std::string(file) + ".tmp", 0) == 0) found.push_back(entry.path());
  }
  for (const fs::path& path : found) MT_RETURN_IF_ERROR(remove(path));
  fs::remove(average, ec);  // unless something else is left in it
  return {};
}

// The dev set: pairs for the loss, lines for BLEU through libmt.
struct DevSet {
  std::vector<mt::train::SentencePair> pairs;
  std::vector<std::string> sources, references;
};

// --average-last: DIR/average/ holds the models of the last N evaluations
// (named by step, so a resumed run goes on where it left them).
std::vector<std::filesystem::path> snapshots(const Settings& s) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(s.out + "/average", ec))
    if (entry.path().extension() == ".mtm") found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

mt::Status keep_snapshot(const Settings& s, const std::string& model, int64_t step) {
  std::error_code ec;
  std::filesystem::create_directories(s.out + "/average", ec);
  char name[32];
  std::snprintf(name, sizeof(name), "step-%010lld.mtm", static_cast<long long>(step));
  const std::string path = s.out + "/average/" + name;
  std::filesystem::copy_file(model, path, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return mt::Status::error(mt::Errc::io_error, "cannot write '%s': %s", path.c_str(), ec.message().c_str());
  std::vector<std::filesystem::path> kept = snapshots(s);
  for (size_t i = 0; i + size_t(s.average_last) < kept.size(); ++i) std::filesystem::remove(kept[i], ec);
  return {};
}

// DIR/model_avg.mtm: the mean of the kept models, scored on the dev set.
int write_average(const Settings& s, const DevSet& dev_set) {
  using namespace mt;
  std::vector<std::shared_ptr<const Model>> models;
  for (const auto& path : snapshots(s)) {
    auto model = Model::load(path.string());
    if (!model) return fail(model.status().message());
    models.push_back(std::move(model.value()));
  }
  if (models.size() < 2) {
    std::fprintf(stderr, "mt_train: %zu evaluation(s) so far: nothing to average yet\n", models.size());
    return 0;
  }
  auto writer = cli::average_models(models);
  if (!writer) return fail(writer.status().message());
  const std::string path = s.out + "/model_avg.mtm";
  if (const Status e = writer->write(path); !e.ok()) return fail(e.message());
  auto score = dev_score(path, dev_set.sources, dev_set.references, s.dev_beam, s.trainer.threads, s.bleu,
                         s.source_prefix, s.target_prefix);
  if (!score) return fail("dev translation failed: " + std::string(score.status().message()));
  char bleu[32];
  std::snprintf(bleu, sizeof(bleu), "%.2f", score->bleu);
  ModelMetadata meta = writer->metadata();  // the newest's steps and epochs (average_models)
  meta.extra.push_back({"dev_bleu", bleu});
  writer->set_metadata(meta);
  if (const Status e = writer->write(path); !e.ok()) return fail(e.message());
  std::fprintf(stderr, "mt_train: the last %zu evaluations' models averaged: dev BLEU %.2f chrF %.2f -> %s\n",
               models.size(), score->bleu, score->chrf, path.c_str());
  return 0;
}

// The loop's own state that a checkpoint keeps with the step (its notes):
// model selection and early stopping go on where they were on --resume.
// The checkpoint rather than dev.tsv or model_best.mtm's dev_bleu: it is
// written in one piece with the weights and data position it belongs to, so
// a resumed run decides as the straight run would have, where dev.tsv may
// hold an evaluation past it (cut short before the checkpoint) and
// model_best.mtm rounds its BLEU and knows no count.
struct Progress {
  double best_bleu = -1.0;  // the best dev BLEU so far; -1: no evaluation yet
  int stale = 0;            // evaluations since it
  std::string notes() const {
    char text[96];
    std::snprintf(text, sizeof(text), "best_dev_bleu %.17g\nstale_evaluations %d\n", best_bleu, stale);
    return text;
  }
  // A checkpoint's notes; one from before them: model_best.mtm's dev BLEU
  // (rounded to 0.01) as the best, the count from zero.
  static Progress restore(const std::string& notes, const std::string& best_model) {
    Progress p;
    if (std::sscanf(notes.c_str(), "best_dev_bleu %lf stale_evaluations %d", &p.best_bleu, &p.stale) == 2) return p;
    p = Progress();
    auto model = mt::Model::load(best_model);
    if (!model) return p;
    for (const mt::KeyValue& kv : (*model)->metadata().extra)
      if (kv.key == "dev_bleu") p.best_bleu = std::strtod(kv.value.c_str(), nullptr);
    return p;
  }
};

// Trains until a limit is met, evaluating, exporting and checkpointing at
// every epoch's end (and at the limit). `resumed`: the notes of the
// checkpoint it resumes from, null for a new run. Returns the exit code.
int train_loop(const Settings& s, mt::train::Trainer& trainer, const mt::VocabularyData& vocab, const DevSet& dev_set,
               mt::train::Communicator& ranks, const std::string* resumed) {
  using namespace mt;
  // Data-parallel: every rank steps; rank 0 alone logs, evaluates, exports
  // and checkpoints, and says after each step whether the others wait for
  // that and whether the run goes on.
  const bool leader = ranks.rank() == 0;
  // --cooldown by the clock: the leader's elapsed time sets every rank's
  // learning rate before each step (a collective: the leader's loop below
  // sends what these receive).
  const auto share_cooldown = [&](double elapsed_s) {
    double scale = std::clamp((s.budget_s - elapsed_s) / (s.time_cooldown * s.budget_s), 0.0, 1.0);
    const Status e = ranks.broadcast(&scale, sizeof(scale));
    if (e.ok()) trainer.set_learning_rate_scale(scale);
    return e;
  };
  if (!leader) {
    for (;;) {
      if (s.time_cooldown > 0.0) {  // the broadcast replaces this rank's scale with the leader's
        if (const Status e = share_cooldown(0.0); !e.ok()) return fail(e.message());
      }
      trainer.step();
      uint8_t evaluate = 0;
      if (const Status e = ranks.broadcast(&evaluate, 1); !e.ok()) return fail(e.message());
      if (!evaluate) continue;
      int8_t outcome = 0;  // -1: go on; else the run's exit code
      if (const Status e = ranks.broadcast(&outcome, 1); !e.ok()) return fail(e.message());
      if (outcome >= 0) return outcome;
    }
  }
  // The leader's verdict after an evaluation, to every rank: -1 goes on.
  const auto tell = [&](int code) {
    int8_t outcome = int8_t(code);
    if (const Status e = ranks.broadcast(&outcome, 1); !e.ok()) return fail(e.message());
    return code;
  };
  const std::string checkpoint = s.out + "/checkpoint.bin";
  ModelMetadata meta;
  meta.source_language = s.src_lang;
  meta.target_language = s.tgt_lang;
  meta.training_corpus = std::filesystem::path(s.train_src).filename().string() + " + " +
                         std::filesystem::path(s.train_tgt).filename().string();
  meta.tool = "mt_train";
  meta.tool_version = mt::kVersion;
  meta.created = today();
  // A fine-tuned model keeps what its file said (language tokens, a converter's notes), not its training counts.
  std::vector<KeyValue> kept;
  if (s.init) {
    for (const KeyValue& kv : s.init->metadata().extra)
      if (kv.key != "steps" && kv.key != "epochs" && kv.key != "dev_bleu" && kv.key != "averaged") kept.push_back(kv);
  }
  const VocabularyData* target_vocabulary = s.init ? s.init->target_vocabulary() : nullptr;

  const bool tty = isatty(STDERR_FILENO);
  std::ofstream train_log(s.out + "/train.tsv", s.resume ? std::ios::app : std::ios::trunc);
  std::ofstream dev_log(s.out + "/dev.tsv", s.resume ? std::ios::app : std::ios::trunc);
  if (!s.resume) {
    train_log << "step\tepoch\tloss\tppl\tlr\tgrad_norm\ttokens_per_s\telapsed_s\n";
    dev_log << "step\tepoch\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\telapsed_s\n";
  }
  if (s.init && !s.resume) {
    // Where fine-tuning starts, measured as every epoch is: step 0. (A
    // failure only warns: the other ranks already wait in the first step.)
    const train::StepStats dev = trainer.evaluate(dev_set.pairs);
    auto score = dev_score(s.init_path, dev_set.sources, dev_set.references, s.dev_beam, s.trainer.threads, s.bleu,
                         s.source_prefix, s.target_prefix);
    if (score) {
      dev_log << 0 << '\t' << 0 << '\t' << dev.loss << '\t' << std::exp(dev.nll) << '\t' << score->bleu << '\t'
              << score->chrf << '\t' << 0.0 << '\n'
              << std::flush;
      std::fprintf(stderr, "mt_train: --init model: dev loss %.3f ppl %.2f BLEU %.2f chrF %.2f\n", dev.loss,
                   std::exp(dev.nll), score->bleu, score->chrf);
    } else {
      std::fprintf(stderr, "mt_train: warning: the --init model's dev BLEU: %s\n", score.status().message());
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  Progress progress = resumed ? Progress::restore(*resumed, s.out + "/model_best.mtm") : Progress();
  double window_loss = 0.0, window_nll = 0.0;
  int64_t window_tokens = 0;
  double window_start = 0.0;
  // A loss or gradient norm that is not finite: the weights are lost. Every
  // rank stops before anything is written from them; the last checkpoint
  // and models stay as they were.
  int64_t saved_step = resumed ? trainer.steps() : -1;
  const auto diverged = [&](const std::string& what) {
    char text[512];
    if (saved_step >= 0) {
      std::snprintf(text, sizeof(text),
                    "step %lld: %s: the run diverged; %s (step %lld) is kept: --resume it with a lower --lr than %g",
                    static_cast<long long>(trainer.steps()), what.c_str(), checkpoint.c_str(),
                    static_cast<long long>(saved_step), s.trainer.adam.lr);
    } else {
      std::snprintf(text, sizeof(text),
                    "step %lld: %s: the run diverged before its first checkpoint: start over (--force) with a lower "
                    "--lr than %g",
                    static_cast<long long>(trainer.steps()), what.c_str(), s.trainer.adam.lr);
    }
    return tell(fail(text));
  };
  bool stop = false;
  while (!stop) {
    if (s.time_cooldown > 0.0) {
      if (const Status e = share_cooldown(elapsed()); !e.ok()) return fail(e.message());
    }
    const train::StepStats st = trainer.step();
    const bool finite = std::isfinite(st.loss) && std::isfinite(st.grad_norm);
    window_loss += st.loss * double(st.tokens);
    window_nll += st.nll * double(st.tokens);
    window_tokens += st.tokens;
    const int64_t step = trainer.steps();
    const double now = elapsed();
    if (step % s.log_every == 0) {
      const double tps = double(window_tokens) / std::max(1e-9, now - window_start);
      const double loss = window_loss / double(window_tokens), ppl = std::exp(window_nll / double(window_tokens));
      train_log << step << '\t' << trainer.epoch() + 1 << '\t' << loss << '\t' << ppl << '\t' << st.learning_rate
                << '\t' << st.grad_norm << '\t' << tps << '\t' << now << '\n'
                << std::flush;
      if (tty) {
        const double frac = double(trainer.batch_in_epoch()) / double(std::max<size_t>(1, trainer.batches_per_epoch()));
        const double eta = s.budget_s > 0    ? s.budget_s - now
                           : s.max_steps > 0 ? (s.max_steps - step) * now / double(step)
                                             : 0.0;
        char bar[21];
        for (int i = 0; i < 20; ++i) bar[i] = i < int(frac * 20) ? '#' : '.';
        bar[20] = 0;
        std::fprintf(stderr, "\repoch %d [%s] step %lld  loss %.3f  ppl %.1f  lr %.2e  %.0f tok/s  ETA %s   ",
                     trainer.epoch() + 1, bar, static_cast<long long>(step), loss, ppl, st.learning_rate, tps,
                     format_duration(std::max(0.0, eta)).c_str());
      }
      window_loss = window_nll = 0.0;
      window_tokens = 0;
      window_start = now;
    }
    const bool epoch_end = trainer.batch_in_epoch() == trainer.batches_per_epoch();
    const bool out_of_time = s.budget_s > 0 && now >= s.budget_s;
    const bool out_of_steps = s.max_steps > 0 && step >= s.max_steps;
    // Diverged: the other ranks wait for the verdict as after an evaluation.
    uint8_t evaluate = !finite || epoch_end || out_of_time || out_of_steps;
    if (const Status e = ranks.broadcast(&evaluate, 1); !e.ok()) return fail(e.message());
    if (!evaluate) continue;
    if (tty) std::fputc('\n', stderr);
    if (!finite) {
      char what[96];
      std::snprintf(what, sizeof(what), "training loss %g, gradient norm %g", st.loss, st.grad_norm);
      return diverged(what);
    }

    // Evaluate: dev loss, then dev BLEU through libmt from the exported file.
    const train::StepStats dev = trainer.evaluate(dev_set.pairs);
    if (!std::isfinite(dev.loss)) {  // weights the last update made non-finite
      char what[64];
      std::snprintf(what, sizeof(what), "dev loss %g", dev.loss);
      return diverged(what);
    }
    meta.extra = kept;
    meta.extra.push_back({"steps", std::to_string(step)});
    meta.extra.push_back({"epochs", std::to_string(trainer.epoch() + (epoch_end ? 1 : 0))});
    const std::string last = s.out + "/model_last.mtm";
    if (const Status e = trainer.model().export_model(last, &vocab, meta, target_vocabulary); !e.ok())
      return tell(fail(e.message()));
    auto score = dev_score(last, dev_set.sources, dev_set.references, s.dev_beam, s.trainer.threads, s.bleu,
                         s.source_prefix, s.target_prefix);
    if (!score) return tell(fail("dev translation failed: " + std::string(score.status().message())));
    dev_log << step << '\t' << trainer.epoch() + 1 << '\t' << dev.loss << '\t' << std::exp(dev.nll) << '\t'
            << score->bleu << '\t' << score->chrf << '\t' << elapsed() << '\n'
            << std::flush;
    std::fprintf(stderr, "mt_train: epoch %d step %lld: dev loss %.3f ppl %.2f BLEU %.2f chrF %.2f (%s)\n",
                 trainer.epoch() + 1, static_cast<long long>(step), dev.loss, std::exp(dev.nll), score->bleu,
                 score->chrf, format_duration(elapsed()).c_str());
    if (score->bleu > progress.best_bleu) {
      progress.best_bleu = score->bleu;
      progress.stale = 0;
      char bleu[32];
      std::snprintf(bleu, sizeof(bleu), "%.2f", score->bleu);
      meta.extra.push_back({"dev_bleu", bleu});
      if (const Status e = trainer.model().export_model(s.out + "/model_best.mtm", &vocab, meta, target_vocabulary);
          !e.ok())
        return tell(fail(e.message()));
    } else {
      ++progress.stale;
    }
    if (const Status e = trainer.save_checkpoint(checkpoint, progress.notes()); !e.ok()) return tell(fail(e.message()));
    saved_step = step;
    if (s.average_last > 1) {
      if (const Status e = keep_snapshot(s, last, step); !e.ok()) return tell(fail(e.message()));
    }
    const bool out_of_epochs = s.max_epochs > 0 && trainer.epoch() + 1 >= s.max_epochs && epoch_end;
    const bool impatient = s.patience > 0 && progress.stale >= s.patience;
    if (impatient) std::fprintf(stderr, "mt_train: no better dev BLEU for %d epochs: stopping\n", s.patience);
    stop = out_of_time || out_of_steps || out_of_epochs || impatient;
    tell(stop ? 0 : -1);
  }
  std::fprintf(stderr, "mt_train: done after %lld steps, best dev BLEU %.2f, %s\n",
               static_cast<long long>(trainer.steps()), progress.best_bleu, format_duration(elapsed()).c_str());
  return s.average_last > 1 ? write_average(s, dev_set) : 0;
}

}  // namespace

// Whether any rank failed (`code` >= 0: this one did, having said why):
// every rank then stops with an exit code. A collective, so no rank is left
// waiting for one that returned.
int agree(mt::train::Communicator& ranks, int code) {
  double failed = code >= 0 && code != 0 ? 1.0 : 0.0, done = code >= 0 ? 1.0 : 0.0;
  double flags[2] = {failed, done};
  if (const mt::Status e = ranks.sum(flags, 2); !e.ok()) return fail(e.message());
  if (flags[0] > 0.0) return code > 0 ? code : mt::cli::kExitFailure;
  if (flags[1] > 0.0) return code >= 0 ? code : 0;  // --help, --version
  return -1;
}

// The ranks' output: rank 0 speaks for the run; the others' standard
// streams stay quiet while the same checks run everywhere.
struct Quiet {
  explicit Quiet(bool on) : on_(on) {
    if (!on_) return;
    std::fflush(stdout), std::fflush(stderr);
    saved_out_ = dup(STDOUT_FILENO), saved_err_ = dup(STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
    close(null);
  }
  ~Quiet() {
    if (!on_) return;
    std::fflush(stdout), std::fflush(stderr);
    dup2(saved_out_, STDOUT_FILENO), dup2(saved_err_, STDERR_FILENO);
    close(saved_out_), close(saved_err_);
  }
  bool on_;
  int saved_out_ = -1, saved_err_ = -1;
};

int run(int argc, char** argv) {
  using namespace mt;
  auto world = train::world_communicator(&argc, &argv);
  if (!world) return fail(world.status().message());
  train::Communicator& ranks = **world;
  const bool leader = ranks.rank() == 0;
  cli::Args args(argc, argv, kOptions);
  Settings s;
  {
    const Quiet quiet(!leader);
    if (const int rc = agree(ranks, read_settings(args, &s)); rc >= 0) return rc;
  }
  s.trainer.communicator = &ranks;
  if (ranks.size() > 1 && args.has("--batch-slices") && s.trainer.slices != ranks.size()) {
    int rc = -1;
    {
      const Quiet quiet(!leader);
      rc = usage("--batch-slices " + std::to_string(s.trainer.slices) + " under " + std::to_string(ranks.size()) +
                 " ranks: the ranks are the slices (drop it)");
    }
    return agree(ranks, rc);
  }
  if (ranks.size() > 1 && leader) std::fprintf(stderr, "mt_train: data-parallel, %s\n", ranks.describe().c_str());
  int rc = -1;
  if (leader) {
    std::error_code ec;
    std::filesystem::create_directories(s.out, ec);
    if (ec) rc = fail("cannot create '" + s.out + "': " + ec.message());
    if (rc < 0 && !s.resume) {
      if (const Status e = clear_run(s); !e.ok()) rc = fail(e.message());
    }
  }
  if (rc = agree(ranks, rc); rc >= 0) return rc;

  // Rank 0 trains (or copies) the vocabulary; the others read what it wrote.
  Expected<VocabularyData> vocab = Status::error(Errc::internal, "no vocabulary");
  if (leader) {
    vocab = prepare_vocabulary(s);
    if (!vocab) rc = fail(vocab.status().message());
    if (vocab && s.write_record) {
      if (const Status e = write_record(s); !e.ok()) rc = fail(e.message());
    }
  }
  if (rc = agree(ranks, rc); rc >= 0) return rc;
  if (!leader) {  // --init's and --vocab's vocabulary each rank read itself; else the leader's file
    Settings from_leader = s;
    if (!s.init && !s.vocab) from_leader.vocab_file = s.out + "/vocab.model";
    vocab = prepare_vocabulary(from_leader, false);
    if (!vocab) rc = fail(vocab.status().message());
  }
  if (rc = agree(ranks, rc); rc >= 0) return rc;
  // A fine-tuned model keeps its own ids; a new one takes the vocabulary's.
  if (!s.init) {
    if (const Status st = s.config.use_vocabulary(*vocab); !st.ok()) return fail(st.message());
  }
  if (const Status st = s.config.validate(); !st.ok()) return fail(st.message());
  s.trainer.model = s.config;
  s.trainer.init = s.init;
  s.trainer.adam.d_model = s.config.d_model;

  train::CorpusFilter filter;
  filter.max_tokens = std::min(s.max_length, s.config.max_positions - 1);  // EOS takes a position
  train::CorpusStats stats;
  auto train_pairs = s.init ? train::read_parallel_corpus(s.train_src, s.train_tgt, *s.init, s.source_prefix,
                                                         s.target_prefix, filter, &stats)
                           : train::read_parallel_corpus(s.train_src, s.train_tgt, *vocab, filter, &stats);
  if (!train_pairs) return fail(train_pairs.status().message());
  if (leader) {
    std::fprintf(stderr, "mt_train: %zu of %zu training pairs kept (%zu too long, %zu empty), %zu target tokens\n",
                 stats.kept, stats.lines, stats.dropped_long, stats.dropped_empty, stats.target_tokens);
  }
  if (stats.kept == 0) {  // every rank read the same files: every rank stops here
    if (!leader) return cli::kExitFailure;
    return fail("no training pair left of " + std::to_string(stats.lines) + ": " + std::to_string(stats.dropped_long) +
                " longer than " + std::to_string(filter.max_tokens) + (filter.max_tokens == 1 ? " token" : " tokens") +
                " on a side, " + std::to_string(stats.dropped_empty + stats.dropped_ratio) +
                " with a side empty once tokenized: raise --max-train-length or check the training files");
  }
  if (s.subword_alpha > 0.0) {
    auto sampler =
        train::SegmentationSampler::create(s.train_src, s.train_tgt, *vocab, s.subword_alpha, filter.max_tokens);
    if (!sampler) return fail("--subword-alpha: " + std::string(sampler.status().message()));
    std::shared_ptr<train::SegmentationSampler> shared = std::move(sampler.value());
    const uint64_t seed = s.trainer.seed;
    s.trainer.resegment = [shared, seed](int epoch, std::vector<train::SentencePair>* pairs) -> Status {
      auto kept_best = shared->resegment(seed, epoch, pairs);
      return kept_best ? Status() : kept_best.status();
    };
    if (leader) {
      std::fprintf(stderr, "mt_train: subword sampling, alpha %g: each epoch draws the training text's segmentation\n",
                   s.subword_alpha);
    }
  }
  train::CorpusFilter keep_all;
  keep_all.max_tokens = std::min(1000, s.config.max_positions - 1);
  auto dev_pairs = s.init ? train::read_parallel_corpus(s.dev_src, s.dev_ref, *s.init, s.source_prefix,
                                                       s.target_prefix, keep_all, nullptr)
                         : train::read_parallel_corpus(s.dev_src, s.dev_ref, *vocab, keep_all, nullptr);
  if (!dev_pairs) return fail(dev_pairs.status().message());
  auto dev_sources = cli::read_lines(s.dev_src), dev_references = cli::read_lines(s.dev_ref);
  if (!dev_sources) return fail(dev_sources.status().message());
  if (!dev_references) return fail(dev_references.status().message());
  const DevSet dev_set{std::move(dev_pairs.value()), std::move(dev_sources.value()), std::move(dev_references.value())};

  train::Trainer trainer(s.trainer, std::move(train_pairs.value()));
  if (leader && s.trainer.device == Device::cuda) std::fprintf(stderr, "mt_train: %s\n", trainer.device().c_str());
  std::string notes;  // the loop's state at the checkpoint (Progress)
  if (s.resume) {
    if (const Status st = trainer.load_checkpoint(s.out + "/checkpoint.bin", &notes); !st.ok())
      return fail(st.message());
    if (leader) {
      std::fprintf(stderr, "mt_train: resumed at step %lld, epoch %d\n", static_cast<long long>(trainer.steps()),
                   trainer.epoch() + 1);
    }
  }
  return train_loop(s, trainer, *vocab, dev_set, ranks, s.resume ? &notes : nullptr);
}

// CUDA failures during training (a device fault, cuBLAS missing) throw, as
// do allocation failures: reported as one line like every other error.
int main(int argc, char** argv) { return mt::cli::guarded_main(kTool, argc, argv, run); }
