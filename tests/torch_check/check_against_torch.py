#!/usr/bin/env python3
"""Independent check of libmt's trainer against PyTorch.

Reads the directories written by dump_trainer (one per model variant), builds
the same Transformer from PyTorch's own functional ops (F.embedding,
F.multi_head_attention_forward, F.layer_norm, F.gelu/F.relu, F.linear,
F.cross_entropy with label_smoothing) with the dumped initial weights, and
compares with what our trainer computed:

  logits    valid target rows only (rows past a sentence's length are padding
            our attention zeroes by design; the loss never reads them)
  loss      the label-smoothed sum over non-pad tokens
  grads     d loss_sum / d parameter, every parameter
  adam      the mean loss before each of 10 torch.optim.Adam steps
            (betas (0.9, 0.98), eps 1e-9, inverse_sqrt schedule via LambdaLR)

The reference is PyTorch in float64 (from the same float32 weights), so the
errors are ours alone; PyTorch's own float32 error against it is printed
beside ours as the floor float32 can reach. Error measures (stated bounds):

  logits, grads   max |ours - ref| / max |ref| over the tensor    <= 1e-4, 1e-3
  loss, adam      |ours - ref| / |ref|                             <= 1e-4, 1e-4

Exits 1 on any mismatch. Usage: check_against_torch.py DUMP_DIR
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

TOL = {"logits": 1e-4, "loss": 1e-4, "grad": 1e-3, "adam": 1e-4}


def read_dump(path):
    config, tensors, scalars = {}, {}, {}
    with open(os.path.join(path, "manifest.txt")) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "config":
                config[parts[1]] = parts[2]
            elif parts[0] == "scalar":
                scalars[parts[1]] = float(parts[2])
            elif parts[0] == "tensor":
                kind, name, file, dtype, rank = parts[1], parts[2], parts[3], parts[4], int(parts[5])
                dims = [int(d) for d in parts[6:6 + rank]]
                data = np.fromfile(os.path.join(path, file), dtype="<f4" if dtype == "f32" else "<i4")
                tensors[(kind, name)] = data.reshape(dims)
    return config, tensors, scalars


def positions(length, dim, dtype):
    """Sinusoidal encodings (Vaswani et al. 2017, 3.5): sin at even columns, cos at odd."""
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    freq = torch.pow(10000.0, -torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    pe = torch.zeros(length, dim, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe.to(dtype)


class Transformer:
    """A functional encoder-decoder Transformer over a dict of named parameters."""

    def __init__(self, cfg, params):
        self.cfg = cfg
        self.p = params
        self.C = int(cfg["d_model"])
        self.H = int(cfg["heads"])
        self.pre_norm = cfg["pre_norm"] == "1"
        self.act = {"gelu": F.gelu, "swish": F.silu, "relu": F.relu}[cfg["activation"]]
        self.scale = float(cfg.get("embedding_scale", math.sqrt(self.C)))
        self.stored_positions = None  # set by run_torch from the dump (converted models' own table)
        self.eps = float(cfg["layer_norm_epsilon"])

    def norm(self, x, scope):
        return F.layer_norm(x, (self.C,), self.p[scope + "/gamma"], self.p[scope + "/beta"], self.eps)

    def residual(self, x, fn, scope):
        if self.pre_norm:
            return x + fn(self.norm(x, scope))
        return self.norm(x + fn(x), scope)

    def attention(self, q_in, kv_in, scope, key_padding_mask, attn_mask, cross):
        # Time-major (L, B, C) as torch 1.13's functional attention wants it.
        q_in, kv_in = q_in.transpose(0, 1), kv_in.transpose(0, 1)
        p = self.p
        if cross:
            kv_w, kv_b = p[scope + "/kv/weight"], p[scope + "/kv/bias"]
            out, _ = F.multi_head_attention_forward(
                q_in, kv_in, kv_in, self.C, self.H, None,
                torch.cat([p[scope + "/q/bias"], kv_b]), None, None, False, 0.0,
                p[scope + "/out/weight"], p[scope + "/out/bias"], training=False,
                key_padding_mask=key_padding_mask, need_weights=False, attn_mask=attn_mask,
                use_separate_proj_weight=True, q_proj_weight=p[scope + "/q/weight"],
                k_proj_weight=kv_w[:self.C], v_proj_weight=kv_w[self.C:])
        else:
            out, _ = F.multi_head_attention_forward(
                q_in, kv_in, kv_in, self.C, self.H, p[scope + "/qkv/weight"], p[scope + "/qkv/bias"],
                None, None, False, 0.0, p[scope + "/out/weight"], p[scope + "/out/bias"], training=False,
                key_padding_mask=key_padding_mask, need_weights=False, attn_mask=attn_mask)
        return out.transpose(0, 1)

    def ffn(self, x, scope):
        h = self.act(F.linear(x, self.p[scope + "/linear_0/weight"], self.p[scope + "/linear_0/bias"]))
        return F.linear(h, self.p[scope + "/linear_1/weight"], self.p[scope + "/linear_1/bias"])

    def embed(self, table, ids):
        if self.stored_positions is not None:
            pe = self.stored_positions[:ids.shape[1]].to(table.dtype)
        else:
            pe = positions(ids.shape[1], self.C, table.dtype)
        return F.embedding(ids, table) * self.scale + pe

    def logits(self, source, source_lengths, target_input):
        p, cfg = self.p, self.cfg
        B, S = source.shape
        T = target_input.shape[1]
        src_pad = torch.arange(S).unsqueeze(0) >= source_lengths.unsqueeze(1)  # [B, S], True = masked
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

        src_table = p["target_embedding" if cfg["shared_embeddings"] == "1" else "source_embedding"]
        x = self.embed(src_table, source)
        for i in range(int(cfg["encoder_layers"])):
            l = "encoder/layer_%d" % i
            x = self.residual(x, lambda h: self.attention(h, h, l + "/self_attention", src_pad, None, False),
                              l + "/self_attention/norm")
            x = self.residual(x, lambda h: self.ffn(h, l + "/ffn"), l + "/ffn/norm")
        if self.pre_norm:
            x = self.norm(x, "encoder/norm")
        memory = x

        y = self.embed(p["target_embedding"], target_input)
        for i in range(int(cfg["decoder_layers"])):
            l = "decoder/layer_%d" % i
            y = self.residual(y, lambda h: self.attention(h, h, l + "/self_attention", None, causal, False),
                              l + "/self_attention/norm")
            y = self.residual(y, lambda h: self.attention(h, memory, l + "/cross_attention", src_pad, None, True),
                              l + "/cross_attention/norm")
            y = self.residual(y, lambda h: self.ffn(h, l + "/ffn"), l + "/ffn/norm")
        if self.pre_norm:
            y = self.norm(y, "decoder/norm")
        out_w = p["target_embedding" if cfg["tied_output"] == "1" else "output/weight"]
        return F.linear(y, out_w, p["output/bias"])  # [B, T, V]


def run_torch(cfg, tensors, dtype):
    """Logits, loss, grads at the initial weights, then 10 Adam mean losses."""
    names = [name for (kind, name) in tensors if kind == "param"]
    params = {n: torch.tensor(tensors[("param", n)], dtype=dtype, requires_grad=True) for n in names}
    model = Transformer(cfg, params)
    if ("const", "position_encoding") in tensors:
        model.stored_positions = torch.tensor(tensors[("const", "position_encoding")], dtype=torch.float64)
    batch = {k: torch.tensor(tensors[("batch", k)], dtype=torch.long)
             for k in ("source", "source_lengths", "target_input", "target_output")}
    pad = int(cfg["pad_id"])
    V = int(cfg["target_vocab_size"])
    ls = float(cfg["label_smoothing"])

    def loss_of():
        logits = model.logits(batch["source"], batch["source_lengths"], batch["target_input"])
        loss = F.cross_entropy(logits.reshape(-1, V), batch["target_output"].reshape(-1),
                               ignore_index=pad, reduction="sum", label_smoothing=ls)
        return logits, loss

    logits, loss = loss_of()
    loss.backward()
    first = {
        "logits": logits.detach().reshape(-1, V).numpy().astype(np.float64),
        "loss": float(loss),
        "grads": {n: params[n].grad.numpy().astype(np.float64) for n in names},
    }
    tokens = int((batch["target_output"] != pad).sum())

    warmup, peak = int(cfg["warmup"]), float(cfg["lr"])
    assert cfg["schedule"] == "inverse_sqrt"
    opt = torch.optim.Adam(list(params.values()), lr=peak, betas=(0.9, 0.98), eps=1e-9)
    # LambdaLR's epoch e sets the lr of update e + 1 (1-based in our trainer).
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda e: min((e + 1) / warmup, math.sqrt(warmup / (e + 1))))
    adam_losses = []
    for _ in range(10):
        opt.zero_grad()
        _, loss = loss_of()
        adam_losses.append(float(loss) / tokens)
        (loss / tokens).backward()
        opt.step()
        sched.step()
    first["adam"] = adam_losses
    first["tokens"] = tokens
    return first


def rel_max(ours, ref):
    ref = np.asarray(ref, dtype=np.float64)
    scale = np.max(np.abs(ref)) if ref.size else 0.0
    diff = np.max(np.abs(np.asarray(ours, dtype=np.float64) - ref)) if ref.size else 0.0
    return diff / scale if scale > 0 else diff


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def check_variant(path):
    cfg, tensors, scalars = read_dump(path)
    name = os.path.basename(path.rstrip("/"))
    ref = run_torch(cfg, tensors, torch.float64)
    t32 = run_torch(cfg, tensors, torch.float32)
    B, T = (int(cfg[k]) for k in ("B", "T"))
    V = int(cfg["target_vocab_size"])
    lengths = tensors[("batch", "target_lengths")]
    valid = np.array([t < lengths[b] for b in range(B) for t in range(T)])

    rows = []  # (quantity, ours error, torch f32 error, bound)
    ours_logits = tensors[("logits", "logits")].reshape(-1, V).astype(np.float64)
    rows.append(("logits (valid rows)", rel_max(ours_logits[valid], ref["logits"][valid]),
                 rel_max(t32["logits"][valid], ref["logits"][valid]), TOL["logits"]))
    rows.append(("loss (sum, %d tokens)" % ref["tokens"], rel(scalars["loss_sum"], ref["loss"]),
                 rel(t32["loss"], ref["loss"]), TOL["loss"]))
    assert int(scalars["tokens"]) == ref["tokens"], "token counts differ"
    worst_grad = ("", 0.0)
    grad_ours, grad_t32 = 0.0, 0.0
    for n, g in ref["grads"].items():
        e = rel_max(tensors[("grad", n)], g)
        grad_t32 = max(grad_t32, rel_max(t32["grads"][n], g))
        if e >= worst_grad[1]:
            worst_grad = (n, e)
        grad_ours = max(grad_ours, e)
    rows.append(("grads (%d tensors, worst %s)" % (len(ref["grads"]), worst_grad[0]), grad_ours, grad_t32, TOL["grad"]))
    for k in range(10):
        rows.append(("adam loss before step %d" % (k + 1), rel(scalars["adam_loss_%d" % k], ref["adam"][k]),
                     rel(t32["adam"][k], ref["adam"][k]), TOL["adam"]))

    print("\n== %s (pre_norm %s, %s, shared/tied %s/%s): reference = PyTorch %s float64" %
          (name, cfg["pre_norm"], cfg["activation"], cfg["shared_embeddings"], cfg["tied_output"], torch.__version__))
    print("%-70s %12s %12s %9s  %s" % ("quantity", "ours err", "torch32 err", "bound", "result"))
    failed = 0
    for q, e, e32, bound in rows:
        ok = e <= bound
        failed += not ok
        print("%-70s %12.3e %12.3e %9.0e  %s" % (q, e, e32, bound, "ok" if ok else "MISMATCH"))
    print("   loss sum ours %.7f, torch %.7f; adam mean loss %.5f -> %.5f (torch %.5f -> %.5f)" %
          (scalars["loss_sum"], ref["loss"], scalars["adam_loss_0"], scalars["adam_loss_9"],
           ref["adam"][0], ref["adam"][9]))
    if failed:
        print("   per-gradient errors:")
        for n, g in ref["grads"].items():
            print("     %-56s %.3e" % (n, rel_max(tensors[("grad", n)], g)))
    return failed


def main():
    if len(sys.argv) != 2:
        print("usage: check_against_torch.py DUMP_DIR", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    root = sys.argv[1]
    variants = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "manifest.txt")))
    if not variants:
        print("check_against_torch: no dumps under %s" % root, file=sys.stderr)
        return 1
    failed = sum(check_variant(os.path.join(root, v)) for v in variants)
    print("\ncheck_against_torch: %d variants, %s" % (len(variants), "all match" if not failed else "%d MISMATCHES" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
