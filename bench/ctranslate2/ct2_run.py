#!/usr/bin/env python3
"""One cell of the side-by-side comparison, CTranslate2's half.

Takes libmt_run's arguments (--model is a CTranslate2 model directory, plus
--compute-type and CTranslate2's two thread counts) and prints the same JSON
line. Source ids become the model's token strings with EOS appended, which is
what libmt feeds its encoder. Batches are B consecutive lines of the input,
exactly libmt_run's: each goes to translate_batch as it is (max_batch_size 0,
so CTranslate2 does not re-sort or re-cut it), all submitted asynchronously so
that inter_threads > 1 translates several at once, as translate_batch's own
sub-batches would. The input is translated once to warm up, then R times.
CT2_FORCE_CPU_ISA and CT2_USE_MKL in the environment pick the ISA and the GEMM
backend, as CTranslate2 documents. --device cuda runs it on the GPU (a
CTranslate2 wheel built with CUDA, as PyPI's).
"""
import argparse
import json
import os
import statistics
import time


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output")
    parser.add_argument("--compute-type", default="float32")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--beam", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="threads in all (intra x inter)")
    parser.add_argument("--inter-threads", type=int, default=1, help="batches translated at once")
    parser.add_argument("--min-length", type=int, default=0)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--vmap", action="store_true", help="translate with the model directory's vmap.txt")
    args = parser.parse_args()
    if args.threads % args.inter_threads:
        parser.error("--threads must be a multiple of --inter-threads")

    import ctranslate2

    with open(os.path.join(args.model, "shared_vocabulary.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    index = {t: i for i, t in enumerate(tokens)}
    with open(args.input) as f:
        sources = [[tokens[int(i)] for i in line.split()] + ["</s>"] for line in f]
    batches = [sources[i:i + args.batch] for i in range(0, len(sources), args.batch)]
    options = dict(max_batch_size=0, beam_size=args.beam, num_hypotheses=1, min_decoding_length=args.min_length,
                   max_decoding_length=args.max_length, return_scores=False, use_vmap=args.vmap)

    rss_before = status_kb("VmRSS:")
    start = time.perf_counter()
    translator = ctranslate2.Translator(args.model, device=args.device, compute_type=args.compute_type,
                                        inter_threads=args.inter_threads,
                                        intra_threads=args.threads // args.inter_threads)
    load_ms = (time.perf_counter() - start) * 1e3
    translator.translate_batch(sources[:1], **options)
    load_first_ms = (time.perf_counter() - start) * 1e3

    def translate_all():
        pending = [translator.translate_batch(b, asynchronous=True, **options) for b in batches]
        return [r.result() for part in pending for r in part]

    best = None
    pass_seconds = []
    target_tokens = 0
    for pass_index in range(args.repeat + 1):
        results = None  # the previous pass's results are freed outside the timer
        start = time.perf_counter()
        results = translate_all()
        elapsed = time.perf_counter() - start
        target_tokens = sum(len(r.hypotheses[0]) for r in results)
        if pass_index == 0:
            best = [[index[t] for t in r.hypotheses[0]] for r in results]
        else:
            pass_seconds.append(elapsed)

    if args.output:
        with open(args.output, "w") as f:
            for ids in best:
                f.write(" ".join(map(str, ids)) + "\n")
    print(json.dumps({"load_ms": round(load_ms, 3), "load_first_ms": round(load_first_ms, 3),
                      "pass_seconds": [round(s, 6) for s in pass_seconds],
                      "seconds": round(statistics.median(pass_seconds), 6) if pass_seconds else 0.0,
                      "target_tokens": target_tokens, "sentences": len(sources),
                      "rss_before_load_kb": rss_before, "peak_rss_kb": status_kb("VmHWM:"),
                      "inter_threads": args.inter_threads, "intra_threads": args.threads // args.inter_threads,
                      "backend": "mkl" if os.environ.get("CT2_USE_MKL") == "1" else "default",
                      "isa": "cuda" if args.device == "cuda" else os.environ.get("CT2_FORCE_CPU_ISA", "default")}))


if __name__ == "__main__":
    main()
