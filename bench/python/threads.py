#!/usr/bin/env python3
"""Python threads, each with its own libmt.Translator on one shared Model:
the GIL is released while translating, so N threads on N cores should
translate about N times as fast as one. Times one thread translating the
whole set, then N threads each translating a share, side by side in one
run (median of --repeats), and prints the speed-up.

    python3 bench/python/threads.py [--model models/en-de-tiny.mtm]
        [--input ../shared/data/multi30k/test_2016_flickr.en] [--threads N] [--beam 1] [--batch 16]

Needs the libmt package importable (pip install . or PYTHONPATH=build/python).
"""

import argparse
import os
import statistics
import sys
import threading
import time

import libmt


def timed(translators, shares, options):
    outputs = [None] * len(shares)
    start = threading.Barrier(len(shares) + 1)

    def work(i):
        start.wait()
        outputs[i] = translators[i].translate(shares[i], **options)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(shares))]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, outputs


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=os.path.join(root, "models", "en-de-tiny.mtm"))
    parser.add_argument("--input", default=os.path.join(root, "..", "shared", "data", "multi30k", "test_2016_flickr.en"))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--beam", type=int, default=1)
    parser.add_argument("--batch", type=int, default=16, help="each translator's max_batch_size")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not os.path.exists(args.input):
        sys.exit("threads.py: no %s (the Multi30k test set lives in ../shared/data)" % args.input)
    with open(args.input, encoding="utf-8") as f:
        sentences = f.read().splitlines()
    model = libmt.Model(args.model)
    options = {"beam_size": args.beam}
    n = args.threads
    shares = [sentences[i::n] for i in range(n)]  # interleaved: the same mix of lengths in each share

    # Translators are made once and warmed up (a first pass touches the
    # session memory's pages), as a server would keep them.
    single = [libmt.Translator(model, max_batch_size=args.batch)]
    several = [libmt.Translator(model, max_batch_size=args.batch) for _ in shares]
    timed(single, [sentences], options)
    timed(several, shares, options)
    one, many = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both alike
        seconds, (reference,) = timed(single, [sentences], options)
        one.append(seconds)
        seconds, outputs = timed(several, shares, options)
        many.append(seconds)
        assert all(outputs[i] == reference[i::n] for i in range(n)), "threads changed the translations"

    t1, tn = statistics.median(one), statistics.median(many)
    print("libmt %s, %s, %d sentences, beam %d, batches of %d, %d CPUs" % (
        libmt.__version__, os.path.basename(args.model), len(sentences), args.beam, args.batch, os.cpu_count()))
    print("1 thread:   %.3f s (%.2f ms/sentence; runs %s)" % (t1, 1e3 * t1 / len(sentences),
                                                            ", ".join("%.3f" % s for s in one)))
    print("%d threads:  %.3f s (%.2f ms/sentence; runs %s)" % (n, tn, 1e3 * tn / len(sentences),
                                                             ", ".join("%.3f" % s for s in many)))
    print("speed-up: %.2fx with %d threads (translations identical)" % (t1 / tn, n))


if __name__ == "__main__":
    main()
