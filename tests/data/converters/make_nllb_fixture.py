"""Builds the Hugging Face NLLB fixture the converter tests check against: a random tiny
M2M100ForConditionalGeneration made by transformers itself with NllbTokenizer (a SentencePiece
unigram model trained here on made-up text, ids offset by one, four language codes and <mask> as
added tokens), plus what transformers computes: tokenizer ids with the source language's code,
teacher-forced logits, greedy and beam output with the target language's code forced first,
decoded text. Rebuild as make_marian_fixture.py says:

    HF_HUB_OFFLINE=1 V/bin/python tests/data/converters/make_nllb_fixture.py
"""

import os
import pathlib
import random
import shutil
import sys
import tempfile

import sentencepiece as spm
from transformers import NllbTokenizer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_m2m100_fixture import HERE, WORDS, record  # noqa: E402

LANGUAGES = ["eng_Latn", "fra_Latn", "deu_Latn", "zho_Hans"]
CASES = [
    ("eng_Latn", "fra_Latn", "the small dog runs near the river"),
    ("eng_Latn", "fra_Latn", "a woman and two children"),
    ("eng_Latn", "deu_Latn", "the man plays in the water"),
    ("deu_Latn", "eng_Latn", "der kleine hund lauft"),
    ("fra_Latn", "zho_Hans", "x y z qq inconnu"),
    ("eng_Latn", "fra_Latn", "a"),
]


def main():
    out = HERE / "nllb"
    if out.exists():
        shutil.rmtree(out)
    hf = out / "hf"
    hf.mkdir(parents=True)
    work = pathlib.Path(tempfile.mkdtemp())
    rng = random.Random(31)
    text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(600)) + "\n"
    (work / "text.txt").write_text(text)
    spm.SentencePieceTrainer.train(input=str(work / "text.txt"), model_prefix=str(work / "spm"), vocab_size=150,
                                   model_type="unigram", normalization_rule_name="identity", character_coverage=1.0,
                                   hard_vocab_limit=False)
    tokenizer = NllbTokenizer(str(work / "spm.model"), src_lang="eng_Latn", tgt_lang="fra_Latn",
                              additional_special_tokens=LANGUAGES)
    leave_out = []
    V = len(tokenizer)  # (HF cannot decode ids beyond it: the M2M-100 fixture has some)

    record(out, hf, work, tokenizer, NllbTokenizer, V, 34, CASES, lambda t, code: t.convert_tokens_to_ids(code),
           leave_out, "nllb")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
