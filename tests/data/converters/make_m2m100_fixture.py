"""Builds the Hugging Face M2M-100 fixture the converter tests check against: a random tiny
M2M100ForConditionalGeneration made by transformers itself, with a SentencePiece BPE model trained
here on made-up text, M2M100Tokenizer's vocab.json (fairseq's order: <s> <pad> </s> <unk>, then
pieces; two left out) and its 100 language tokens, plus what transformers computes: tokenizer ids
with the source language's token, teacher-forced logits, greedy and beam output with the target
language's token forced first, decoded text. Rebuild as make_marian_fixture.py says:

    HF_HUB_OFFLINE=1 V/bin/python tests/data/converters/make_m2m100_fixture.py
"""

import json
import os
import pathlib
import random
import shutil
import tempfile

import numpy as np
import sentencepiece as spm
import torch
import transformers
from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer
from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

HERE = pathlib.Path(__file__).resolve().parent
WORDS = ("the a small red house dog cat runs near river man woman two green tree water plays and in "
         "le la petit rouge maison chien chat court pres homme femme deux vert arbre eau joue et dans "
         "der die das kleine rote haus hund katze lauft mann frau zwei baum wasser spielt und im").split()

CASES = [
    ("en", "fr", "the small dog runs near the river"),
    ("en", "fr", "a woman and two children"),
    ("en", "de", "the man plays in the water"),
    ("de", "en", "der kleine hund lauft"),
    ("fr", "de", "x y z qq inconnu"),
    ("en", "fr", "a"),
]


def main():
    out = HERE / "m2m100"
    if out.exists():
        shutil.rmtree(out)
    hf = out / "hf"
    hf.mkdir(parents=True)
    work = pathlib.Path(tempfile.mkdtemp())
    rng = random.Random(21)
    text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(600)) + "\n"
    (work / "text.txt").write_text(text)
    spm.SentencePieceTrainer.train(input=str(work / "text.txt"), model_prefix=str(work / "spm"), vocab_size=160,
                                   model_type="bpe", normalization_rule_name="identity", character_coverage=1.0,
                                   hard_vocab_limit=False)
    sp = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    leave_out = [p for p in pieces if p.startswith("\u2581") and len(p) > 3][:2]
    kept = [p for p in pieces if p not in ("<unk>", "<s>", "</s>") and p not in leave_out]
    random.Random(22).shuffle(kept)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for p in kept:
        vocab[p] = len(vocab)
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    # The hub's M2M-100 tokenizers list their language tokens as special (4.45's __init__ no longer
    # adds them itself): decode(skip_special_tokens=True) drops them.
    languages = [f"__{code}__" for code in FAIRSEQ_LANGUAGE_CODES["m2m100"]]
    tokenizer = M2M100Tokenizer(str(work / "vocab.json"), str(work / "spm.model"), src_lang="en", tgt_lang="fr",
                                additional_special_tokens=languages)
    V = len(vocab) + 100 + 8

    record(out, hf, work, tokenizer, M2M100Tokenizer, V, 24, CASES, lambda t, code: t.get_lang_id(code), leave_out,
           "m2m100")


def record(out, hf, work, tokenizer, tokenizer_class, V, weight_seed, cases_in, language_id, leave_out, label):
    """A random M2M100ForConditionalGeneration of vocabulary V saved with `tokenizer` into `hf`,
    loaded back as a user would, and what transformers computes on `cases_in` (source language,
    target language, text) in out/expected.json. `language_id(tokenizer, code)` is the tokenizer's
    id of a language. Shared with make_nllb_fixture.py."""
    torch.manual_seed(23)
    config = M2M100Config(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                          decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                          scale_embedding=True, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                          decoder_start_token_id=2, init_std=0.2, dropout=0.0, attention_dropout=0.0,
                          activation_dropout=0.0, activation_function="relu")
    model = M2M100ForConditionalGeneration(config).eval()
    g = torch.Generator().manual_seed(weight_seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g) if name.endswith("weight")
                        else 0.2 * torch.randn(p.shape, generator=g))
        model.model.shared.weight[2] *= 4.0  # </s>: some outputs end before max_length
    model.save_pretrained(hf, safe_serialization=True)
    tokenizer.save_pretrained(hf)
    model = M2M100ForConditionalGeneration.from_pretrained(hf).eval()
    tokenizer = tokenizer_class.from_pretrained(hf)
    shutil.rmtree(work)

    cases = []
    for src_lang, tgt_lang, text in cases_in:
        tokenizer.src_lang = src_lang
        ids = tokenizer(text).input_ids
        forced = language_id(tokenizer, tgt_lang)
        src = torch.tensor([ids])
        options = dict(forced_bos_token_id=forced, do_sample=False, max_length=20, bad_words_ids=[[1]])
        with torch.no_grad():
            greedy = model.generate(src, num_beams=1, **options)[0].tolist()
            beam = model.generate(src, num_beams=4, num_return_sequences=2, output_scores=True,
                                  return_dict_in_generate=True, early_stopping=True, length_penalty=1.0, **options)
            logits = model(input_ids=src, decoder_input_ids=torch.tensor([greedy[:-1]])).logits[0].double().numpy()
        cases.append({
            "source_language": src_lang, "target_language": tgt_lang, "text": text, "source_ids": ids,
            "greedy": greedy[1:], "greedy_text": tokenizer.decode(greedy, skip_special_tokens=True),
            "beam": [s[1:] for s in beam.sequences.tolist()],
            "beam_scores": [float(x) for x in beam.sequences_scores],
            "forced_logits": np.round(logits, 7).tolist(),
        })
    expected = {"transformers": transformers.__version__, "torch": torch.__version__, "vocab_size": V,
                "left_out": leave_out, "cases": cases}
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=0))
    print(label, "V", V, sorted(p.name for p in hf.iterdir()))
    for c in cases:
        print(c["source_ids"], c["greedy"], repr(c["greedy_text"]), c["beam_scores"])


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
