#!/usr/bin/env python3
"""libmt and CTranslate2 side by side, on the same weights, inputs and options.

    compare.py [--build build] [--out DIR] [--workloads multi30k,base] [--repeat 2]

For each workload it exports the libmt fp32 model (mt_export_arrays), builds the
CTranslate2 models from those arrays (convert.py: float32, and int8 quantized by
CTranslate2 itself), and first checks that both engines compute the same model:
fp32 greedy translations must be identical on at least 99% of sentences.
Then it times every cell (fp32/int8 x greedy/beam 4 x batch 1/32 x 1/2 threads),
each in a fresh process (libmt_run, ct2_run.py), CTranslate2 in both of its ISA
settings (its default, AVX2 on AMD, and CT2_FORCE_CPU_ISA=AVX512) keeping its
faster one (and in 2-thread cells its faster thread count: it often runs
slower on 2 threads than on 1 here), and prints tables of target tokens/s, ms
per sentence, model load time and peak RSS, with the issue's targets. The
report is also written to OUT/report.md, every run's figures to OUT/cells.json.

Workloads:
  multi30k  the shipped en-de-tiny model (fp32 and its mt_quantize int8 copy) on
            Multi30k test_2016_flickr English (1,000 sentences)
  base      the random "base" config (60.6M parameters), 16 source -> exactly
            16 target tokens; its int8 copy is made by mt_quantize from random ids
  small     the same with the "small" config
With --device cuda both engines run on the GPU (libmt's CUDA sessions, fp32
GEMMs on cuBLAS, --tf32 for TF32; CTranslate2's CUDA build): batch 1, 32 and
128, greedy and beam 4, no thread or ISA variants and no CPU targets. libmt
runs an int8 model there with its weights dequantized to fp32 at upload
(--cuda-int8: int8 GEMMs, as CTranslate2 runs them). A third dtype, float16,
runs the fp32 weights in half precision on both (libmt --fp16, CTranslate2's
compute_type float16).

Needs: pip install ctranslate2==4.8.5 (and numpy); the data in ../shared/data.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "multi30k")


def run(cmd, env=None, capture=True):
    result = subprocess.run(cmd, env=env, stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit("compare.py: %s failed:\n%s" % (" ".join(cmd), result.stderr))
    return result.stdout


class Workload:
    def __init__(self, name, fp32_model, int8_model, inputs, min_length, max_length, reference=None):
        self.name, self.fp32_model, self.int8_model = name, fp32_model, int8_model
        self.inputs = inputs  # {batch: ids file}
        self.min_length, self.max_length, self.reference = min_length, max_length, reference
        self.ct2 = {}  # dtype -> CTranslate2 model directory


def random_ids(path, sentences, length, vocab, seed):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(sentences):
            f.write(" ".join(str(rng.randrange(4, vocab)) for _ in range(length)) + "\n")


def prepare(args, tools):
    workloads = []
    for name in args.workloads.split(","):
        directory = os.path.join(args.out, name)
        os.makedirs(directory, exist_ok=True)
        if name == "multi30k":
            fp32 = os.path.join(ROOT, "models", "en-de-tiny.mtm")
            int8 = os.path.join(ROOT, "models", "en-de-tiny.int8.mtm")
            source = os.path.join(DATA, "test_2016_flickr.en")
            if not os.path.exists(source):
                sys.exit("compare.py: %s is missing (the multi30k workload needs ../shared/data)" % source)
            ids = os.path.join(directory, "test_2016_flickr.en.ids")
            with open(source, "rb") as f:
                encoded = subprocess.run([tools["text_ids"], "encode", fp32], input=f.read(),
                                         stdout=subprocess.PIPE, check=True).stdout
            if args.max_sentences:
                encoded = b"".join(encoded.splitlines(keepends=True)[:args.max_sentences])
            with open(ids, "wb") as f:
                f.write(encoded)
            reference = os.path.join(DATA, "test_2016_flickr.de")
            if args.max_sentences:
                reference_part = os.path.join(directory, "reference.de")
                with open(reference, "rb") as f, open(reference_part, "wb") as out:
                    out.write(b"".join(f.read().splitlines(keepends=True)[:args.max_sentences]))
                reference = reference_part
            w = Workload(name, fp32, int8, {1: ids, 32: ids, 128: ids}, 0, 256, reference)
        elif name in ("base", "small"):
            fp32 = os.path.join(directory, name + ".mtm")
            int8 = os.path.join(directory, name + ".int8.mtm")
            vocab = 32000 if name == "base" else 8000
            if not os.path.exists(fp32):
                run([tools["model"], "random", "--config", name, "-o", fp32])
            calibration = os.path.join(directory, "calibration.ids")
            random_ids(calibration, 64, 15, vocab, seed=1)
            if not os.path.exists(int8):
                run([tools["quantize"], fp32, "--calibration", calibration, "-o", int8])
            # 15 ids + the EOS both engines append = 16 source tokens.
            inputs = {b: os.path.join(directory, "b%d.ids" % b) for b in (1, 32, 128)}
            random_ids(inputs[1], args.fixed_sentences_b1, 15, vocab, seed=2)
            random_ids(inputs[32], 32 * args.fixed_batches_b32, 15, vocab, seed=3)
            random_ids(inputs[128], 128 * args.fixed_batches_b32, 15, vocab, seed=4)
            w = Workload(name, fp32, int8, inputs, 16, 16)
        else:
            sys.exit("compare.py: unknown workload %s" % name)
        arrays = os.path.join(directory, "arrays")
        run([tools["export"], fp32, arrays])
        for dtype in ("float32", "int8"):
            w.ct2[dtype] = os.path.join(directory, "ct2-" + dtype)
            run([sys.executable, os.path.join(HERE, "convert.py"), arrays, w.ct2[dtype],
                 "--quantization", dtype])
        workloads.append(w)
    return workloads


DEVICE = {"name": "cpu", "tf32": False, "int8_gemm": False}  # set once by main (--device, --tf32, --cuda-int8)


def model_paths(w, dtype):
    """libmt's model file and CTranslate2's model directory for a dtype:
    float16 computes on the float32 weights, each engine converting them."""
    stored = "float32" if dtype == "float16" else dtype
    return (w.fp32_model if stored == "float32" else w.int8_model), w.ct2[stored]


def run_cell(tools, w, engine, dtype, batch, beam, threads, repeat, isa=None, output=None):
    common = ["--input", w.inputs[batch], "--batch", str(batch), "--beam", str(beam), "--threads", str(threads),
              "--min-length", str(w.min_length), "--max-length", str(w.max_length), "--repeat", str(repeat),
              "--device", DEVICE["name"]]
    if engine == "libmt" and DEVICE["tf32"]:
        common.append("--tf32")
    if engine == "libmt" and DEVICE["int8_gemm"]:
        common.append("--cuda-int8")
    if engine == "libmt" and dtype == "float16":
        common.append("--fp16")
    if output:
        common += ["--output", output]
    env = dict(os.environ)
    if engine == "libmt":
        cmd = [tools["run"], "--model", model_paths(w, dtype)[0]] + common
    else:
        cmd = [sys.executable, os.path.join(HERE, "ct2_run.py"), "--model", model_paths(w, dtype)[1],
               "--compute-type", dtype] + common
        env.pop("CT2_FORCE_CPU_ISA", None)
        if isa:
            env["CT2_FORCE_CPU_ISA"] = isa
    # Both engines see the same OpenMP/BLAS environment; CTranslate2 sets its
    # own threads from intra_threads.
    line = run(cmd, env=env).strip().splitlines()[-1]
    cell = json.loads(line)
    if cell["seconds"] > 0:  # --repeat 0 runs only the untimed warm-up pass
        cell["tokens_per_s"] = cell["target_tokens"] / cell["seconds"]
        cell["ms_per_sentence"] = 1e3 * cell["seconds"] / cell["sentences"]
    return cell


def agreement(a_path, b_path):
    with open(a_path) as a, open(b_path) as b:
        pairs = list(zip(a.read().splitlines(), b.read().splitlines()))
    return sum(x == y for x, y in pairs), len(pairs)


def bleu(tools, model, ids_path, reference):
    with open(ids_path, "rb") as f:
        text = subprocess.run([tools["text_ids"], "decode", model], input=f.read(), stdout=subprocess.PIPE,
                              check=True).stdout
    hypothesis = ids_path + ".txt"
    with open(hypothesis, "wb") as f:
        f.write(text)
    out = run([tools["bleu"], reference, "-i", hypothesis, "--metrics", "bleu", "--score-only"])
    return "BLEU " + out.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default="/tmp/libmt-vs-ct2")
    parser.add_argument("--workloads", default="multi30k,base")
    parser.add_argument("--repeat", type=int, default=2, help="timed passes per cell (the fastest counts)")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--fixed-sentences-b1", type=int, default=8)
    parser.add_argument("--fixed-batches-b32", type=int, default=2)
    parser.add_argument("--ct2-isas", default="default,AVX512")
    parser.add_argument("--max-sentences", type=int, default=0,
                        help="multi30k: the first N test sentences only (default: all 1,000)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--tf32", action="store_true", help="--device cuda: libmt's fp32 GEMMs in TF32")
    parser.add_argument("--cuda-int8", action="store_true", help="--device cuda: libmt's int8 models on int8 GEMMs")
    args = parser.parse_args()
    DEVICE.update(name=args.device, tf32=args.tf32, int8_gemm=args.cuda_int8)
    gpu = args.device == "cuda"
    dtypes = ("int8", "float32", "float16") if gpu else ("int8", "float32")
    if gpu:  # one process drives the GPU: no thread or ISA variants
        args.threads, args.ct2_isas = "1", "default"

    import ctranslate2
    tools = {
        "export": os.path.join(args.build, "bench", "ctranslate2", "mt_export_arrays"),
        "text_ids": os.path.join(args.build, "bench", "ctranslate2", "mt_text_ids"),
        "run": os.path.join(args.build, "bench", "ctranslate2", "libmt_run"),
        "model": os.path.join(args.build, "tools", "mt_model"),
        "quantize": os.path.join(args.build, "tools", "mt_quantize"),
        "bleu": os.path.join(args.build, "tools", "mt_bleu"),
    }
    for tool, path in tools.items():
        if not os.path.exists(path):
            sys.exit("compare.py: %s not found; build the project first (cmake --build %s)" % (path, args.build))
    os.makedirs(args.out, exist_ok=True)
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    say("# libmt (%s) vs CTranslate2 %s, side by side%s" % (commit or "this tree", ctranslate2.__version__,
                                                           " on the GPU" if gpu else ""))
    say()
    say("Command: `%s`; %s; %s" % (" ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
                                   time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                   open("/proc/loadavg").read().split()[0] + " load average at start"))
    say()
    workloads = prepare(args, tools)
    cells = []  # every timed run, written to OUT/cells.json
    isas = [None if i == "default" else i for i in args.ct2_isas.split(",")]
    threads_list = [int(t) for t in args.threads.split(",")]

    for w in workloads:
        say("## %s" % w.name)
        say()
        # The gate: both engines must compute the same model.
        checks = {}
        for engine in ("libmt", "ct2"):
            for dtype in dtypes:
                path = os.path.join(args.out, w.name, "%s-%s-greedy.ids" % (engine, dtype))
                run_cell(tools, w, engine, dtype, 32, 1, 1, 0, output=path)
                checks[engine, dtype] = path
        same, total = agreement(checks["libmt", "float32"], checks["ct2", "float32"])
        say("Same model check: fp32 greedy translations identical on %d of %d sentences (%.1f%%; required: 99%%)."
            % (same, total, 100.0 * same / total))
        if same < 0.99 * total:
            say("**The engines do not compute the same model: no timing is reported.**")
            break
        same8, _ = agreement(checks["libmt", "int8"], checks["ct2", "int8"])
        own_l, _ = agreement(checks["libmt", "int8"], checks["libmt", "float32"])
        own_c, _ = agreement(checks["ct2", "int8"], checks["ct2", "float32"])
        say("int8 (each engine's own quantization of those weights): libmt int8 = CTranslate2 int8 on %d; "
            "int8 = fp32 on %d (libmt) and %d (CTranslate2)." % (same8, own_l, own_c))
        if "float16" in dtypes:
            same16, _ = agreement(checks["libmt", "float16"], checks["ct2", "float16"])
            own_l16, _ = agreement(checks["libmt", "float16"], checks["libmt", "float32"])
            own_c16, _ = agreement(checks["ct2", "float16"], checks["ct2", "float32"])
            say("float16: libmt = CTranslate2 on %d; float16 = fp32 on %d (libmt) and %d (CTranslate2)."
                % (same16, own_l16, own_c16))
        if w.reference:
            say()
            say("Greedy BLEU against the reference (mt_bleu, sacreBLEU's defaults):")
            for (engine, dtype), path in sorted(checks.items()):
                say("- %s %s: %s" % (engine, dtype, bleu(tools, w.fp32_model, path, w.reference)))
        say()

        say("| dtype | search | batch | threads | libmt tok/s | CT2 tok/s (its best ISA, threads) | ratio | libmt ms/sent | CT2 ms/sent | target |")
        say("|---|---|---|---|---|---|---|---|---|---|")
        resources = {}
        own_one_thread, theirs_one_thread = {}, {}
        for dtype in dtypes:
            for beam in (1, 4):
                for batch in ((1, 32, 128) if gpu else (1, 32)):
                    for threads in threads_list:
                        mine = run_cell(tools, w, "libmt", dtype, batch, beam, threads, args.repeat)
                        runs = [run_cell(tools, w, "ct2", dtype, batch, beam, threads, args.repeat, isa) for isa in isas]
                        for cell in runs:
                            cell["threads"] = threads
                        if threads > 1 and (dtype, beam, batch) in theirs_one_thread:
                            # CTranslate2 is often slower with 2 threads than with 1 on this
                            # machine: it is held to its best thread count.
                            runs.append(theirs_one_thread[dtype, beam, batch])
                        theirs = max(runs, key=lambda c: c["tokens_per_s"])
                        if threads == 1:
                            theirs_one_thread[dtype, beam, batch] = theirs
                        cells.append({"workload": w.name, "dtype": dtype, "beam": beam, "batch": batch,
                                      "threads": threads, "libmt": mine, "ct2": runs})
                        ratio = mine["tokens_per_s"] / theirs["tokens_per_s"]
                        need = 1.2
                        if dtype == "int8" and beam == 1 and batch == 1 and threads == 1:
                            need = 1.5
                        target = "%s %.1fx" % ("met" if ratio >= need else "**missed**", need) if not gpu else "-"
                        if threads == 1:
                            own_one_thread[dtype, beam, batch] = mine["tokens_per_s"]
                        elif batch == 32:
                            scaling = mine["tokens_per_s"] / own_one_thread[dtype, beam, batch]
                            target += "; 2 thr / 1 thr %.2fx (%s 1.7x)" % (
                                scaling, "met" if scaling >= 1.7 else "**missed**")
                        say("| %s | %s | %d | %d | %.0f | %.0f (%s) | %.2fx | %.2f | %.2f | %s |" % (
                            dtype, "greedy" if beam == 1 else "beam %d" % beam, batch, threads,
                            mine["tokens_per_s"], theirs["tokens_per_s"], "%s, %d thr" % (theirs["isa"], theirs["threads"]), ratio,
                            mine["ms_per_sentence"], theirs["ms_per_sentence"], target))
                        if batch == 32 and beam == 4 and threads == 1:
                            resources[dtype] = (mine, theirs)
        say()
        say("Load: the median over this workload's cells (each a fresh process) of model load + session "
            "creation; libmt as `libmt_run` runs (token ids, no vocabulary, as CTranslate2) and with the "
            "vocabulary's tokenizer (measured after the translation, in the same process). Memory: batch 32, "
            "beam 4, 1 thread; whole-process peak RSS and, in brackets, above the process's own before the "
            "model load (CTranslate2's process is Python):")
        say()
        say("| dtype | libmt load ms | with tokenizer | CT2 load ms | load ratio | libmt peak RSS MiB (above start) | "
            "CT2 peak RSS MiB (above start) | file MB libmt / CT2 |")
        say("|---|---|---|---|---|---|---|---|")
        for dtype, (mine, theirs) in resources.items():
            model, ct2_model = model_paths(w, dtype)
            ct2_size = os.path.getsize(os.path.join(ct2_model, "model.bin"))
            ours = [c["libmt"] for c in cells if c["workload"] == w.name and c["dtype"] == dtype]
            load = statistics.median(r["load_ms"] for r in ours)
            text_load = statistics.median(r["text_load_ms"] for r in ours)
            ct2_load = statistics.median(r["load_ms"] for c in cells if c["workload"] == w.name and
                                         c["dtype"] == dtype for r in c["ct2"])
            say("| %s | %.2f | %.2f | %.2f | %.1fx faster | %.1f (%.1f) | %.1f (%.1f) | %.1f / %.1f |" % (
                dtype, load, text_load, ct2_load, ct2_load / load,
                mine["peak_rss_kb"] / 1024, (mine["peak_rss_kb"] - mine["rss_before_load_kb"]) / 1024,
                theirs["peak_rss_kb"] / 1024, (theirs["peak_rss_kb"] - theirs["rss_before_load_kb"]) / 1024,
                os.path.getsize(model) / 1e6, ct2_size / 1e6))
        say()

    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "cells.json"), "w") as f:
        json.dump(cells, f, indent=1)
    print("written to %s" % os.path.join(args.out, "report.md"))


if __name__ == "__main__":
    main()
