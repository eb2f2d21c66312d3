"""Trains a small OPUS-MT-style MarianMTModel with transformers' own code on Multi30k (en-de), so that
the converter is checked on a model that translates, not only on random ones.

Like OPUS-MT: independent source and target SentencePiece unigram models, one joint vocab.json over
both (</s> 0, <unk> 1, ..., <pad> last), swish, post-norm, shared and tied embeddings, decoding from
<pad>. Smaller than OPUS-MT (d_model 256, 3+3 layers) to train on two CPU cores in about 20 minutes.

    python3 -m venv --system-site-packages V   # Debian's python3-torch and python3-sentencepiece
    V/bin/pip install transformers==4.45.2 tokenizers==0.20.3 safetensors==0.8.0 huggingface_hub==0.36.2
    HF_HUB_OFFLINE=1 V/bin/python bench/converters/train_hf_marian.py --data ../shared/data/multi30k \\
        --out runs/hf-marian-en-de --minutes 20
    then bench/converters/compare_hf_marian.py (same venv) for the side-by-side.

Tuned on nothing: fixed recipe; val is only printed, test_2016_flickr is for reporting.
"""

import argparse
import json
import math
import pathlib
import random
import shutil
import tempfile
import time

import sentencepiece as spm
import torch
from transformers import MarianConfig, MarianMTModel, MarianTokenizer


def read(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def train_spm(lines, prefix, size):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(input=f.name, model_prefix=str(prefix), vocab_size=size, model_type="unigram",
                                   character_coverage=1.0)
    pathlib.Path(f.name).unlink()


def joint_vocab(src_model, tgt_model):
    pieces = []
    seen = set()
    for model in (src_model, tgt_model):
        sp = spm.SentencePieceProcessor(model_file=str(model))
        for i in range(sp.get_piece_size()):
            p = sp.id_to_piece(i)
            if p in ("<unk>", "<s>", "</s>") or p in seen:
                continue
            seen.add(p)
            pieces.append(p)
    vocab = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    data = pathlib.Path(args.data)
    out = pathlib.Path(args.out)
    model_dir = out / "hf"
    if model_dir.exists():
        shutil.rmtree(model_dir)
    model_dir.mkdir(parents=True)

    src, tgt = read(data / "train.en"), read(data / "train.de")
    train_spm(src, out / "source", 4000)
    train_spm(tgt, out / "target", 4000)
    shutil.copy(out / "source.model", model_dir / "source.spm")
    shutil.copy(out / "target.model", model_dir / "target.spm")
    vocab = joint_vocab(model_dir / "source.spm", model_dir / "target.spm")
    (model_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    V, pad = len(vocab), vocab["<pad>"]
    tokenizer = MarianTokenizer(str(model_dir / "source.spm"), str(model_dir / "target.spm"),
                                str(model_dir / "vocab.json"), source_lang="en", target_lang="de", model_max_length=128)
    config = MarianConfig(vocab_size=V, decoder_vocab_size=V, d_model=256, encoder_layers=3, decoder_layers=3,
                          encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=1024,
                          decoder_ffn_dim=1024, activation_function="swish", max_position_embeddings=256,
                          scale_embedding=True, pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad,
                          forced_eos_token_id=0, dropout=0.1, attention_dropout=0.0, activation_dropout=0.0,
                          share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    model = MarianMTModel(config)
    model.generation_config.bad_words_ids = [[pad]]
    model.generation_config.num_beams = 4
    model.generation_config.max_length = 128

    pairs = []
    for s, t in zip(src, tgt):
        x = tokenizer(s).input_ids
        y = tokenizer(text_target=t).input_ids
        if len(x) <= 100 and len(y) <= 100:
            pairs.append((x, y))
    print(f"{len(pairs)} training pairs, vocabulary {V}", flush=True)

    optimizer = torch.optim.Adam(model.parameters(), lr=7e-4, betas=(0.9, 0.98), eps=1e-9)
    warmup = 800

    def lr_at(step):
        return min((step + 1) / warmup, math.sqrt(warmup / (step + 1)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=0.1)
    tokens_per_batch = 3000
    pairs.sort(key=lambda p: (len(p[0]), len(p[1])))
    batches, current, longest = [], [], 0
    for p in pairs:
        longest_next = max(longest, len(p[0]), len(p[1]))
        if current and longest_next * (len(current) + 1) > tokens_per_batch:
            batches.append(current)
            current, longest_next = [], max(len(p[0]), len(p[1]))
        current.append(p)
        longest = longest_next
    batches.append(current)

    def collate(batch):
        S = max(len(x) for x, _ in batch)
        T = max(len(y) for _, y in batch)
        ids = torch.full((len(batch), S), pad)
        mask = torch.zeros((len(batch), S), dtype=torch.long)
        labels = torch.full((len(batch), T), -100)
        for i, (x, y) in enumerate(batch):
            ids[i, :len(x)] = torch.tensor(x)
            mask[i, :len(x)] = 1
            labels[i, :len(y)] = torch.tensor(y)
        return ids, mask, labels

    start, step, epoch = time.time(), 0, 0
    model.train()
    while time.time() - start < args.minutes * 60:
        epoch += 1
        random.shuffle(batches)
        for batch in batches:
            ids, mask, labels = collate(batch)
            logits = model(input_ids=ids, attention_mask=mask, labels=labels).logits
            loss = loss_fn(logits.view(-1, V), labels.view(-1))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.3f} {time.time() - start:.0f}s", flush=True)
            if time.time() - start >= args.minutes * 60:
                break
    model.eval()
    model.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)
    print(f"trained {step} steps ({epoch} epochs) in {time.time() - start:.0f}s -> {model_dir}", flush=True)


if __name__ == "__main__":
    main()
