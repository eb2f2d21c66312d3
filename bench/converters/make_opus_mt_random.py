"""A random MarianMTModel directory of OPUS-MT's size, built by transformers itself: d_model 512,
6+6 layers, 8 heads, d_ff 2048, swish, shared and tied embeddings, vocabulary 58,101 (OPUS-MT en-de's),
with two small SentencePiece models and a vocab.json of that size, so that both libmt's converter and
CTranslate2's read it as they would read a real OPUS-MT download. For speed comparisons (the weights
are random: the translations mean nothing).

    python3 bench/converters/make_opus_mt_random.py OUT_DIR     (needs torch, transformers, sentencepiece)
"""

import json
import pathlib
import random
import sys
import tempfile

import sentencepiece as spm
import torch
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

VOCAB = 58101


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyz"
    text = "\n".join(" ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 8)))
                               for _ in range(12)) for _ in range(2000)) + "\n"
    with tempfile.TemporaryDirectory() as work:
        (pathlib.Path(work) / "text.txt").write_text(text)
        for side in ("source", "target"):
            spm.SentencePieceTrainer.train(input=f"{work}/text.txt", model_prefix=f"{work}/{side}", vocab_size=1000,
                                           model_type="unigram", character_coverage=1.0)
            (out / f"{side}.spm").write_bytes(pathlib.Path(f"{work}/{side}.model").read_bytes())
    pieces = []
    for side in ("source", "target"):
        sp = spm.SentencePieceProcessor(model_file=str(out / f"{side}.spm"))
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if p not in ("<unk>", "<s>", "</s>") and p not in pieces:
                pieces.append(p)
    vocab = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        vocab[p] = len(vocab)
    while len(vocab) < VOCAB - 1:
        vocab[f"\u2581filler{len(vocab)}"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    torch.manual_seed(1)
    config = MarianConfig(vocab_size=VOCAB, decoder_vocab_size=VOCAB, d_model=512, encoder_layers=6, decoder_layers=6,
                          encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                          decoder_ffn_dim=2048, activation_function="swish", max_position_embeddings=512,
                          scale_embedding=True, pad_token_id=VOCAB - 1, eos_token_id=0,
                          decoder_start_token_id=VOCAB - 1, forced_eos_token_id=0, share_encoder_decoder_embeddings=True,
                          tie_word_embeddings=True)
    model = MarianMTModel(config).eval()
    model.generation_config.bad_words_ids = [[VOCAB - 1]]
    model.save_pretrained(out, safe_serialization=True)
    MarianTokenizer(str(out / "source.spm"), str(out / "target.spm"), str(out / "vocab.json")).save_pretrained(out)
    print(f"{out}: {sum(p.numel() for p in model.parameters()):,} parameters")


if __name__ == "__main__":
    main(sys.argv[1])
