#!/usr/bin/env python3
"""How much longer and how varied sampled segmentations are, per alpha.

mt_train --subword-alpha X draws each side's unigram segmentation with
probability P^X (libmt's Tokenizer::encode_sampled). SentencePiece's
encode(..., enable_sampling=True, alpha=X, nbest_size=-1) draws from the same
distribution (test_tokenizer "[sampling]" checks it), so this measures with
it, seeded, over the first 3,000 lines of each side: pieces per line against
the best segmentation, both sides together, and the share of the target
side's lines drawn otherwise than best (docs/training.md's table):

  build/tools/mt_model vocab extract models/en-de-tiny.mtm -o ende.model
  python bench/subword_sampling_lengths.py ende.model ../shared/data/multi30k/train.{en,de}

Needs sentencepiece (pip; used here only, never by libmt).
"""
import sys

import sentencepiece as spm

LINES = 3000
ALPHAS = (0.1, 0.2, 0.3, 0.5, 1.0)


def first_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line, _ in zip(f, range(LINES))]


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: subword_sampling_lengths.py VOCAB.model SOURCE TARGET")
    spm.set_random_generator_seed(1)
    sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
    source, target = first_lines(sys.argv[2]), first_lines(sys.argv[3])
    best = [sp.encode(line) for line in source + target]
    best_pieces = sum(map(len, best))
    print(f"best segmentation: {best_pieces / len(best):.2f} pieces per line")
    print("| X | pieces | target lines changed |\n|---|---|---|")
    for alpha in ALPHAS:
        drawn = [sp.encode(line, enable_sampling=True, alpha=alpha, nbest_size=-1) for line in source + target]
        changed = sum(d != b for d, b in zip(drawn[len(source):], best[len(source):]))
        print(f"| {alpha} | {sum(map(len, drawn)) / best_pieces:.3f}x | {100 * changed / len(target):.1f}% |")


if __name__ == "__main__":
    main()
