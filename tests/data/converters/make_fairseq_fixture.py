"""Builds the fairseq fixtures the converter tests check against: tiny random transformers made by
fairseq 0.12.2's own option parsing, task and model builder, saved by checkpoint_utils.save_checkpoint
as fairseq-train does, with dictionaries (dict.src.txt, dict.tgt.txt) of SentencePiece pieces from a
model trained here, and what fairseq computes on them (reloaded by load_model_ensemble_and_task, as
fairseq-generate does): source ids (pieces + </s>), teacher-forced logits of the greedy output, and
SequenceGenerator's beam-1 and beam-4 output with scores. Variants: `fairseq-transformer`, fairseq's `transformer` defaults
(post-norm, sinusoid from position 2, relu, separate dictionaries, untied output) and `fairseq-prenorm`
(--encoder/decoder-normalize-before, --share-all-embeddings over a joined dictionary, gelu).
Generation with min_len 0: fairseq's default of 1 masks </s> at the first step after the softmax,
where libmt's min_decoding_length masks it before. No training step is run; biases and LayerNorms are randomized so they matter.

fairseq 0.12.2 needs a small patch to import on Python 3.11 (dataclass defaults, Debian's torch
version string; docs/bring-your-own-model.md, "Rebuilding the fixtures"):

    /work/fsvenv/bin/python tests/data/converters/make_fairseq_fixture.py
"""

import json
import pathlib
import random
import re
import shutil
import tempfile

import numpy as np
import sentencepiece as spm
import torch
from fairseq import checkpoint_utils, options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.trainer import Trainer
from fairseq_cli import preprocess

HERE = pathlib.Path(__file__).resolve().parent
WORDS = ("the a small red house dog cat runs near river man woman two green tree water plays and in "
         "le la petit rouge maison chien chat court pres homme femme deux vert arbre eau joue et dans").split()
TEXTS = ["the small dog runs near the river", "a woman and two children", "le chat joue dans la maison",
         "x y z qq inconnu", "a"]
MAX_LEN_B = 20
VARIANTS = {
    "fairseq-transformer": [],
    "fairseq-prenorm": ["--encoder-normalize-before", "--decoder-normalize-before", "--share-all-embeddings",
                        "--activation-fn", "gelu"],
}
# fairseq's fast-path copies of encoder layers' weights: rebuilt from q/k/v/fc on load.
FAST_PATH = re.compile(r"layers\.\d+\.(in_proj|out_proj|fc1|fc2)_(weight|bias)$")


def build(name, extra, work, sp, seed):
    out = HERE / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    raw, data = work / f"{name}-raw", work / f"{name}-bin"
    raw.mkdir()
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i) and not sp.is_unknown(i)]
    random.Random(seed).shuffle(pieces)
    leave_out = [p for p in pieces if p.startswith("\u2581") and len(p) > 3][:2]
    kept = [p for p in pieces if p not in leave_out]
    shared = "--share-all-embeddings" in extra
    (raw / "dict.src.txt").write_text("".join(f"{p} {1000 - i}\n" for i, p in enumerate(kept)))
    target = kept if shared else list(reversed(kept))[:-3]  # an odd size, as dictionaries may be
    (raw / "dict.tgt.txt").write_text("".join(f"{p} {1000 - i}\n" for i, p in enumerate(target)))
    for split in ("train", "valid"):
        (raw / f"{split}.src").write_text(" ".join(sp.encode(TEXTS[0], out_type=str)) + "\n")
        (raw / f"{split}.tgt").write_text(" ".join(sp.encode(TEXTS[1], out_type=str)) + "\n")
    pargs = options.get_preprocessing_parser().parse_args([
        "--source-lang", "src", "--target-lang", "tgt", "--trainpref", str(raw / "train"), "--validpref",
        str(raw / "valid"), "--destdir", str(data), "--srcdict", str(raw / "dict.src.txt"),
        "--tgtdict", str(raw / ("dict.src.txt" if shared else "dict.tgt.txt")), "--workers", "1"])
    preprocess.main(pargs)
    argv = [str(data), "--task", "translation", "--source-lang", "src", "--target-lang", "tgt", "--arch", "transformer",
            "--encoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--encoder-layers", "2",
            "--encoder-attention-heads", "2", "--decoder-embed-dim", "16", "--decoder-ffn-embed-dim", "32",
            "--decoder-layers", "2", "--decoder-attention-heads", "2", "--max-source-positions", "64",
            "--max-target-positions", "64", "--dropout", "0.0", "--optimizer", "adam", "--lr", "5e-4",
            "--max-tokens", "1000", "--cpu", "--seed", str(seed), "--save-dir", str(work / name),
            "--no-save-optimizer-state"] + extra
    ns = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
    cfg = convert_namespace_to_omegaconf(ns)
    utils.set_torch_seed(seed)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if FAST_PATH.search(n):
                continue
            if "layer_norm" in n and n.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif n.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "embed_positions" in n:
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
        # Some outputs end early: </s>'s row leans towards the last LayerNorm's bias, which every
        # decoder output carries (less with shared embeddings, where the row also starts decoding).
        last = model.decoder.layer_norm or model.decoder.layers[-1].final_layer_norm
        model.decoder.output_projection.weight[task.target_dictionary.eos()] += (1.0 if shared else 3.0) * last.bias
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    epoch_itr = trainer.get_train_iterator(epoch=1, load_dataset=True)
    epoch_itr.next_epoch_itr(shuffle=False)
    checkpoint_utils.save_checkpoint(cfg.checkpoint, trainer, epoch_itr, None)
    shutil.copy(work / name / "checkpoint_last.pt", out / "checkpoint.pt")
    shutil.copy(raw / "dict.src.txt", out / "dict.src.txt")
    shutil.copy(raw / ("dict.src.txt" if shared else "dict.tgt.txt"), out / "dict.tgt.txt")
    shutil.copy(work / "spm.model", out / "sentencepiece.bpe.model")

    models, rcfg, rtask = checkpoint_utils.load_model_ensemble_and_task([str(out / "checkpoint.pt")],
                                                                       arg_overrides={"data": str(out)})
    model = models[0].eval()
    sd, td = rtask.source_dictionary, rtask.target_dictionary
    gcfg = rcfg.generation
    gcfg.max_len_a, gcfg.max_len_b, gcfg.min_len = 0, MAX_LEN_B, 0
    generators = {}
    for beam in (1, 4):
        gcfg.beam, gcfg.nbest = beam, min(beam, 2)
        generators[beam] = rtask.build_generator(models, gcfg)
    cases = []
    for text in TEXTS:
        tokens = " ".join(sp.encode(text, out_type=str))
        src = sd.encode_line(tokens, add_if_not_exist=False, append_eos=True).long()
        sample = rtask.build_dataset_for_inference([src], [src.numel()]).collater(
            [rtask.build_dataset_for_inference([src], [src.numel()])[0]])
        results = {beam: rtask.inference_step(gen, models, sample)[0] for beam, gen in generators.items()}
        greedy = results[1][0]["tokens"].tolist()  # ends with </s> (forced at the limit)
        prev = torch.tensor([[td.eos()] + greedy[:-1]])
        with torch.no_grad():
            logits, _ = model(src.unsqueeze(0), torch.tensor([src.numel()]), prev)
        strip = lambda hyp: [i for i in hyp if i != td.eos()]  # noqa: E731
        cases.append({"text": text, "source_ids": src.tolist(), "greedy": greedy,
                      "greedy_score": float(results[1][0]["score"]),
                      "greedy_text": sp.decode([td[i] for i in strip(greedy)]),
                      "beam": [h["tokens"].tolist() for h in results[4]],
                      "beam_scores": [float(h["score"]) for h in results[4]],
                      "forced_logits": np.round(logits[0].double().numpy(), 7).tolist()})
        print(name, cases[-1]["source_ids"], greedy, repr(cases[-1]["greedy_text"]), cases[-1]["beam_scores"])
    expected = {"fairseq": "0.12.2", "torch": torch.__version__, "max_len_b": MAX_LEN_B, "left_out": leave_out,
                "target_symbols": list(td.symbols), "cases": cases}
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=0))


def main():
    work = pathlib.Path(tempfile.mkdtemp())
    rng = random.Random(51)
    text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(500)) + "\n"
    (work / "text.txt").write_text(text)
    spm.SentencePieceTrainer.train(input=str(work / "text.txt"), model_prefix=str(work / "spm"), vocab_size=70,
                                   model_type="bpe", normalization_rule_name="identity", character_coverage=1.0,
                                   hard_vocab_limit=False)
    sp = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    for seed, (name, extra) in enumerate(VARIANTS.items(), start=61):
        build(name, extra, work, sp, seed)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
