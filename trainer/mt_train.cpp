// mt_train: trains a Transformer on a parallel corpus with libmt's own
// autograd and writes libmt model files.
//
//   mt_train --train-src train.en --train-tgt train.de --dev-src val.en --dev-tgt val.de
//            --config tiny --vocab-size 8000 --out runs/en-de --time-budget 80
//
// Every epoch: dev loss, dev BLEU from translating the dev set with libmt
// itself from the exported model (so every checkpoint is known to load and
// translate), the best model by dev BLEU kept, a checkpoint to resume from.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "guarded_main.hpp"
#include "cli_args.hpp"
#include "cli_files.hpp"
#include "mt/version.hpp"
#include "eval/scoring.hpp"
#include "mt/mt.hpp"
#include "trainer.hpp"
#include "vocab/vocab_train.hpp"

namespace {

using mt::cli::Option;
constexpr const char* kTool = "mt_train";

constexpr const char* kSynopsis =
    R"(usage: mt_train --train-src FILE --train-tgt FILE --dev-src FILE --dev-ref FILE --out DIR [options]

Trains an encoder-decoder Transformer and writes, in DIR:
  model_best.mtm   the model with the best dev BLEU so far (libmt model file with vocabulary)
  model_last.mtm   the model at the end of the last epoch
  checkpoint.bin   weights, optimizer, dropout stream and data position (--resume continues exactly)
  vocab.model      the SentencePiece vocabulary (trained unless --vocab is given)
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
    {"--force", nullptr, nullptr, "start over in an existing DIR, replacing its files"},
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
    {"--max-train-length", nullptr, "N", "drop training pairs longer than N tokens on either side (default 100)", false,
     "--max-length"},
    {"--config", nullptr, "NAME", "tiny, small or base (default tiny)"},
    {"--encoder-layers", nullptr, "N", "override the config"},
    {"--decoder-layers", nullptr, "N", "override the config"},
    {"--d-model", nullptr, "N", "override the config"},
    {"--heads", nullptr, "N", "override the config"},
    {"--d-ff", nullptr, "N", "override the config"},
    {"--pre-norm", nullptr, nullptr, "pre-norm instead of post-norm"},
    {"--gelu", nullptr, nullptr, "GELU instead of ReLU"},
    {"--max-tokens", nullptr, "N", "padded tokens per batch (default 4096)"},
    {"--lr", nullptr, "X", "peak learning rate (inverse_sqrt) or factor (noam) (default 5e-4)"},
    {"--warmup", nullptr, "N", "warm-up updates (default 4000)"},
    {"--schedule", nullptr, "S", "inverse_sqrt or noam (default inverse_sqrt)"},
    {"--label-smoothing", nullptr, "X", "(default 0.1)"},
    {"--dropout", nullptr, "X", "(default 0.1)"},
    {"--clip-norm", nullptr, "X", "gradient norm clipping, 0 off (default 0)"},
    {"--weight-decay", nullptr, "X", "decoupled weight decay (default 0)"},
    {"--epochs", nullptr, "N", "stop after N epochs (default: no limit)"},
    {"--max-steps", nullptr, "N", "stop after N updates (default: no limit)"},
    {"--time-budget", nullptr, "MINUTES", "stop after this much training time (default: no limit)"},
    {"--early-stopping", nullptr, "N", "stop after N epochs without a better dev BLEU (default off)"},
    {"--dev-beam", nullptr, "N", "beam for dev BLEU (default 1)"},
    {"--dev-tokenize", nullptr, "TOK",
     "BLEU tokenizer for the dev set: 13a, zh or none (default zh when\n"
     "--tgt-lang is zh, else 13a)"},
    {"--seed", nullptr, "N", "(default 1)"},
    {"--threads", nullptr, "N", "threads (default 1, as every tool)"},
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
                                 const mt::eval::BleuOptions& bleu_options) {
  auto model = mt::Model::load(model_path);
  if (!model) return model.status();
  mt::SessionOptions so;
  so.max_batch_size = 64;
  so.max_beam_size = beam;
  so.num_threads = threads;
  so.max_source_length = std::min(256, (*model)->config().max_positions);
  so.max_target_length = std::min(256, (*model)->config().max_positions);
  size_t longest = 1;
  for (const auto& s : sources) longest = std::max(longest, s.size());
  so.max_text_bytes = int(longest);
  auto session = mt::Session::create(model.value(), so);
  if (!session) return session.status();
  mt::TranslateOptions to;
  to.beam_size = beam;
  to.max_length_ratio = 2.0f;
  to.max_length_offset = 10;
  to.truncate_long_sources = true;
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

}  // namespace

int run(int argc, char** argv) {
  using namespace mt;
  cli::Args args(argc, argv, kOptions);
  const std::string help = cli::help_text(kSynopsis, kOptions);
  if (const int rc = cli::standard_options(kTool, args, help); rc >= 0) return rc;
  if (!args.positional().empty()) return usage("unexpected argument '" + args.positional()[0] + "'");
  const std::string train_src = args.get("--train-src", ""), train_tgt = args.get("--train-tgt", "");
  const std::string dev_src = args.get("--dev-src", ""), dev_tgt = args.get("--dev-ref", "");
  const std::string out = args.get("--out", "");
  const int vocab_size = args.get_int("--vocab-size", 8000, 16, 1 << 20);
  const std::string vocab_type = args.get_choice("--vocab-type", {"unigram", "bpe"}, "unigram");
  const float character_coverage = args.get_float("--character-coverage", 1.0f, 0.5f, 1.0f);
  const int max_length = args.get_int("--max-train-length", 100, 1, 1000);
  train::TrainerOptions o;
  o.batching.max_tokens = args.get_int("--max-tokens", 4096, 16, 1 << 24);
  o.adam.lr = args.get_float("--lr", 5e-4f, 0.0f, 100.0f);
  o.adam.warmup = args.get_int("--warmup", 4000, 1, 1 << 24);
  o.label_smoothing = args.get_float("--label-smoothing", 0.1f, 0.0f, 0.99f);
  o.dropout = args.get_float("--dropout", 0.1f, 0.0f, 0.9f);
  o.adam.clip_norm = args.get_float("--clip-norm", 0.0f, 0.0f, 1e6f);
  o.adam.weight_decay = args.get_float("--weight-decay", 0.0f, 0.0f, 1.0f);
  o.seed = uint64_t(args.get_int("--seed", 1, 0, 1 << 30));
  o.threads = args.get_int("--threads", 1, 1, 256);
  const int max_epochs = args.get_int("--epochs", 0, 0, 1 << 20);
  const int max_steps = args.get_int("--max-steps", 0, 0, 1 << 30);
  const double budget_s = 60.0 * args.get_float("--time-budget", 0.0f, 0.0f, 1e6f);
  const int patience = args.get_int("--early-stopping", 0, 0, 1 << 20);
  const int dev_beam = args.get_int("--dev-beam", 1, 1, 64);
  const int log_every = args.get_int("--log-every", 50, 1, 1 << 20);
  const std::string schedule = args.get_choice("--schedule", {"inverse_sqrt", "noam"}, "inverse_sqrt");
  const std::string device = args.get_choice("--device", {"cpu", "cuda"}, "cpu");
  const std::string tgt_lang = args.get("--tgt-lang", extension(train_tgt));
  const std::string dev_tok =
      args.get_choice("--dev-tokenize", {"13a", "zh", "none"}, tgt_lang.rfind("zh", 0) == 0 ? "zh" : "13a");
  // The model's shape, checked now with the preset's vocabulary sizes (the
  // vocabulary's own are checked once it is read or trained).
  auto config = ModelConfig::preset(args.get("--config", "tiny"));
  if (!config) args.set_error("--config: " + std::string(config.status().message()));
  ModelConfig c = config ? config.value() : ModelConfig{};
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
  if (train_src.empty() || train_tgt.empty() || dev_src.empty() || dev_tgt.empty() || out.empty()) {
    return usage("--train-src, --train-tgt, --dev-src, --dev-ref and --out are required");
  }
  if (args.has("--resume") && args.has("--force")) return usage("--resume and --force: choose one");
  if (args.has("--resume") && args.has("--vocab")) return usage("--resume uses the run's own vocabulary: drop --vocab");
  for (const std::string& path : {train_src, train_tgt, dev_src, dev_tgt}) {
    if (std::string why = cli::unreadable_file(path); !why.empty()) return fail(why);
  }
  if (args.has("--vocab")) {
    if (std::string why = cli::unreadable_file(args.get("--vocab", "")); !why.empty()) return fail(why);
  }
  // A run folder is never reused by accident.
  std::error_code exists_error;
  const bool has_run = std::filesystem::exists(out + "/checkpoint.bin", exists_error) ||
                       std::filesystem::exists(out + "/vocab.model", exists_error);
  if (args.has("--resume") && !std::filesystem::exists(out + "/checkpoint.bin", exists_error)) {
    return fail("--resume: '" + out + "' holds no checkpoint.bin to continue from");
  }
  if (has_run && !args.has("--resume") && !args.has("--force")) {
    return fail("'" + out + "' holds a run already: --resume continues it, --force starts over");
  }
  if (device == "cuda") {
    // Checked before any work: no vocabulary is trained for a run that cannot start.
    const std::string why = train::cuda_training_unavailable_reason();
    if (!why.empty()) return fail("--device cuda: " + why);
    o.device = Device::cuda;
  }
  if (schedule == "noam") o.adam.schedule = train::Schedule::noam;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return fail("cannot create '" + out + "': " + ec.message());

  // Vocabulary: given, or trained jointly on both sides of the training data.
  const std::string vocab_path = out + "/vocab.model";
  VocabularyData vocab;
  {
    std::string proto;
    // An existing vocabulary: the one given, or the run's own when resuming.
    const std::string existing = args.has("--vocab")                                           ? args.get("--vocab", "")
                                 : args.has("--resume") && std::filesystem::exists(vocab_path) ? vocab_path
                                                                                               : std::string();
    if (!existing.empty()) {
      std::string error;
      if (!cli::read_file(existing, &proto, &error)) return fail(error);
      auto v = VocabularyData::from_sentencepiece({reinterpret_cast<const uint8_t*>(proto.data()), proto.size()});
      if (!v) {
        return fail(existing + ": " + v.status().message() +
                    " (a SentencePiece .model is needed here: mt_vocab train writes one)");
      }
      vocab = std::move(v.value());
    } else {
      vocab::TrainOptions vo;
      vo.inputs = {train_src, train_tgt};
      vo.vocab_size = vocab_size;
      vo.type = vocab_type == "bpe" ? VocabularyType::bpe : VocabularyType::unigram;
      vo.soft_limit = true;
      vo.character_coverage = character_coverage;
      vo.byte_fallback = args.has("--byte-fallback");
      std::fprintf(stderr, "mt_train: training a %d-piece vocabulary\n", vocab_size);
      auto v = vocab::train(vo, &proto);
      if (!v) return fail(v.status().message());
      vocab = std::move(v.value());
    }
    std::ofstream(vocab_path, std::ios::binary).write(proto.data(), std::streamsize(proto.size()));
  }

  if (const Status s = c.use_vocabulary(vocab); !s.ok()) return fail(s.message());
  if (const Status s = c.validate(); !s.ok()) return fail(s.message());
  o.model = c;
  o.adam.d_model = c.d_model;

  train::CorpusFilter filter;
  filter.max_tokens = max_length;
  train::CorpusStats stats;
  auto train_pairs = train::read_parallel_corpus(train_src, train_tgt, vocab, filter, &stats);
  if (!train_pairs) return fail(train_pairs.status().message());
  std::fprintf(stderr, "mt_train: %zu of %zu training pairs kept (%zu too long, %zu empty), %zu target tokens\n",
               stats.kept, stats.lines, stats.dropped_long, stats.dropped_empty, stats.target_tokens);
  train::CorpusFilter keep_all;
  keep_all.max_tokens = 1000;
  auto dev_pairs = train::read_parallel_corpus(dev_src, dev_tgt, vocab, keep_all, nullptr);
  if (!dev_pairs) return fail(dev_pairs.status().message());
  auto dev_sources = cli::read_lines(dev_src), dev_references = cli::read_lines(dev_tgt);
  if (!dev_sources) return fail(dev_sources.status().message());
  if (!dev_references) return fail(dev_references.status().message());

  train::Trainer trainer(o, std::move(train_pairs.value()));
  const std::string checkpoint = out + "/checkpoint.bin";
  if (args.has("--resume")) {
    if (const Status s = trainer.load_checkpoint(checkpoint); !s.ok()) return fail(s.message());
    std::fprintf(stderr, "mt_train: resumed at step %lld, epoch %d\n", static_cast<long long>(trainer.steps()),
                 trainer.epoch() + 1);
  }

  // Chinese has no spaces for 13a to split on: score it as sacreBLEU's zh does.
  eval::BleuOptions bleu_options;
  if (dev_tok == "zh") bleu_options.tokenizer = eval::BleuTokenizer::zh;
  if (dev_tok == "none") bleu_options.tokenizer = eval::BleuTokenizer::none;

  ModelMetadata meta;
  meta.source_language = args.get("--src-lang", extension(train_src));
  meta.target_language = args.get("--tgt-lang", extension(train_tgt));
  meta.training_corpus = std::filesystem::path(train_src).filename().string() + " + " +
                         std::filesystem::path(train_tgt).filename().string();
  meta.tool = "mt_train";
  meta.tool_version = mt::kVersion;
  meta.created = today();

  const bool tty = isatty(STDERR_FILENO);
  std::ofstream train_log(out + "/train.tsv", args.has("--resume") ? std::ios::app : std::ios::trunc);
  std::ofstream dev_log(out + "/dev.tsv", args.has("--resume") ? std::ios::app : std::ios::trunc);
  if (!args.has("--resume")) {
    train_log << "step\tepoch\tloss\tppl\tlr\tgrad_norm\ttokens_per_s\telapsed_s\n";
    dev_log << "step\tepoch\tdev_loss\tdev_ppl\tdev_bleu\tdev_chrf\telapsed_s\n";
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  double best_bleu = -1.0, window_loss = 0.0, window_nll = 0.0;
  int64_t window_tokens = 0;
  int stale_epochs = 0;
  double window_start = 0.0;
  bool stop = false;
  while (!stop) {
    const train::StepStats s = trainer.step();
    window_loss += s.loss * double(s.tokens);
    window_nll += s.nll * double(s.tokens);
    window_tokens += s.tokens;
    const int64_t step = trainer.steps();
    const double now = elapsed();
    if (step % log_every == 0) {
      const double tps = double(window_tokens) / std::max(1e-9, now - window_start);
      const double loss = window_loss / double(window_tokens), ppl = std::exp(window_nll / double(window_tokens));
      train_log << step << '\t' << trainer.epoch() + 1 << '\t' << loss << '\t' << ppl << '\t' << s.learning_rate << '\t'
                << s.grad_norm << '\t' << tps << '\t' << now << '\n'
                << std::flush;
      if (tty) {
        const double frac = double(trainer.batch_in_epoch()) / double(std::max<size_t>(1, trainer.batches_per_epoch()));
        const double eta =
            budget_s > 0 ? budget_s - now : (max_steps > 0 ? (max_steps - step) * now / double(step) : 0.0);
        char bar[21];
        for (int i = 0; i < 20; ++i) bar[i] = i < int(frac * 20) ? '#' : '.';
        bar[20] = 0;
        std::fprintf(stderr, "\repoch %d [%s] step %lld  loss %.3f  ppl %.1f  lr %.2e  %.0f tok/s  ETA %s   ",
                     trainer.epoch() + 1, bar, static_cast<long long>(step), loss, ppl, s.learning_rate, tps,
                     format_duration(std::max(0.0, eta)).c_str());
      }
      window_loss = window_nll = 0.0;
      window_tokens = 0;
      window_start = now;
    }
    const bool epoch_end = trainer.batch_in_epoch() == trainer.batches_per_epoch();
    const bool out_of_time = budget_s > 0 && now >= budget_s;
    const bool out_of_steps = max_steps > 0 && step >= max_steps;
    if (!epoch_end && !out_of_time && !out_of_steps) continue;

    // Evaluate: dev loss, then dev BLEU through libmt from the exported file.
    if (tty) std::fputc('\n', stderr);
    const train::StepStats dev = trainer.evaluate(*dev_pairs);
    meta.extra = {{"steps", std::to_string(step)}, {"epochs", std::to_string(trainer.epoch() + (epoch_end ? 1 : 0))}};
    const std::string last = out + "/model_last.mtm";
    if (const Status st = trainer.model().export_model(last, &vocab, meta); !st.ok()) return fail(st.message());
    auto score = dev_score(last, *dev_sources, *dev_references, dev_beam, o.threads, bleu_options);
    if (!score) return fail("dev translation failed: " + std::string(score.status().message()));
    dev_log << step << '\t' << trainer.epoch() + 1 << '\t' << dev.loss << '\t' << std::exp(dev.nll) << '\t'
            << score->bleu << '\t' << score->chrf << '\t' << elapsed() << '\n'
            << std::flush;
    std::fprintf(stderr, "mt_train: epoch %d step %lld: dev loss %.3f ppl %.2f BLEU %.2f chrF %.2f (%s)\n",
                 trainer.epoch() + 1, static_cast<long long>(step), dev.loss, std::exp(dev.nll), score->bleu,
                 score->chrf, format_duration(elapsed()).c_str());
    if (score->bleu > best_bleu) {
      best_bleu = score->bleu;
      stale_epochs = 0;
      char bleu[32];
      std::snprintf(bleu, sizeof(bleu), "%.2f", score->bleu);
      meta.extra.push_back({"dev_bleu", bleu});
      if (const Status st = trainer.model().export_model(out + "/model_best.mtm", &vocab, meta); !st.ok())
        return fail(st.message());
    } else {
      ++stale_epochs;
    }
    if (const Status st = trainer.save_checkpoint(checkpoint); !st.ok()) return fail(st.message());
    const bool out_of_epochs = max_epochs > 0 && trainer.epoch() + 1 >= max_epochs && epoch_end;
    const bool impatient = patience > 0 && stale_epochs >= patience;
    if (impatient) std::fprintf(stderr, "mt_train: no better dev BLEU for %d epochs: stopping\n", patience);
    stop = out_of_time || out_of_steps || out_of_epochs || impatient;
  }
  std::fprintf(stderr, "mt_train: done after %lld steps, best dev BLEU %.2f, %s\n",
               static_cast<long long>(trainer.steps()), best_bleu, format_duration(elapsed()).c_str());
  return 0;
}

// CUDA failures during training (a device fault, cuBLAS missing) throw, as
// do allocation failures: reported as one line like every other error.
int main(int argc, char** argv) { return mt::cli::guarded_main("mt_train", argc, argv, run); }
