"""Builds the OpenNMT-py fixtures the converter tests check against: tiny random transformers made
by OpenNMT-py 3.3's own option parsing, vocabulary building, model builder and ModelSaver (the
checkpoint onmt_translate reads), over a SentencePiece model trained here on made-up text, and
what OpenNMT-py's own translator computes on them: source ids (pieces through the checkpoint's
vocabulary; onmt adds no </s>), teacher-forced logits of the greedy output, greedy and beam
output with scores. Two variants: OpenNMT-py's defaults (pre-norm, no q/k/v or feed-forward
biases, relu, interleaved sinusoid, separate vocabularies, untied generator) and
`opennmt-py-shared` (shared vocabulary and embeddings, tied generator, biases, gelu, the
concatenated sinusoid). No training step is run; biases and LayerNorms are randomized so they
matter. Rebuild (the venv recipe is in docs/bring-your-own-model.md, "Rebuilding the fixtures"):

    /work/onmtvenv/bin/python tests/data/converters/make_opennmt_py_fixture.py
"""

import io
import json
import os
import pathlib
import random
import shutil
import tempfile

import numpy as np
import onmt
import sentencepiece as spm
import torch
from onmt.constants import DefaultTokens
from onmt.model_builder import build_model
from onmt.models import build_model_saver
from onmt.opts import config_opts, train_opts, translate_opts
from onmt.train_single import _get_model_opts, _init_train
from onmt.translate.translator import build_translator
from onmt.utils.logging import init_logger
from onmt.utils.optimizers import Optimizer
from onmt.utils.parse import ArgumentParser

HERE = pathlib.Path(__file__).resolve().parent
WORDS = ("the a small red house dog cat runs near river man woman two green tree water plays and in "
         "le la petit rouge maison chien chat court pres homme femme deux vert arbre eau joue et dans").split()
TEXTS = ["the small dog runs near the river", "a woman and two children", "le chat joue dans la maison",
         "x y z qq inconnu", "a"]
MAX_LENGTH = 20
VARIANTS = {
    "opennmt-py": [],
    "opennmt-py-shared": ["-share_vocab", "-share_embeddings", "-share_decoder_embeddings", "-add_qkvbias",
                          "-add_ffnbias", "-pos_ffn_activation_fn", "gelu", "-position_encoding_type",
                          "SinusoidalConcat"],
}


def train_spm(work: pathlib.Path) -> spm.SentencePieceProcessor:
    rng = random.Random(31)
    text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(500)) + "\n"
    (work / "text.txt").write_text(text)
    spm.SentencePieceTrainer.train(input=str(work / "text.txt"), model_prefix=str(work / "spm"), vocab_size=70,
                                   model_type="unigram", normalization_rule_name="identity", character_coverage=1.0,
                                   hard_vocab_limit=False)
    return spm.SentencePieceProcessor(model_file=str(work / "spm.model"))


def build(name, extra, work, sp, seed):
    out = HERE / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i) and not sp.is_unknown(i)]
    rng = random.Random(seed)
    rng.shuffle(pieces)
    leave_out = [p for p in pieces if p.startswith("\u2581") and len(p) > 3][:2]
    kept = [p for p in pieces if p not in leave_out]
    (work / "src.vocab").write_text("".join(f"{p}\t{1000 - i}\n" for i, p in enumerate(kept)))
    (work / "tgt.vocab").write_text("".join(f"{p}\t{1000 - i}\n" for i, p in enumerate(reversed(kept))))
    (work / "train.src").write_text("the dog\n")
    (work / "train.tgt").write_text("le chien\n")
    (work / "config.yaml").write_text(
        f"data:\n  corpus_1:\n    path_src: {work}/train.src\n    path_tgt: {work}/train.tgt\n"
        f"src_vocab: {work}/src.vocab\ntgt_vocab: {work}/{'src' if '-share_vocab' in extra else 'tgt'}.vocab\n"
        f"save_model: {work}/model\n")
    argv = ["-config", str(work / "config.yaml"), "-encoder_type", "transformer", "-decoder_type", "transformer",
            "-position_encoding", "-enc_layers", "2", "-dec_layers", "2", "-hidden_size", "16", "-word_vec_size",
            "16", "-heads", "2", "-transformer_ff", "32", "-dropout", "0.0", "-attention_dropout", "0.0",
            "-seed", str(seed), "-param_init", "0", "-param_init_glorot", "-optim", "adam", "-learning_rate", "2",
            "-batch_size", "16", "-train_steps", "1", "-save_checkpoint_steps", "1"] + extra
    parser = ArgumentParser(description="train.py")
    train_opts(parser)
    opt, unknown = parser.parse_known_args(argv)
    assert not unknown, unknown
    ArgumentParser.validate_train_opts(opt)
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    torch.manual_seed(seed)
    checkpoint, vocabs, _ = _init_train(opt)
    model_opt = _get_model_opts(opt, checkpoint=None)
    model = build_model(model_opt, opt, vocabs, checkpoint)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "layer_norm" in n and n.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif n.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "emb_luts" in n:
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
        # Some outputs end early; <s> and <blank> (which OpenNMT-py may emit) seldom win.
        model.generator.bias[vocabs["tgt"][DefaultTokens.EOS]] += 0.5
        model.generator.bias[vocabs["tgt"][DefaultTokens.BOS]] -= 4.0
        model.generator.bias[vocabs["tgt"][DefaultTokens.PAD]] -= 4.0
    saver = build_model_saver(model_opt, opt, model, vocabs, Optimizer.from_opt(model, opt, checkpoint=None))
    saver.save(1)
    # As onmt_release_model leaves a checkpoint: without the optimizer's state.
    checkpoint = torch.load(work / "model_step_1.pt", map_location="cpu")
    checkpoint["optim"] = None
    torch.save(checkpoint, out / "model.pt")
    shutil.copy(work / "spm.model", out / "sentencepiece.model")

    def translator(beam, n_best):
        p = ArgumentParser(description="translate.py")
        config_opts(p)
        translate_opts(p, dynamic=True)
        topt = p.parse_args(["-model", str(out / "model.pt"), "-src", os.devnull, "-output", os.devnull, "-gpu", "-1",
                             "-max_length", str(MAX_LENGTH), "-beam_size", str(beam), "-n_best", str(n_best)])
        ArgumentParser.validate_translate_opts(topt)
        ArgumentParser._get_all_transform_translate(topt)
        ArgumentParser._validate_transforms_opts(topt)
        ArgumentParser.validate_translate_opts_dynamic(topt)
        return build_translator(topt, report_score=False, out_file=io.StringIO())

    greedy_t, beam_t = translator(1, 1), translator(4, 2)
    sv, tv = greedy_t.vocabs["src"], greedy_t.vocabs["tgt"]

    def run(t, ids):
        batch = {"src": torch.tensor(ids).view(1, -1, 1), "srclen": torch.tensor([len(ids)]),
                 "indices": torch.arange(1)}
        result = t.translate_batch(batch, attn_debug=False)
        return [p.tolist() for p in result["predictions"][0]], [float(s) for s in result["scores"][0]]

    cases = []
    for text in TEXTS:
        tokens = sp.encode(text, out_type=str)
        ids = sv(tokens)
        (greedy,), (greedy_score,) = run(greedy_t, ids)
        beam, beam_scores = run(beam_t, ids)
        target = greedy + ([] if greedy and greedy[-1] == tv[DefaultTokens.EOS] else [tv[DefaultTokens.EOS]])
        m = greedy_t.model
        with torch.no_grad():
            src = torch.tensor(ids).view(1, -1, 1)
            enc_out, enc_final, src_len = m.encoder(src, torch.tensor([len(ids)]))
            m.decoder.init_state(src, enc_out, enc_final)
            dec_in = torch.tensor([greedy_t._tgt_bos_idx] + target[:-1]).view(1, -1, 1)
            dec_out, _ = m.decoder(dec_in, enc_out, src_len=src_len)
            logits = m.generator(dec_out)[0].double().numpy()
        strip = lambda hyp: [i for i in hyp if i != tv[DefaultTokens.EOS]]  # noqa: E731
        cases.append({"text": text, "source_ids": ids, "greedy": strip(greedy), "greedy_score": greedy_score,
                      "greedy_text": sp.decode([tv.lookup_index(i) for i in strip(greedy)]),
                      "beam": [strip(h) for h in beam], "beam_scores": beam_scores, "forced_target": target,
                      "forced_logits": np.round(logits, 7).tolist()})
    expected = {"onmt": onmt.__version__, "torch": torch.__version__, "max_length": MAX_LENGTH,
                "source_vocab": list(sv.ids_to_tokens), "target_vocab": list(tv.ids_to_tokens),
                "left_out": leave_out, "cases": cases}
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=0))
    for c in cases:
        print(name, c["source_ids"], c["greedy"], repr(c["greedy_text"]), c["beam_scores"])


def main():
    init_logger(None)
    work = pathlib.Path(tempfile.mkdtemp())
    sp = train_spm(work)
    for seed, (name, extra) in enumerate(VARIANTS.items(), start=41):
        build(name, extra, work, sp, seed)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
