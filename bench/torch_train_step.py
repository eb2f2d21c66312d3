#!/usr/bin/env python3
"""PyTorch counterpart of bench_train_step: one training step (forward +
backward + Adam) of the "tiny" and "small" configs on 128 sentences x 32
random tokens on both sides (4096 target tokens), label smoothing 0.1, no
dropout, post-norm ReLU, sinusoidal positions, shared and tied embeddings.
Prints seconds per step and target tokens/s; with --flops, instead, the
FLOPs of one step's matrix products as torch.profiler counts them (mm, addmm,
bmm, baddbmm), the count bench_train_step's GEMM_GFLOP/s divides by.

Threads: MT_BENCH_THREADS (default 1), passed to torch.set_num_threads and
to OpenBLAS (OPENBLAS_NUM_THREADS, which Debian's pthread OpenBLAS reads);
MT_BENCH_MIN_TIME: seconds of timed steps per config (default 3, at least 2 steps).
PyTorch's fastest setting on the project machine (/work/shared/PEERS.md):
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE \\
      MT_BENCH_THREADS=2 /usr/bin/python3 bench/torch_train_step.py [tiny|small ...]

OpenBLAS's kernel: Debian's 0.3.21 does not know newer Intel Xeons (family 6
model 207 reads as "Prescott", SSE3 kernels, ~2.4x slower steps), so on a
CPU with AVX-512 and no OPENBLAS_CORETYPE set this script names the AVX-512
kernel (Cooperlake with AVX512-BF16, else SkylakeX). The kernel that ran is
printed on each line; OPENBLAS_CORETYPE set by the caller is kept.
"""
import math
import os
import sys
import time

# Debian's torch calls the pthread build of OpenBLAS, whose threads
# torch.set_num_threads does not govern: without this a "1 thread" run
# multiplies matrices on every core. Must be set before OpenBLAS loads.
_threads = str(max(1, int(os.environ.get("MT_BENCH_THREADS", "1"))))
os.environ["OPENBLAS_NUM_THREADS"] = _threads
os.environ["OMP_NUM_THREADS"] = _threads


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


if "OPENBLAS_CORETYPE" not in os.environ and "avx512f" in _cpu_flags():
    os.environ["OPENBLAS_CORETYPE"] = "Cooperlake" if "avx512_bf16" in _cpu_flags() else "SkylakeX"

import torch  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {  # layers enc+dec, d_model, heads, d_ff, vocab
    "tiny": (4, 4, 128, 4, 256, 8000),
    "small": (6, 2, 256, 4, 1024, 8000),
    "base": (6, 6, 512, 8, 2048, 32000),
}
# MT_BENCH_DEVICE=cuda runs the step on the GPU (fp32: TF32 stays off, as in
# bench_cuda_train_step), for the side-by-side with libmt's CUDA trainer.
DEVICE = os.environ.get("MT_BENCH_DEVICE", "cpu")
SENTENCES, LENGTH = 128, 32


class Seq2Seq(nn.Module):
    def __init__(self, enc, dec, C, H, Fd, V):
        super().__init__()
        self.C = C
        self.embedding = nn.Embedding(V, C)  # source, target and output (tied)
        self.out_bias = nn.Parameter(torch.zeros(V))
        enc_layer = nn.TransformerEncoderLayer(C, H, Fd, dropout=0.0, activation="relu", batch_first=True)
        dec_layer = nn.TransformerDecoderLayer(C, H, Fd, dropout=0.0, activation="relu", batch_first=True)
        self.encoder = nn.TransformerEncoder(enc_layer, enc, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec_layer, dec)
        pos = torch.arange(1024, dtype=torch.float32).unsqueeze(1)
        freq = torch.pow(10000.0, -torch.arange(0, C, 2, dtype=torch.float32) / C)
        pe = torch.zeros(1024, C)
        pe[:, 0::2] = torch.sin(pos * freq)
        pe[:, 1::2] = torch.cos(pos * freq)
        self.register_buffer("pe", pe)

    def embed(self, ids):
        return self.embedding(ids) * math.sqrt(self.C) + self.pe[: ids.shape[1]]

    def forward(self, source, target_input, causal):
        memory = self.encoder(self.embed(source))
        y = self.decoder(self.embed(target_input), memory, tgt_mask=causal)
        return F.linear(y, self.embedding.weight, self.out_bias)


def random_batch(V):
    """Random ids in [4, V) on both sides, the target shifted right behind
    BOS for teacher forcing, and the causal mask, on DEVICE."""
    source = torch.randint(4, V, (SENTENCES, LENGTH)).to(DEVICE)
    target = torch.randint(4, V, (SENTENCES, LENGTH)).to(DEVICE)
    target_input = torch.cat([torch.ones(SENTENCES, 1, dtype=torch.long, device=DEVICE), target[:, :-1]], dim=1)
    causal = torch.triu(torch.full((LENGTH, LENGTH), float("-inf")), diagonal=1).to(DEVICE)
    return source, target, target_input, causal


def bench(name, threads, min_time=3.0):
    enc, dec, C, H, Fd, V = CONFIGS[name]
    torch.manual_seed(1)
    model = Seq2Seq(enc, dec, C, H, Fd, V).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-9)
    source, target, target_input, causal = random_batch(V)
    tokens = SENTENCES * LENGTH

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(source, target_input, causal)
        loss = F.cross_entropy(logits.reshape(-1, V), target.reshape(-1), ignore_index=0,
                               reduction="sum", label_smoothing=0.1)
        (loss / tokens).backward()
        opt.step()
        return float(loss)

    step()  # warm-up: allocator and Adam state
    n, start = 0, time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time and n >= 2:
            break
    per_step = elapsed / n
    params = sum(p.numel() for p in model.parameters())
    print("torch %s %s %-5s threads %d: %.3f s/step, %.0f target tokens/s (%d steps, %.2fM params, OpenBLAS %s)" %
          (torch.__version__, DEVICE, name, threads, per_step, tokens / per_step, n, params / 1e6, _openblas_core()),
          flush=True)


def count_flops(name):
    """One step's matrix-product FLOPs under torch.profiler(with_flops)."""
    enc, dec, C, H, Fd, V = CONFIGS[name]
    model = Seq2Seq(enc, dec, C, H, Fd, V).to(DEVICE)
    source, target, target_input, causal = random_batch(V)
    with torch.profiler.profile(with_flops=True) as prof:
        logits = model(source, target_input, causal)
        F.cross_entropy(logits.reshape(-1, V), target.reshape(-1), label_smoothing=0.1).backward()
    products = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
    flops = sum(e.flops for e in prof.key_averages() if e.key in products)
    print("torch %s %-5s: %.2f GFLOP of matrix products per step (torch.profiler: %s)" %
          (torch.__version__, name, flops / 1e9, ", ".join(products)), flush=True)


def _openblas_core():
    """The kernel set OpenBLAS picked for libblas.so.3, the library Debian's
    torch calls for sgemm (an update-alternatives link), or "not-OpenBLAS"
    where it is another BLAS (a machine without libopenblas0 has the
    reference BLAS there, far slower)."""
    import ctypes
    try:
        lib = ctypes.CDLL("libblas.so.3")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "not-OpenBLAS"


def main():
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    threads = max(1, int(os.environ.get("MT_BENCH_THREADS", "1")))
    torch.set_num_threads(threads)
    args = sys.argv[1:]
    flops = "--flops" in args
    names = [a for a in args if a != "--flops"] or ["tiny", "small"]
    min_time = float(os.environ.get("MT_BENCH_MIN_TIME", "3"))
    for name in names:
        if flops:
            count_flops(name)
        else:
            bench(name, threads, min_time)


if __name__ == "__main__":
    main()
