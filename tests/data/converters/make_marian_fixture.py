"""Builds the Hugging Face Marian (OPUS-MT layout) fixtures the converter tests check against.

Random tiny MarianMTModel directories made by transformers itself, with two SentencePiece
models trained here on made-up text and a joint vocab.json whose ids are not the SentencePiece
ids (some source pieces left out, so they become <unk> as in HF), plus what transformers computes
on them: tokenizer ids, teacher-forced logits, greedy and beam output, decoded text. CI reads the
committed results; it never needs torch or transformers. Rebuild (needs both):

    python3 -m venv --system-site-packages V   # with Debian's python3-torch, python3-sentencepiece
    V/bin/pip install transformers==4.45.2 tokenizers==0.20.3 safetensors==0.8.0 huggingface_hub==0.36.2
    HF_HUB_OFFLINE=1 V/bin/python tests/data/converters/make_marian_fixture.py

Variants: "marian-shared" (safetensors, fp32, shared vocabulary, swish), "marian-fp16-bin"
(pytorch_model.bin in fp16, relu, untied output projection, no embedding scale), and
"marian-separate" (separate source and target vocabularies, gelu).
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
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

HERE = pathlib.Path(__file__).resolve().parent

WORDS_SRC = ("the a small big red blue house dog cat runs walks sees near over under river street "
             "man woman child two three green tree water plays sits stands looks at with and in on").split()
WORDS_TGT = ("le la un une petit grand rouge bleu maison chien chat court marche voit pres sur sous "
             "riviere rue homme femme enfant deux trois vert arbre eau joue assis debout regarde avec et dans").split()

SENTENCES = [
    "the small dog runs near the river",
    "a woman with two children sits under a green tree",
    "three red cats",
    "the man looks at the big blue house and the water",
    "x y z unknown letters qq",
    "a",
    "children play in the street with a dog and a cat",
    # Marian language codes, read as MarianTokenizer reads them (the regex >>.+<<).
    ">>fra<< the small dog runs",
    ">>deu<< a woman >>fra<< sits near the river",
    "the >>x<< cat << >> walks",
    ">><< a dog",
    ">>zzz<< two cats",
]


def made_up_text(words, seed, lines=400):
    rng = random.Random(seed)
    return "\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(lines)) + "\n"


def train_spm(text, prefix, vocab_size):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    spm.SentencePieceTrainer.train(input=f.name, model_prefix=str(prefix), vocab_size=vocab_size,
                                   model_type="unigram", normalization_rule_name="identity",
                                   character_coverage=1.0, hard_vocab_limit=False)
    os.unlink(f.name)
    return pathlib.Path(str(prefix) + ".model")


def spm_pieces(path):
    sp = spm.SentencePieceProcessor(model_file=str(path))
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())]


def vocab_json(pieces_lists, leave_out, seed, pad_last=True, languages=()):
    """OPUS-MT's layout: </s> 0, <unk> 1, the pieces (shuffled), <pad> last (or 2: HF needs one
    pad id valid in both tables of separate vocabularies); `leave_out` missing."""
    rng = random.Random(seed)
    pieces = []
    for plist in pieces_lists:
        for p in plist:
            if p not in ("<unk>", "<s>", "</s>") and p not in pieces and p not in leave_out:
                pieces.append(p)
    rng.shuffle(pieces)
    vocab = {"</s>": 0, "<unk>": 1} if pad_last else {"</s>": 0, "<unk>": 1, "<pad>": 2}
    for p in pieces:
        vocab[p] = len(vocab)
    for code in languages:  # Marian's target-language tokens
        vocab[code] = len(vocab)
    if pad_last:
        vocab["<pad>"] = len(vocab)
    return vocab


def randomize(model, seed, eos_bias):
    """Weights far from init, so that argmaxes vary and every parameter matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g) if name.endswith("weight")
                        else 0.2 * torch.randn(p.shape, generator=g))
        model.final_logits_bias.copy_(0.1 * torch.randn(model.final_logits_bias.shape, generator=g))
        model.final_logits_bias[0, 0] += eos_bias  # </s>: some sentences end before max_length


def build(name, *, activation, separate, half, safetensors, tied, scale, seed, eos_bias):
    out = HERE / name
    if out.exists():
        shutil.rmtree(out)
    hf = out / "hf"
    hf.mkdir(parents=True)
    work = pathlib.Path(tempfile.mkdtemp())
    src_spm = train_spm(made_up_text(WORDS_SRC, seed), work / "source", 60)
    # HF's separate vocabularies need the target's no larger than the source's: its decoder
    # embedding is a copy of the source-sized table (MarianModel.__init__).
    tgt_spm = train_spm(made_up_text(WORDS_TGT, seed + 1), work / "target", 48 if separate else 64)
    shutil.copy(src_spm, hf / "source.spm")
    shutil.copy(tgt_spm, hf / "target.spm")
    src_pieces, tgt_pieces = spm_pieces(src_spm), spm_pieces(tgt_spm)
    # Two source pieces the model lacks: HF maps them to <unk>.
    leave_out = [p for p in src_pieces if p.startswith("\u2581") and len(p) > 3][:2]
    if separate:
        vocab = vocab_json([src_pieces], leave_out, seed, pad_last=False)
        target_vocab = vocab_json([tgt_pieces], [], seed + 2, pad_last=False)
        (hf / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
        (hf / "target_vocab.json").write_text(json.dumps(target_vocab, ensure_ascii=False))
        V, Vt = len(vocab), len(target_vocab)
    else:
        vocab = vocab_json([src_pieces, tgt_pieces], leave_out, seed, languages=[">>fra<<", ">>deu<<"])
        (hf / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
        V = Vt = len(vocab)

    pad = vocab["<pad>"]
    torch.manual_seed(seed)
    config = MarianConfig(
        vocab_size=V, decoder_vocab_size=Vt, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        activation_function=activation, max_position_embeddings=64, scale_embedding=scale,
        pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad,
        forced_eos_token_id=0, share_encoder_decoder_embeddings=not separate, tie_word_embeddings=tied,
        init_std=0.2, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        num_beams=4, max_length=20, bad_words_ids=[[pad]])
    model = MarianMTModel(config).eval()
    randomize(model, seed, eos_bias)
    if half:
        model = model.half()
    model.save_pretrained(hf, safe_serialization=safetensors)
    # What a user gets: the saved directory loaded back (fp32 by default; the position table,
    # never saved, is computed afresh).
    model = MarianMTModel.from_pretrained(hf).eval()
    tokenizer = MarianTokenizer(str(hf / "source.spm"), str(hf / "target.spm"), str(hf / "vocab.json"),
                                target_vocab_file=str(hf / "target_vocab.json") if separate else None,
                                separate_vocabs=separate, model_max_length=64)
    tokenizer.save_pretrained(hf)
    shutil.rmtree(work)

    cases = []
    for text in SENTENCES:
        ids = tokenizer(text).input_ids
        src = torch.tensor([ids])
        with torch.no_grad():
            greedy = model.generate(src, num_beams=1, do_sample=False, max_length=20)[0].tolist()
            # early_stopping=True: done at num_beams finished hypotheses, libmt's rule (and CT2's).
            # OPUS-MT's generation_config says False, which keeps going while a running beam might
            # still win, and can pick another top-1 (the converter tests compare like with like).
            beam = model.generate(src, num_beams=4, do_sample=False, max_length=20, num_return_sequences=2,
                                  output_scores=True, return_dict_in_generate=True, length_penalty=1.0,
                                  early_stopping=True)
            # Teacher forcing along the greedy output (decoder input: start + output).
            dec = torch.tensor([greedy[:-1]])
            logits = model(input_ids=src, decoder_input_ids=dec).logits[0].double().numpy()
        # Sequences begin with the decoder start id; the text is what HF users get.
        cases.append({
            "text": text,
            "source_ids": ids,
            "greedy": greedy[1:],
            "greedy_text": tokenizer.decode(greedy, skip_special_tokens=True),
            "beam": [s[1:] for s in beam.sequences.tolist()],
            "beam_scores": [float(x) for x in beam.sequences_scores],
            "beam_text": tokenizer.decode(beam.sequences[0], skip_special_tokens=True),
            "forced_logits": np.round(logits, 7).tolist(),
        })
    expected = {"transformers": transformers.__version__, "torch": torch.__version__,
                "vocab_size": V, "target_vocab_size": Vt, "left_out": leave_out, "cases": cases}
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=0))
    print(name, "V", V, "Vt", Vt, "files", sorted(p.name for p in hf.iterdir()))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    build("marian-shared", activation="swish", separate=False, half=False, safetensors=True, tied=True,
          scale=True, seed=11, eos_bias=2.4)
    build("marian-fp16-bin", activation="relu", separate=False, half=True, safetensors=False, tied=False,
          scale=False, seed=12, eos_bias=3.0)
    build("marian-separate", activation="gelu", separate=True, half=False, safetensors=True, tied=False,
          scale=True, seed=13, eos_bias=3.2)
