#!/usr/bin/env python3
"""One cell of the side-by-side comparison, CTranslate2's half.

Takes libmt_run's arguments (--model is a CTranslate2 model directory, plus
--compute-type) and prints the same JSON line. Source ids become the model's
token strings with EOS appended, which is what libmt feeds its encoder. The
input is sorted by length (stable) and handed over in one translate_batch
call with max_batch_size=B, so batching happens inside CTranslate2's C++ with
no Python loop per sentence; it is translated once to warm up, then R times,
and the fastest pass counts. CT2_FORCE_CPU_ISA in the environment picks the
ISA, as CTranslate2 documents. --device cuda runs it on the GPU (a
CTranslate2 wheel built with CUDA, as PyPI's).
"""
import argparse
import json
import os
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
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-length", type=int, default=0)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()

    import ctranslate2

    with open(os.path.join(args.model, "shared_vocabulary.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    index = {t: i for i, t in enumerate(tokens)}
    with open(args.input) as f:
        sources = [[tokens[int(i)] for i in line.split()] + ["</s>"] for line in f]
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    batch = [sources[i] for i in order]

    rss_before = status_kb("VmRSS:")
    start = time.perf_counter()
    translator = ctranslate2.Translator(args.model, device=args.device, compute_type=args.compute_type,
                                        inter_threads=1, intra_threads=args.threads)
    load_ms = (time.perf_counter() - start) * 1e3

    options = dict(max_batch_size=args.batch, batch_type="examples", beam_size=args.beam,
                   num_hypotheses=1, min_decoding_length=args.min_length,
                   max_decoding_length=args.max_length, return_scores=False)
    best = [None] * len(sources)
    fastest = float("inf")
    target_tokens = 0
    for pass_index in range(args.repeat + 1):
        start = time.perf_counter()
        results = translator.translate_batch(batch, **options)
        elapsed = time.perf_counter() - start
        target_tokens = sum(len(r.hypotheses[0]) for r in results)
        if pass_index == 0:
            for i, r in zip(order, results):
                best[i] = [index[t] for t in r.hypotheses[0]]
        else:
            fastest = min(fastest, elapsed)

    if args.output:
        with open(args.output, "w") as f:
            for ids in best:
                f.write(" ".join(map(str, ids)) + "\n")
    print(json.dumps({"load_ms": round(load_ms, 3), "seconds": round(fastest, 6) if args.repeat else 0.0,
                      "target_tokens": target_tokens, "sentences": len(sources),
                      "rss_before_load_kb": rss_before, "peak_rss_kb": status_kb("VmHWM:"),
                      "isa": "cuda" if args.device == "cuda" else os.environ.get("CT2_FORCE_CPU_ISA", "default")}))


if __name__ == "__main__":
    main()
