// mt_bleu: corpus BLEU and chrF, the same figures as sacreBLEU 2 with its defaults.
//
//   mt_bleu REFERENCE [-i HYPOTHESES] [--tokenize 13a|zh|none] [--lowercase] [--metrics bleu,chrf]
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "guarded_main.hpp"
#include "cli_args.hpp"
#include "eval/scoring.hpp"

namespace {

constexpr const char* kUsage = R"(usage: mt_bleu REFERENCE [options] < hypotheses

Scores hypotheses (one per line, standard input or -i) against one reference
file, line by line, as sacreBLEU 2 does with its defaults, and prints
"METRIC|SIGNATURE = SCORE ..." per metric.

options:
  -i, --input FILE      hypotheses file instead of standard input
  --tokenize NAME       BLEU tokenizer: 13a (default), zh (Chinese), none
  --lowercase           lowercase before scoring
  --metrics LIST        bleu, chrf or bleu,chrf (default)
  --score-only          print only the numbers, one per metric
  -h, --help            this text
)";

int fail(const std::string& message) {
  std::fprintf(stderr, "mt_bleu: %s\n", message.c_str());
  return 1;
}

// Lines without their newline; a final line without one counts, as in Python.
bool read_lines(std::istream& in, std::vector<std::string>* lines) {
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines->push_back(line);
  }
  return !in.bad();
}

int run(int argc, char** argv) {
  mt::cli::Args args(argc, argv, {"--lowercase", "--score-only", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  args.reject_unknown({"-i", "--input", "--tokenize", "--lowercase", "--metrics", "--score-only"});
  if (!args.ok()) return fail(args.error());
  if (args.positional().size() != 1) return fail("expected one reference file (see --help)");

  mt::eval::BleuOptions bleu_options;
  const std::string tok = args.get("--tokenize", "13a");
  if (tok == "13a") {
    bleu_options.tokenizer = mt::eval::BleuTokenizer::tok_13a;
  } else if (tok == "zh") {
    bleu_options.tokenizer = mt::eval::BleuTokenizer::zh;
  } else if (tok == "none") {
    bleu_options.tokenizer = mt::eval::BleuTokenizer::none;
  } else {
    return fail("unknown tokenizer '" + tok + "' (13a, zh or none)");
  }
  bleu_options.lowercase = args.has("--lowercase");
  const std::string metrics = args.get("--metrics", "bleu,chrf");
  const bool bleu = metrics == "bleu" || metrics == "bleu,chrf" || metrics == "chrf,bleu";
  const bool chrf = metrics == "chrf" || metrics == "bleu,chrf" || metrics == "chrf,bleu";
  if (!bleu && !chrf) return fail("unknown --metrics '" + metrics + "' (bleu, chrf or bleu,chrf)");

  std::vector<std::string> refs, hyps;
  std::ifstream ref_file(args.positional()[0]);
  if (!ref_file) return fail("cannot open '" + args.positional()[0] + "'");
  if (!read_lines(ref_file, &refs)) return fail("error reading '" + args.positional()[0] + "'");
  const std::string input = args.get("-i", args.get("--input", ""));
  std::ifstream hyp_file;
  if (!input.empty()) {
    hyp_file.open(input);
    if (!hyp_file) return fail("cannot open '" + input + "'");
  }
  if (!read_lines(input.empty() ? std::cin : hyp_file, &hyps)) return fail("error reading the hypotheses");
  if (hyps.size() != refs.size()) {
    return fail("the hypotheses have " + std::to_string(hyps.size()) + " lines, the reference " +
                std::to_string(refs.size()));
  }

  const bool score_only = args.has("--score-only");
  if (bleu) {
    auto s = mt::eval::corpus_bleu(hyps, refs, bleu_options);
    if (!s) return fail(s.status().message());
    if (score_only) {
      std::printf("%.2f\n", s->score);
    } else {
      std::printf("BLEU|%s = %s\n", bleu_options.signature().c_str(), s->format().substr(7).c_str());
    }
  }
  if (chrf) {
    mt::eval::ChrfOptions chrf_options;
    chrf_options.lowercase = bleu_options.lowercase;
    auto s = mt::eval::corpus_chrf(hyps, refs, chrf_options);
    if (!s) return fail(s.status().message());
    if (score_only) {
      std::printf("%.2f\n", s->score);
    } else {
      std::printf("chrF2|%s = %.2f\n", chrf_options.signature().c_str(), s->score);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mt::cli::guarded_main("mt_bleu", argc, argv, run); }
