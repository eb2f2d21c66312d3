#!/usr/bin/env python3
"""libmt and CTranslate2 side by side, on the same weights, inputs, batches and options.

    compare.py [--build build-bench] [--out DIR] [--workloads multi30k,base] [--threads 1,2]
               [--repeat 5] [--processes 3] [--ct2-backends default,mkl] [--ct2-isas auto]

For each workload it exports the libmt fp32 model (mt_export_arrays), builds the
CTranslate2 models from those arrays (convert.py: float32, and int8 quantized by
CTranslate2 itself), and first checks that both engines compute the same model:
fp32 greedy translations must be identical on at least 99% of sentences; fp32
beam 4 agreement and each int8's agreement with its own fp32 are reported.

Then it times every cell: dtype (fp32; libmt int8 with static calibrated
activation scales, and with dynamic per-row scales as CTranslate2's int8,
both against CTranslate2's int8) x greedy / beam 4 x batch 1 / 32 x threads.
Both engines get the same explicit batches (the input sorted longest first,
as CTranslate2 sorts, cut into B consecutive lines). Each engine's
configurations are screened (each once, one timed pass); its fastest then
runs --processes fresh processes, the engines interleaved, each translating
the whole input once untimed and then --repeat timed passes; the figure is
the median pass (ms per sentence first, target tokens/s beside it) with the
spread of all passes (--no-screen: every configuration runs all of that).
CTranslate2 is run in every configuration it documents for speed and
credited with its best: its GEMM
backend (its default, oneDNN on AMD, and CT2_USE_MKL=1, MKL with packed
weights), its ISA (its default, and CT2_FORCE_CPU_ISA=AVX512 where the CPU
has AVX-512), and with T threads both intra-op (inter_threads 1) and
data-parallel (inter_threads T, intra_threads 1). CT2_VERBOSE's backend lines
are kept in cells.json. Load is load + the first translation, for both; libmt's
load with its tokenizer is timed in fresh processes.

A run refuses to start when the load average is above --max-load (another job
would skew it), and the report prints the CPU (lscpu) and, for every cell, the
CPU seconds that processes other than the run's own used meanwhile (from
/proc/stat and the children's rusage; the load average would mostly count the
run itself). The report is written to OUT/report.md, every process's figures
to OUT/cells.json.

Workloads:
  multi30k  the shipped en-de-tiny model (fp32, the shipped int8 and a
            dynamic-scales int8 copy) on Multi30k test_2016_flickr English
            (1,000 sentences)
  base      the random "base" config (60.6M parameters), 16 source -> exactly
            16 target tokens; its int8 copies are made by mt_quantize from random ids
  small     the same with the "small" config
  opus-mt   a random MarianMTModel of OPUS-MT's size (d 512, 6+6 layers, swish, vocabulary 58,101) built
            by transformers (bench/converters/make_opus_mt_random.py), converted by libmt.convert and by
            CTranslate2's TransformersConverter from the same directory; 16 -> 16 tokens as base
            (needs torch, transformers and the libmt package importable)
With --shortlist K both engines translate over a vocabulary shortlist: the
same seeded random K target ids per source id and 100 frequent ids (plus the
special ids), libmt's as the model file's shortlist (per sentence), CTranslate2's
as vmap.txt in its model directories (use_vmap: per batch). The same-model
check runs without them; with them, the engines' agreement is reported only
(CTranslate2 pads its batch's candidates to a multiple of 16 with ids of its
own, so their candidates differ slightly).
With --device cuda both engines run on the GPU (libmt's CUDA sessions, fp32
GEMMs on cuBLAS, --tf32 for TF32; CTranslate2's CUDA build): batch 1, 32 and
128, greedy and beam 4, no thread, ISA or backend variants and no CPU targets.
libmt runs an int8 model there on int8 GEMMs, as CTranslate2 does
(--cuda-dequantize: its weights dequantized to fp32 at upload). A further dtype,
float16, runs the fp32 weights in half precision on both (libmt --fp16,
CTranslate2's compute_type float16).

Needs: pip install ctranslate2==4.8.5 (and numpy); the data in ../shared/data;
a build with benchmarks (scripts/bench.sh builds build-bench).
"""
import argparse
import json
import os
import random
import resource
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
    def __init__(self, name, models, inputs, min_length, max_length, reference=None):
        self.name = name
        self.models = models  # libmt model file per dtype: float32, int8 (static), int8-dynamic
        self.inputs = inputs  # {batch: ids file, in batch order}
        self.min_length, self.max_length, self.reference = min_length, max_length, reference
        self.ct2 = {}  # CTranslate2 dtype -> model directory
        self.hf = None  # a Hugging Face directory both engines convert themselves (opus-mt)
        self.shortlisted = {}  # --shortlist: libmt model file with the shortlist, per dtype


def random_ids(path, sentences, length, vocab, seed):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(sentences):
            f.write(" ".join(str(rng.randrange(4, vocab)) for _ in range(length)) + "\n")


def batch_order(lines):
    """The order both engines translate in: longest first (stable), as
    CTranslate2's rebatch_input sorts, so that cutting B consecutive lines
    gives the batches CTranslate2 itself would form."""
    return sorted(range(len(lines)), key=lambda i: -len(lines[i].split()))


def reorder_file(path, order, out_path):
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    with open(out_path, "wb") as f:
        f.write(b"".join(lines[i] for i in order))


def random_ids_workload(args, tools, name, directory, models, vocab):
    """A workload of random ids below `vocab` on a random-weights model: 15 ids + the EOS both
    engines append = 16 source tokens, exactly 16 target tokens; the int8 model calibrated on more
    random ids. Returns it and the calibration file."""
    calibration = os.path.join(directory, "calibration.ids")
    random_ids(calibration, 64, 15, vocab, seed=1)
    if not os.path.exists(models["int8"]):
        run([tools["quantize"], models["float32"], "--calibration", calibration, "-o", models["int8"]])
    inputs = {b: os.path.join(directory, "b%d.ids" % b) for b in (1, 32, 128)}
    random_ids(inputs[1], args.fixed_sentences_b1, 15, vocab, seed=2)
    random_ids(inputs[32], 32 * args.fixed_batches_b32, 15, vocab, seed=3)
    random_ids(inputs[128], 128 * args.fixed_batches_b32, 15, vocab, seed=4)
    return Workload(name, models, inputs, 16, 16), calibration


def prepare(args, tools):
    workloads = []
    for name in args.workloads.split(","):
        directory = os.path.join(args.out, name)
        os.makedirs(directory, exist_ok=True)
        if name == "multi30k":
            fp32 = os.path.join(ROOT, "models", "en-de-tiny.mtm")
            models = {"float32": fp32, "int8": os.path.join(ROOT, "models", "en-de-tiny.int8.mtm"),
                      "int8-dynamic": os.path.join(directory, "en-de-tiny.int8-dynamic.mtm")}
            source = os.path.join(DATA, "test_2016_flickr.en")
            if not os.path.exists(source):
                sys.exit("compare.py: %s is missing (the multi30k workload needs ../shared/data)" % source)
            with open(source, "rb") as f:
                encoded = subprocess.run([tools["text_ids"], "encode", fp32], input=f.read(),
                                         stdout=subprocess.PIPE, check=True).stdout
            lines = encoded.decode().splitlines()
            if args.max_sentences:
                lines = lines[:args.max_sentences]
            order = batch_order(lines)
            ids = os.path.join(directory, "test_2016_flickr.en.ids")
            with open(ids, "w") as f:
                f.write("".join(lines[i] + "\n" for i in order))
            reference = os.path.join(directory, "reference.de")  # in the same order
            reorder_file(os.path.join(DATA, "test_2016_flickr.de"), order, reference)
            w = Workload(name, models, {1: ids, 32: ids, 128: ids}, 0, 256, reference)
            # mt_quantize asks for calibration text even for dynamic scales
            # (it checks the copy on it): 1,000 training sentences, as the shipped int8's.
            calibration = os.path.join(directory, "calibration.en")
            with open(os.path.join(DATA, "train.en"), "rb") as f, open(calibration, "wb") as out:
                out.write(b"".join(f.read().splitlines(keepends=True)[:1000]))
        elif name in ("base", "small"):
            fp32 = os.path.join(directory, name + ".mtm")
            models = {"float32": fp32, "int8": os.path.join(directory, name + ".int8.mtm"),
                      "int8-dynamic": os.path.join(directory, name + ".int8-dynamic.mtm")}
            vocab = 32000 if name == "base" else 8000
            if not os.path.exists(fp32):
                run([tools["model"], "random", "--config", name, "-o", fp32])
            w, calibration = random_ids_workload(args, tools, name, directory, models, vocab)
        elif name == "opus-mt":
            # A random MarianMTModel of OPUS-MT's size (bench/converters/make_opus_mt_random.py, with
            # transformers), converted by each engine's own converter from the same directory.
            hf = os.path.join(directory, "hf")
            if not os.path.exists(os.path.join(hf, "config.json")):
                run([sys.executable, os.path.join(ROOT, "bench", "converters", "make_opus_mt_random.py"), hf])
            fp32 = os.path.join(directory, "opus-mt.mtm")
            models = {"float32": fp32, "int8": os.path.join(directory, "opus-mt.int8.mtm"),
                      "int8-dynamic": os.path.join(directory, "opus-mt.int8-dynamic.mtm")}
            if not os.path.exists(fp32):
                run([sys.executable, "-m", "libmt.convert", "--from", "transformers", hf, "-o", fp32])
            vocab = 58100  # <pad> (the last id) is never fed
            w, calibration = random_ids_workload(args, tools, name, directory, models, vocab)
            w.hf = hf
        else:
            sys.exit("compare.py: unknown workload %s" % name)
        if not os.path.exists(w.models["int8-dynamic"]):
            run([tools["quantize"], w.models["float32"], "--calibration", calibration, "--activations", "dynamic",
                 "-o", w.models["int8-dynamic"]])
        if w.hf is not None:  # CTranslate2's own converter on the same directory
            for dtype in ("float32", "int8"):
                w.ct2[dtype] = os.path.join(directory, "ct2-" + dtype)
                if not os.path.exists(os.path.join(w.ct2[dtype], "model.bin")):
                    run([sys.executable, os.path.join(ROOT, "bench", "converters", "ct2_convert_hf.py"), w.hf,
                         w.ct2[dtype], dtype])
            workloads.append(w)
            continue
        arrays = os.path.join(directory, "arrays")
        run([tools["export"], w.models["float32"], arrays])
        for dtype in ("float32", "int8"):
            w.ct2[dtype] = os.path.join(directory, "ct2-" + dtype)
            run([sys.executable, os.path.join(HERE, "convert.py"), arrays, w.ct2[dtype],
                 "--quantization", dtype])
        workloads.append(w)
    return workloads


DEVICE = {"name": "cpu", "tf32": False, "dequantize": False}  # set once by main (--device, --tf32, --cuda-dequantize)
SHORTLIST = {"on": False}  # set once by main (--shortlist)
LOAD_LINES = ("backend", "packed", "isa", "compute type")  # CT2_VERBOSE lines kept in cells.json


def add_shortlist(w, k, seed=1):
    """--shortlist K: seeded random rows of K target ids per source id and 100 frequent ids,
    written into a copy of each libmt model (libmt's Python package) and as vmap.txt into each
    CTranslate2 model directory, in its tokens."""
    import libmt
    config = libmt.Model(w.models["float32"]).config
    rng = random.Random(seed)
    targets = range(config.target_vocab_size)
    rows = [rng.sample(targets, k) for _ in range(config.source_vocab_size)]
    specials = {config.bos_id, config.eos_id, config.unk_id, config.pad_id}
    frequent = sorted(set(rng.sample(targets, 100)) | specials)
    for dtype, path in w.models.items():
        out = path[:-len(".mtm")] + ".shortlist-%d.mtm" % k
        if not os.path.exists(out):
            writer = libmt.ModelWriter.from_model(path)
            writer.set_shortlist(rows, frequent, method="random k=%d seed=%d (compare.py)" % (k, seed))
            writer.write(out)
        w.shortlisted[dtype] = out
    for directory in w.ct2.values():
        with open(os.path.join(directory, "shared_vocabulary.json"), encoding="utf-8") as f:
            tokens = json.load(f)
        known = range(len(tokens))  # OPUS-MT's <pad> (libmt's last id, suppressed) is not in CTranslate2's
        with open(os.path.join(directory, "vmap.txt"), "w", encoding="utf-8") as f:
            f.write("\t%s\n" % " ".join(tokens[t] for t in frequent if t in known))
            for s, row in enumerate(rows[:len(tokens)]):
                f.write("%s\t%s\n" % (tokens[s], " ".join(tokens[t] for t in row if t in known)))


def model_paths(w, dtype):
    """libmt's model file and CTranslate2's model directory and compute type
    for a dtype: float16 computes on the float32 weights, each engine
    converting them; both libmt int8 kinds face CTranslate2's int8."""
    stored = "float32" if dtype == "float16" else dtype
    ct2_dtype = "int8" if stored.startswith("int8") else stored
    return w.models[stored], w.ct2[ct2_dtype], ("float16" if dtype == "float16" else ct2_dtype)


def run_cell(tools, w, engine, dtype, batch, beam, threads, repeat, variant=None, output=None, shortlist=None):
    """One fresh process; variant (CTranslate2): {"isa", "backend", "inter"}; shortlist: the
    shortlist / vmap (default: with --shortlist, as SHORTLIST says)."""
    if shortlist is None:
        shortlist = SHORTLIST["on"]
    common = ["--input", w.inputs[batch], "--batch", str(batch), "--beam", str(beam), "--threads", str(threads),
              "--min-length", str(w.min_length), "--max-length", str(w.max_length), "--repeat", str(repeat),
              "--device", DEVICE["name"]]
    if engine == "libmt" and DEVICE["tf32"]:
        common.append("--tf32")
    if engine == "libmt" and DEVICE["dequantize"]:
        common.append("--cuda-dequantize")
    if engine == "libmt" and dtype == "float16":
        common.append("--fp16")
    if output:
        common += ["--output", output]
    env = dict(os.environ)
    model, ct2_model, compute_type = model_paths(w, dtype)
    variant = variant or {}
    if shortlist and engine == "libmt":
        model = w.shortlisted["float32" if dtype == "float16" else dtype]
    if shortlist and engine == "ct2":
        common.append("--vmap")
    if engine == "libmt":
        cmd = [tools["run"], "--model", model, "--sessions", str(variant.get("inter", 1))] + common
    else:
        cmd = [sys.executable, os.path.join(HERE, "ct2_run.py"), "--model", ct2_model,
               "--compute-type", compute_type, "--inter-threads", str(variant.get("inter", 1))] + common
        for name in ("CT2_FORCE_CPU_ISA", "CT2_USE_MKL"):
            env.pop(name, None)
        if variant.get("isa"):
            env["CT2_FORCE_CPU_ISA"] = variant["isa"]
        if variant.get("backend") == "mkl":
            env["CT2_USE_MKL"] = "1"
        env["CT2_VERBOSE"] = "1"
    # Both engines see the same OpenMP/BLAS environment; CTranslate2 sets its
    # own threads from intra_threads and inter_threads.
    result = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit("compare.py: %s failed:\n%s" % (" ".join(cmd), result.stderr))
    cell = json.loads(result.stdout.strip().splitlines()[-1])
    if engine == "ct2":
        cell["verbose"] = sorted({line.rsplit("] ", 1)[-1].strip(" -") for line in result.stderr.splitlines()
                                  if any(k in line.lower() for k in LOAD_LINES)})
    return cell


def summary(processes):
    """Median and spread over every timed pass of every process: ms per
    sentence and target tokens/s."""
    passes = [s for c in processes for s in c["pass_seconds"]]
    sentences, tokens = processes[0]["sentences"], processes[0]["target_tokens"]
    ms = sorted(1e3 * s / sentences for s in passes)
    median = statistics.median(ms)
    return {"ms": median, "ms_min": ms[0], "ms_max": ms[-1], "tokens_per_s": tokens / (median * sentences / 1e3),
            "passes": len(ms)}


def table_row(cell):
    ours, own_best = cell["libmt"]["summary"], cell["libmt"]["variant"]
    best, best_variant = cell["ct2_best"]["summary"], cell["ct2_best"]["variant"]
    return "| %s | %s | %d | %d | %.3f (%.3f–%.3f)%s | %.3f (%.3f–%.3f) [%s, %s, inter %d] | %.2fx | %.0f | %.0f | %s |" % (
        cell["dtype"], "greedy" if cell["beam"] == 1 else "beam %d" % cell["beam"], cell["batch"], cell["threads"],
        ours["ms"], ours["ms_min"], ours["ms_max"], " [%d sessions]" % own_best["inter"] if own_best["inter"] > 1 else "",
        best["ms"], best["ms_min"], best["ms_max"], best_variant.get("backend", "default"),
        best_variant.get("isa") or "default ISA", best_variant["inter"], best["ms"] / ours["ms"],
        ours["tokens_per_s"], best["tokens_per_s"],
        "%.1f s" % cell["other_cpu_seconds"] if "other_cpu_seconds" in cell else "load %.2f" % cell["load_average_before"])


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


def cpu_description():
    fields = {}
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True, env=dict(os.environ, LC_ALL="C")).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except OSError:
        pass
    flags = fields.get("Flags", "").split()
    isa = ", ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni") if f in flags)
    return "%s (family %s, model %s), %s CPUs; %s" % (fields.get("Model name", "unknown CPU"), fields.get("CPU family", "?"),
                                                     fields.get("Model", "?"), fields.get("CPU(s)", "?"), isa or "no AVX2")


def load_average():
    return float(open("/proc/loadavg").read().split()[0])


def cpu_seconds():
    """(busy CPU seconds of the whole machine, CPU seconds of this process and
    its finished children): over a cell, the first's growth less the second's
    is what other processes used."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]  # all but idle and iowait
    ours = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return busy / ticks, sum(r.ru_utime + r.ru_stime for r in ours)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    parser.add_argument("--out", default="/tmp/libmt-vs-ct2")
    parser.add_argument("--workloads", default="multi30k,base")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes per process")
    parser.add_argument("--processes", type=int, default=3, help="fresh processes per engine configuration and cell")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--dtypes", default="float32,int8,int8-dynamic")
    parser.add_argument("--fixed-sentences-b1", type=int, default=8)
    parser.add_argument("--fixed-batches-b32", type=int, default=2)
    parser.add_argument("--ct2-isas", default="auto",
                        help="CTranslate2 ISAs to try: auto (its default, and AVX512 where the CPU has it) or a list")
    parser.add_argument("--ct2-backends", default="default,mkl", help="default (oneDNN on AMD) and/or mkl")
    parser.add_argument("--max-sentences", type=int, default=0,
                        help="multi30k: the first N test sentences only (default: all 1,000)")
    parser.add_argument("--max-load", type=float, default=0.5,
                        help="refuse to start above this load average (another job would skew the timings)")
    parser.add_argument("--no-screen", dest="screen", action="store_false",
                        help="run every configuration through the full protocol (default: each configuration "
                             "once, 1 pass, and only each engine's fastest through the full protocol)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the cells OUT/cells.json already holds (measured on this same CPU) and run the rest: "
                             "a full run can span several sittings")
    parser.add_argument("--shortlist", type=int, default=0, metavar="K",
                        help="time both engines with a random shortlist of K ids per source id (libmt's shortlist, "
                             "CTranslate2's vmap); 0: the whole vocabulary")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--tf32", action="store_true", help="--device cuda: libmt's fp32 GEMMs in TF32")
    parser.add_argument("--cuda-dequantize", action="store_true",
                        help="--device cuda: libmt's int8 models dequantized to fp32 GEMMs (default: int8 GEMMs)")
    args = parser.parse_args()
    if args.repeat < 1 or args.processes < 1:
        parser.error("--repeat and --processes must be at least 1")
    DEVICE.update(name=args.device, tf32=args.tf32, dequantize=args.cuda_dequantize)
    SHORTLIST.update(on=args.shortlist > 0)
    gpu = args.device == "cuda"
    dtypes = args.dtypes.split(",") + (["float16"] if gpu else [])
    has_avx512 = "avx512f" in open("/proc/cpuinfo").read()
    isas = ([None, "AVX512"] if has_avx512 else [None]) if args.ct2_isas == "auto" else \
        [None if i == "default" else i for i in args.ct2_isas.split(",")]
    backends = args.ct2_backends.split(",")
    if gpu:  # one process drives the GPU: no thread, ISA or backend variants
        args.threads, isas, backends = "1", [None], ["default"]

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
            sys.exit("compare.py: %s not found; build with benchmarks first (scripts/bench.sh)" % path)
    start_load = load_average()
    if start_load > args.max_load:
        sys.exit("compare.py: load average %.2f is above --max-load %.2f: something else is running "
                 "(wait, or raise --max-load and say so in the report)" % (start_load, args.max_load))
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
    say("Command: `%s`; %s; load average %.2f at start (refused above %.2f)" % (
        " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), start_load, args.max_load))
    say()
    say("CPU: %s." % cpu_description())  # every cell records it too (a resumed run must match)
    say()
    say("Each figure: the median of %d timed passes in each of %d fresh processes (%d passes), ms per sentence "
        "with the fastest and slowest pass in brackets; the engines interleaved process by process. CTranslate2 is "
        "credited with its fastest configuration of: backend %s; ISA %s; threads intra-op and, above 1 thread, "
        "data-parallel (inter_threads). libmt likewise with its fastest of one session on all the threads and, "
        "above 1 thread, one single-threaded session per thread (libmt_run --sessions). %s" % (
            args.repeat, args.processes, args.repeat * args.processes, " / ".join(backends),
            " / ".join(i or "default" for i in isas),
            "Each engine's configurations are screened first (each once, 1 timed pass); only its fastest runs "
            "the full protocol (the screening figures are in cells.json)." if args.screen else
            "Every configuration runs the full protocol."))
    say()
    workloads = prepare(args, tools)
    if args.shortlist > 0:
        for w in workloads:
            add_shortlist(w, args.shortlist)
        say("Shortlist: every timed cell translates over a random shortlist of %d target ids per source id and "
            "100 frequent ids plus the special ids: libmt's per sentence (the model file's), CTranslate2's per "
            "batch (vmap.txt, use_vmap=True)." % args.shortlist)
        say()
    cpu = cpu_description()
    cells = []  # every cell, every process: OUT/cells.json, written after each cell
    cells_path = os.path.join(args.out, "cells.json")
    done = {}
    if args.resume and os.path.exists(cells_path):
        with open(cells_path) as f:
            kept = json.load(f)
        for c in kept:
            if c.get("cpu") != cpu or c.get("device", "cpu") != args.device:
                sys.exit("compare.py: %s holds cells measured on another machine (%s): start a fresh --out"
                         % (cells_path, c.get("cpu")))
            done[c["workload"], c["dtype"], c["beam"], c["batch"], c["threads"]] = c
        say("Resumed: %d cells kept from %s." % (len(done), cells_path))
        say()

    for w in workloads:
        say("## %s" % w.name)
        say()
        # The gate: both engines must compute the same model.
        checks = {}
        for engine in ("libmt", "ct2"):
            for dtype in dtypes:
                if engine == "ct2" and dtype == "int8-dynamic":
                    continue  # CTranslate2 has one int8
                for beam in (1, 4):
                    path = os.path.join(args.out, w.name, "%s-%s-beam%d.ids" % (engine, dtype, beam))
                    run_cell(tools, w, engine, dtype, 32, beam, 1, 0, output=path, shortlist=False)
                    checks[engine, dtype, beam] = path
        same, total = agreement(checks["libmt", "float32", 1], checks["ct2", "float32", 1])
        say("Same model check: fp32 greedy translations identical on %d of %d sentences (%.1f%%; required: 99%%)."
            % (same, total, 100.0 * same / total))
        if same < 0.99 * total:
            say("**The engines do not compute the same model: no timing is reported.**")
            break
        same4, _ = agreement(checks["libmt", "float32", 4], checks["ct2", "float32", 4])
        say("fp32 beam 4: identical on %d of %d." % (same4, total))
        if args.shortlist > 0:
            paths = []
            for engine in ("libmt", "ct2"):
                paths.append(os.path.join(args.out, w.name, "%s-float32-beam1-shortlist.ids" % engine))
                run_cell(tools, w, engine, "float32", 1, 1, 1, 0, output=paths[-1], shortlist=True)
            same_sl, total_sl = agreement(*paths)
            say("With the shortlist, fp32 greedy batch 1: identical on %d of %d." % (same_sl, total_sl))
        for dtype in [d for d in dtypes if d.startswith("int8")]:
            own_l, _ = agreement(checks["libmt", dtype, 1], checks["libmt", "float32", 1])
            say("libmt int8 (%s activation scales) = its fp32 on %d of %d greedy translations." % (
                "dynamic per-row" if dtype == "int8-dynamic" else "static calibrated", own_l, total))
        if "int8" in dtypes:
            own_c, _ = agreement(checks["ct2", "int8", 1], checks["ct2", "float32", 1])
            say("CTranslate2 int8 (dynamic per-row activation scales) = its fp32 on %d of %d." % (own_c, total))
        if "float16" in dtypes:
            same16, _ = agreement(checks["libmt", "float16", 1], checks["ct2", "float16", 1])
            say("float16: libmt = CTranslate2 on %d of %d." % (same16, total))
        if w.reference:
            say()
            say("Greedy BLEU against the reference (mt_bleu, sacreBLEU's defaults):")
            for (engine, dtype, beam), path in sorted(checks.items()):
                if beam == 1:
                    say("- %s %s: %s" % (engine, dtype, bleu(tools, w.models["float32"], path, w.reference)))
        say()

        say("| dtype | search | batch | threads | libmt ms/sent | CT2 ms/sent (its best configuration) | "
            "ratio | libmt tok/s | CT2 tok/s | other processes' CPU |")
        say("|---|---|---|---|---|---|---|---|---|---|")
        ct2_done = {}  # (CT2 dtype, beam, batch, threads) -> (summary, variant, processes): int8 rows share them
        for dtype in dtypes:
            for beam in (1, 4):
                for batch in ((1, 32, 128) if gpu else (1, 32)):
                    for threads in [int(t) for t in args.threads.split(",")]:
                        ct2_key = (model_paths(w, dtype)[2], beam, batch, threads)
                        kept = done.get((w.name, dtype, beam, batch, threads))
                        if kept:
                            cells.append(kept)
                            if ct2_key not in ct2_done:
                                ct2_done[ct2_key] = (kept["ct2_best"]["summary"], kept["ct2_best"]["variant"], None)
                            say(table_row(kept))
                            continue
                        splits = [1] if threads == 1 else [1, threads]  # intra-op, and data-parallel
                        variants = [{"backend": b, "isa": i, "inter": inter} for b in backends for i in isas
                                    for inter in splits]
                        own_variants = [{"inter": inter} for inter in splits]
                        load_before = load_average()
                        busy_before, ours_before = cpu_seconds()
                        screens = {}
                        if args.screen:
                            # Each configuration once (1 process, 1 timed pass); the fastest of
                            # each engine goes on to the full protocol.
                            def screen(engine, options):
                                runs = [(summary([run_cell(tools, w, engine, dtype, batch, beam, threads, 1, v)]), v)
                                        for v in options]
                                return [min(runs, key=lambda x: x[0]["ms"])[1]], [
                                    {"variant": v, "summary": x} for x, v in runs]
                            if len(own_variants) > 1:
                                own_variants, screens["libmt"] = screen("libmt", own_variants)
                            if ct2_key not in ct2_done and len(variants) > 1:
                                variants, screens["ct2"] = screen("ct2", variants)
                        mine = {i: [] for i in range(len(own_variants))}
                        theirs = {i: [] for i in range(len(variants))}
                        for _ in range(args.processes):
                            for v_index, variant in enumerate(own_variants):
                                mine[v_index].append(run_cell(tools, w, "libmt", dtype, batch, beam, threads,
                                                              args.repeat, variant))
                            if ct2_key not in ct2_done:
                                for v_index, variant in enumerate(variants):
                                    theirs[v_index].append(run_cell(tools, w, "ct2", dtype, batch, beam, threads,
                                                                    args.repeat, variant))
                        if ct2_key not in ct2_done:
                            scored = [(summary(theirs[i]), variants[i], theirs[i]) for i in range(len(variants))]
                            ct2_done[ct2_key] = min(scored, key=lambda x: x[0]["ms"])
                            all_variants = [{"variant": v, "summary": s, "processes": p} for s, v, p in scored]
                        else:
                            all_variants = None  # recorded with the first row that ran them
                        busy_after, ours_after = cpu_seconds()
                        others = max(0.0, (busy_after - busy_before) - (ours_after - ours_before))
                        best, best_variant, _ = ct2_done[ct2_key]
                        own = [(summary(mine[i]), own_variants[i], mine[i]) for i in range(len(own_variants))]
                        ours, own_best, _ = min(own, key=lambda x: x[0]["ms"])
                        cells.append({"workload": w.name, "dtype": dtype, "beam": beam, "batch": batch,
                                      "threads": threads, "load_average_before": load_before,
                                      "other_cpu_seconds": others, "cpu": cpu,
                                      "device": args.device,
                                      "libmt": {"summary": ours, "variant": own_best,
                                                "processes": [p for _, v, ps in own if v == own_best for p in ps]},
                                      "libmt_variants": [{"variant": v, "summary": x, "processes": ps}
                                                         for x, v, ps in own],
                                      "ct2_best": {"variant": best_variant, "summary": best},
                                      "ct2_variants": all_variants, "screening": screens})
                        say(table_row(cells[-1]))
                        with open(cells_path, "w") as f:
                            json.dump(cells, f, indent=1)
        say()
        backend_lines = {}
        for c in cells:
            for v in (c["ct2_variants"] or []) if c["workload"] == w.name else []:
                for proc in v["processes"]:
                    backend_lines.setdefault(v["variant"].get("backend", "default"), set()).update(
                        l.rsplit("] ", 1)[-1].strip(" -") for l in proc.get("verbose", []) if "backend" in l.lower())
        for backend, found in sorted(backend_lines.items()):
            say("CTranslate2 `%s` backend, as CT2_VERBOSE reports it: %s." % (backend, "; ".join(sorted(found))))
        say()
        say("Load: load + the first translation (one sentence), the median over this workload's processes; libmt "
            "loads token ids only (no vocabulary, as CTranslate2). libmt with its tokenizer: `libmt_run "
            "--load-only --vocabulary` (load + session, no translation) in %d fresh processes. CTranslate2's "
            "backend lines (CT2_VERBOSE) are in cells.json." % args.processes)
        say()
        say("| dtype | libmt load + first ms | CT2 load + first ms | ratio | libmt load with tokenizer ms | "
            "peak RSS MiB libmt / CT2 (above start; batch 32, beam 4, 1 thread) | file MB libmt / CT2 |")
        say("|---|---|---|---|---|---|---|")
        for dtype in dtypes:
            model, ct2_model, _ = model_paths(w, dtype)
            rows = [c for c in cells if c["workload"] == w.name and c["dtype"] == dtype]
            load = statistics.median(p["load_first_ms"] for c in rows for p in c["libmt"]["processes"])
            ct2_dtype = model_paths(w, dtype)[2]
            ct2_load = statistics.median(p["load_first_ms"] for c in cells if c["workload"] == w.name
                                         and c["ct2_variants"] and model_paths(w, c["dtype"])[2] == ct2_dtype
                                         for v in c["ct2_variants"] for p in v["processes"])
            text_load = statistics.median(json.loads(run([tools["run"], "--model", model, "--load-only",
                                                          "--vocabulary"]))["load_ms"]
                                          for _ in range(args.processes))
            memory = "-"
            at = [c for c in rows if c["beam"] == 4 and c["batch"] == 32 and c["threads"] == 1]
            ct2_at = [v for c in cells if c["workload"] == w.name and c["ct2_variants"] and c["beam"] == 4
                      and c["batch"] == 32 and c["threads"] == 1 and model_paths(w, c["dtype"])[2] == ct2_dtype
                      for v in c["ct2_variants"] if v["variant"] == c["ct2_best"]["variant"]]
            if at and ct2_at:
                mine_p, theirs_p = at[0]["libmt"]["processes"][0], ct2_at[0]["processes"][0]
                memory = "%.0f (%.0f) / %.0f (%.0f)" % (
                    mine_p["peak_rss_kb"] / 1024, (mine_p["peak_rss_kb"] - mine_p["rss_before_load_kb"]) / 1024,
                    theirs_p["peak_rss_kb"] / 1024, (theirs_p["peak_rss_kb"] - theirs_p["rss_before_load_kb"]) / 1024)
            say("| %s | %.2f | %.2f | %.1fx | %.2f | %s | %.1f / %.1f |" % (
                dtype, load, ct2_load, ct2_load / load, text_load, memory, os.path.getsize(model) / 1e6,
                os.path.getsize(os.path.join(ct2_model, "model.bin")) / 1e6))
        say()

    say("Load average at the end: %.2f." % load_average())
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(cells_path, "w") as f:
        json.dump(cells, f, indent=1)
    print("written to %s" % os.path.join(args.out, "report.md"))


if __name__ == "__main__":
    main()
