"""Trains a small transformer with OpenNMT-py's own onmt_build_vocab and onmt_train on Multi30k
(en-de), so that the OpenNMT-py converter is checked on a model that translates, not only on random
ones. One joint SentencePiece unigram model (8,000 pieces) segments both sides, as Argos Translate's
models are made; OpenNMT-py's defaults otherwise (pre-norm, relu, no q/k/v biases), d_model 256,
3+3 layers, 4 heads, d_ff 1024, batches of 2,048 tokens; a checkpoint every 100 steps, so that a run
cut short still gives one (on two CPU cores a step takes a few seconds).

Debian's python3-torch multiplies through whatever libblas.so.3 is selected: without OpenBLAS
(apt-get install libopenblas0-pthread) that is the reference BLAS, about 6x slower (4 against 29
GFLOP/s for a 2048x256x1024 product on one thread here).

    V=/work/onmtvenv   # OpenNMT-py 3.3 on Debian's torch: docs/bring-your-own-model.md, "Rebuilding the fixtures"
    V/bin/python bench/converters/train_opennmt_py.py --data ../shared/data/multi30k --out runs/onmt-en-de --steps 1500
    then bench/converters/compare_opennmt_py.py (same venv) for the side-by-side.

Tuned on nothing: a fixed recipe; val is OpenNMT-py's validation set only, test_2016_flickr is for reporting.
"""

import argparse
import pathlib
import subprocess
import sys

import sentencepiece as spm


def read(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, type=pathlib.Path)
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    data = args.data.resolve()

    joint = read(data / "train.en") + read(data / "train.de")
    (out / "spm_input.txt").write_text("\n".join(joint) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(out / "spm_input.txt"), model_prefix=str(out / "sentencepiece"),
                                   vocab_size=8000, model_type="unigram", character_coverage=1.0)
    sp = spm.SentencePieceProcessor(model_file=str(out / "sentencepiece.model"))
    for split in ("train", "val", "test_2016_flickr"):
        for lang in ("en", "de"):
            lines = read(data / f"{split}.{lang}")
            (out / f"{split}.{lang}.sp").write_text(
                "".join(" ".join(sp.encode(line, out_type=str)) + "\n" for line in lines), encoding="utf-8")

    (out / "config.yaml").write_text(f"""
save_data: {out}/run
src_vocab: {out}/vocab.en
tgt_vocab: {out}/vocab.de
overwrite: true
data:
  corpus_1:
    path_src: {out}/train.en.sp
    path_tgt: {out}/train.de.sp
  valid:
    path_src: {out}/val.en.sp
    path_tgt: {out}/val.de.sp
save_model: {out}/model
save_checkpoint_steps: 100
keep_checkpoint: 40
train_steps: {args.steps}
valid_steps: 100000
report_every: 25
seed: 1234
encoder_type: transformer
decoder_type: transformer
position_encoding: true
enc_layers: 3
dec_layers: 3
hidden_size: 256
word_vec_size: 256
heads: 4
transformer_ff: 1024
dropout: [0.1]
attention_dropout: [0.1]
label_smoothing: 0.1
batch_type: tokens
batch_size: 2048
bucket_size: 32768
num_workers: 0
valid_batch_size: 2048
optim: adam
adam_beta2: 0.998
learning_rate: 0.5
decay_method: noam
warmup_steps: 400
param_init: 0
param_init_glorot: true
max_grad_norm: 0
world_size: 1
gpu_ranks: []
""", encoding="utf-8")
    bin_dir = pathlib.Path(sys.executable).parent
    subprocess.run([str(bin_dir / "onmt_build_vocab"), "-config", str(out / "config.yaml"), "-n_sample", "-1"],
                   check=True)
    env = {"OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads), "PATH": str(bin_dir)}
    subprocess.run([str(bin_dir / "onmt_train"), "-config", str(out / "config.yaml")], check=True, env=env)


if __name__ == "__main__":
    main()
